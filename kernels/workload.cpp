#include "kernels/workload.h"

#include <cctype>

#include "base/error.h"

namespace kiln {

namespace {
std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}
}  // namespace

Workload Workload::parse(const std::string& text) {
  Workload w;
  w.text = text;
  std::string t = trim(text);
  user_check(!t.empty()) << "empty workload string (expected e.g. 'matmul:M=1024,N=1024,K=1024')";
  size_t colon = t.find(':');
  user_check(colon != std::string::npos) << "workload '" << text
                                         << "': expected OP:NAME=VALUE,... (e.g. 'matmul:M=1024,N=1024,K=1024')";
  w.op = trim(t.substr(0, colon));
  user_check(!w.op.empty()) << "workload '" << text << "': missing op name before ':'";
  std::string rest = t.substr(colon + 1);
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t comma = rest.find(',', pos);
    std::string item = trim(rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    user_check(!item.empty()) << "workload '" << text << "': empty parameter (check for a stray ',')";
    size_t eq = item.find('=');
    user_check(eq != std::string::npos && eq > 0 && eq + 1 < item.size())
        << "workload '" << text << "': expected NAME=VALUE, got '" << item << "'";
    std::string name = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
    user_check(!w.has(name)) << "workload '" << text << "': parameter '" << name << "' is given twice";
    w.params.emplace_back(name, value);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return w;
}

bool Workload::has(const std::string& name) const { return find(name) != nullptr; }

const std::string* Workload::find(const std::string& name) const {
  for (auto& p : params)
    if (p.first == name) return &p.second;
  return nullptr;
}

}  // namespace kiln
