// Text helpers of the library generators (library_c_source.cpp,
// cuda_library_source.cpp, cuda_library_families.cpp,
// cuda_fallback_kernels.cpp), which print C and CUDA C as strings.
#pragma once

#include <cctype>
#include <string>
#include <vector>

namespace kiln {

inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
  return s;
}

inline std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

inline std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace kiln
