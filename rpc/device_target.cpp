// A device's target without the compiler (see device_target.h).
#include "rpc/device_target.h"

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "base/error.h"
#include "runtime/cuda_driver.h"

namespace kiln::rpc {
namespace {

// /proc/cpuinfo flag -> LLVM 14 x86 feature name, for the features that
// change the code kiln generates (vector widths and instructions). Only names
// LLVM knows are listed: the tuner's side rejects unknown ones.
const std::pair<const char*, const char*> kX86Features[] = {
    {"sse3", "sse3"}, {"pni", "sse3"}, {"ssse3", "ssse3"}, {"sse4_1", "sse4.1"}, {"sse4_2", "sse4.2"},
    {"popcnt", "popcnt"}, {"avx", "avx"}, {"avx2", "avx2"}, {"fma", "fma"}, {"f16c", "f16c"},
    {"bmi1", "bmi"}, {"bmi2", "bmi2"}, {"abm", "lzcnt"}, {"movbe", "movbe"}, {"aes", "aes"},
    {"pclmulqdq", "pclmul"}, {"avx512f", "avx512f"}, {"avx512cd", "avx512cd"}, {"avx512bw", "avx512bw"},
    {"avx512dq", "avx512dq"}, {"avx512vl", "avx512vl"}, {"avx512ifma", "avx512ifma"}, {"avx512vbmi", "avx512vbmi"},
    {"avx512_vbmi2", "avx512vbmi2"}, {"avx512_vnni", "avx512vnni"}, {"avx512_bf16", "avx512bf16"},
    {"avx512_bitalg", "avx512bitalg"}, {"avx512_vpopcntdq", "avx512vpopcntdq"}, {"avx512_fp16", "avx512fp16"},
    {"avx_vnni", "avxvnni"}, {"gfni", "gfni"}, {"vaes", "vaes"}, {"vpclmulqdq", "vpclmulqdq"},
    {"amx_tile", "amx-tile"}, {"amx_int8", "amx-int8"}, {"amx_bf16", "amx-bf16"},
};

std::set<std::string> cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0 || line.find(':') == std::string::npos) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> out;
    for (std::string w; words >> w;) out.insert(w);
    return out;
  }
  return {};
}

std::string arch_of(const std::string& triple) { return triple.substr(0, triple.find('-')); }

// "cuda" or "cuda -arch=sm_XX": the first GPU's architecture, which a given
// -arch must name.
std::string gpu_device_target(const std::string& requested) {
  std::string why;
  user_check(rt::cuda::available(&why)) << "target '" << requested << "': a cuda device server measures on a GPU, and "
                                        << why;
  const rt::cuda::DeviceInfo d = rt::cuda::devices().at(0);
  const std::string arch = d.arch();
  const size_t at = requested.find("-arch=");
  if (at != std::string::npos) {
    std::string asked = requested.substr(at + 6);
    asked = asked.substr(0, asked.find(' '));
    user_check(asked == arch || asked == arch + "a")
        << "target '" << requested << "': this machine's GPU is " << d.name << " (" << arch << ")";
    return "cuda -arch=" + asked;
  }
  return "cuda -arch=" + arch;
}

}  // namespace

std::string host_triple_name() {
#if defined(__x86_64__)
  const char* arch = "x86_64";
  const char* vendor = "pc";
#elif defined(__aarch64__)
  const char* arch = "aarch64";
  const char* vendor = "unknown";
#elif defined(__riscv) && __riscv_xlen == 64
  const char* arch = "riscv64";
  const char* vendor = "unknown";
#else
#error "kiln's device server knows no triple for this architecture"
#endif
  return std::string(arch) + "-" + vendor + "-linux-gnu";
}

std::string describe_host_target() {
  std::string out = "llvm -mtriple=" + host_triple_name() + " -mcpu=generic";
#if defined(__x86_64__)
  const std::set<std::string> flags = cpuinfo_flags();
  std::set<std::string> features;  // sorted: the same machine always gives the same string
  for (const auto& [flag, feature] : kX86Features)
    if (flags.count(flag)) features.insert(feature);
  std::string attrs;
  for (const std::string& f : features) attrs += (attrs.empty() ? "+" : ",+") + f;
  if (!attrs.empty()) out += " -mattr=" + attrs;
#endif
  return out;
}

std::string device_target(const std::string& requested) {
  if (requested.empty()) return describe_host_target();
  std::istringstream is(requested);
  std::vector<std::string> tokens;
  for (std::string t; is >> t;) tokens.push_back(t);
  if (!tokens.empty() && tokens[0] == "cuda") return gpu_device_target(requested);
  user_check(!tokens.empty() && tokens[0] == "llvm")
      << "target '" << requested << "': a device server's target is an llvm target (e.g. 'llvm -mcpu=znver4') "
      << "or a cuda one ('cuda', measured on this machine's first GPU)";
  bool has_triple = false;
  for (const std::string& t : tokens) {
    if (t.rfind("-mtriple=", 0) != 0) continue;
    has_triple = true;
    const std::string arch = arch_of(t.substr(9));
    user_check(arch == arch_of(host_triple_name()))
        << "a device server measures on this machine; target '" << requested << "' does not run here (" << arch
        << " code on an " << arch_of(host_triple_name()) << " machine)";
  }
  if (has_triple) return requested;
  std::string out = "llvm -mtriple=" + host_triple_name();
  for (size_t i = 1; i < tokens.size(); ++i) out += " " + tokens[i];
  return out;
}

}  // namespace kiln::rpc
