#include "bench/bench_suite.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"

namespace kiln {

namespace fs = std::filesystem;

std::string suites_dir() {
  if (const char* env = std::getenv("KILN_SUITES_DIR")) return env;
  return KILN_SUITES_DIR;
}

std::vector<std::string> suite_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(suites_dir(), ec))
    if (e.path().extension() == ".txt") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

Suite load_suite(const std::string& name_or_path) {
  Suite s;
  std::error_code ec;
  if (name_or_path.find('/') != std::string::npos || fs::is_regular_file(name_or_path, ec)) {
    s.path = name_or_path;
    s.name = fs::path(name_or_path).stem().string();
    user_check(fs::is_regular_file(s.path, ec)) << "suite file '" << s.path << "' does not exist";
  } else {
    s.name = name_or_path;
    s.path = (fs::path(suites_dir()) / (name_or_path + ".txt")).string();
    if (!fs::is_regular_file(s.path, ec)) {
      std::ostringstream known;
      for (auto& n : suite_names()) known << (known.tellp() > 0 ? ", " : "") << n;
      user_error() << "unknown suite '" << name_or_path << "' (suites: " << known.str()
                   << "; or give the path of a file with one workload per line)";
    }
  }
  std::ifstream f(s.path);
  user_check(f.good()) << "cannot read suite file '" << s.path << "'";
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    size_t hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    size_t b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos) continue;
    s.workloads.push_back({line.substr(b, e - b + 1), n});
  }
  user_check(!s.workloads.empty()) << "suite '" << s.path << "' has no workloads";
  return s;
}

}  // namespace kiln
