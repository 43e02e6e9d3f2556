// Target string parsing, host detection and feature queries (see target.h).
#include "codegen/target.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/Triple.h>
#include <llvm/Support/Host.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>
#include <vector>

#include "base/error.h"
#include "runtime/cuda_driver.h"
#include "codegen/llvm_support.h"
#include "schedule/gpu_limits.h"
#include "base/error.h"
#include "schedule/gpu_limits.h"

namespace kiln {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::string host_triple() { return llvm::Triple::normalize(llvm::sys::getProcessTriple()); }

// Both "+f" and "-f" hold only for a feature the subtarget does not know
// (LLVM ignores it, with a warning on stderr).
bool is_known_feature(const llvm::MCSubtargetInfo& sti, const std::string& name) {
  return !(sti.checkFeatures("+" + name) && sti.checkFeatures("-" + name));
}

bool is_x86(const std::string& triple) {
  llvm::Triple t(triple);
  return t.getArch() == llvm::Triple::x86_64 || t.getArch() == llvm::Triple::x86;
}

void validate_llvm(const Target& t, const std::string& text) {
  std::string error;
  user_check(llvm_support::lookup_target(t.triple, &error) != nullptr)
      << "target '" << text << "': unknown target triple '" << t.triple << "' (no LLVM backend for it in this kiln: " << error
      << ")";
  auto sti = llvm_support::create_subtarget_info(t.triple, "", "");
  user_check(t.cpu.empty() || t.cpu == "generic" || sti->isCPUStringValid(t.cpu))
      << "target '" << text << "': unknown CPU '" << t.cpu << "' for triple '" << t.triple << "'";
  if (t.attrs.empty()) return;
  for (const std::string& f : split(t.attrs, ',')) {
    user_check(f.size() >= 2 && (f[0] == '+' || f[0] == '-'))
        << "target '" << text << "': -mattr entries look like +feature or -feature, got '" << f << "'";
    user_check(is_known_feature(*sti, f.substr(1)))
        << "target '" << text << "': unknown feature '" << f.substr(1) << "' for triple '" << t.triple << "'";
  }
}

// The host's features relative to what its CPU name implies.
std::string host_attrs(const std::string& triple, const std::string& cpu) {
  llvm::StringMap<bool> features;
  if (!llvm::sys::getHostCPUFeatures(features)) return "";
  auto sti = llvm_support::create_subtarget_info(triple, cpu, "");
  std::map<std::string, bool> sorted;  // deterministic order
  for (const auto& kv : features) sorted[kv.getKey().str()] = kv.getValue();
  std::vector<std::string> plus, minus;
  for (const auto& kv : sorted) {
    if (!is_known_feature(*sti, kv.first)) continue;
    const bool implied = sti->checkFeatures("+" + kv.first);
    if (kv.second && !implied) plus.push_back("+" + kv.first);
    if (!kv.second && implied) minus.push_back("-" + kv.first);
  }
  std::string out;
  for (const auto* list : {&plus, &minus}) {
    for (const auto& f : *list) out += (out.empty() ? "" : ",") + f;
  }
  return out;
}

}  // namespace

Target Target::host() {
  // The host does not change while the process runs; detect it once.
  static const Target detected = [] {
    llvm_support::initialize_llvm();
    Target t;
    t.kind = "llvm";
    t.triple = host_triple();
    t.cpu = llvm::sys::getHostCPUName().str();
    if (t.cpu.empty()) t.cpu = "generic";
    t.attrs = host_attrs(t.triple, t.cpu);
    return t;
  }();
  return detected;
}

Target Target::parse(const std::string& s) {
  std::istringstream is(s);
  std::vector<std::string> tokens;
  for (std::string tok; is >> tok;) tokens.push_back(tok);
  user_check(!tokens.empty()) << "empty target string (expected e.g. 'llvm' or 'cuda -arch=sm_90')";
  const std::string& kind = tokens[0];
  user_check(kind == "llvm" || kind == "cuda")
      << "target '" << s << "': unknown target kind '" << kind << "' (expected 'llvm' or 'cuda')";

  std::map<std::string, std::string> opts;
  for (size_t i = 1; i < tokens.size(); ++i) {
    const std::string& tok = tokens[i];
    const size_t eq = tok.find('=');
    user_check(tok.size() > 1 && tok[0] == '-' && eq != std::string::npos && eq > 1 && eq + 1 < tok.size())
        << "target '" << s << "': malformed option '" << tok << "' (expected -key=value)";
    const std::string key = tok.substr(1, eq - 1), value = tok.substr(eq + 1);
    const bool known = kind == "llvm" ? (key == "mtriple" || key == "mcpu" || key == "mattr") : key == "arch";
    user_check(known) << "target '" << s << "': unknown option '-" << key << "' for a " << kind << " target"
                      << (kind == "llvm" ? " (known: -mtriple, -mcpu, -mattr)" : " (known: -arch)");
    user_check(!opts.count(key)) << "target '" << s << "': option '-" << key << "' given twice";
    opts[key] = value;
  }

  Target t;
  t.kind = kind;
  if (kind == "cuda") {
    // Without -arch: the architecture of the first GPU when the driver
    // reports one kiln knows, else sm_90 (the H100s kiln is tuned on).
    std::string arch = opts.count("arch") ? opts["arch"] : "sm_90";
    if (!opts.count("arch") && rt::cuda::available()) {
      const std::string device_arch = rt::cuda::devices().at(0).arch();
      try {
        gpu_limits_for_arch(device_arch);
        arch = device_arch;
      } catch (const UserError&) {
      }
    }
    const bool ok = arch.size() > 3 && arch.compare(0, 3, "sm_") == 0 &&
                    std::all_of(arch.begin() + 3, arch.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
    user_check(ok) << "target '" << s << "': -arch must look like sm_90, got '" << arch << "'";
    try {
      gpu_limits_for_arch(arch);
    } catch (const UserError& e) {
      user_error() << "target '" << s << "': " << e.what();
    }
    t.arch = arch;
    return t;
  }

  if (!opts.count("mtriple")) {
    // The host, refined by whatever -mcpu/-mattr say.
    Target h = host();
    t.triple = h.triple;
    t.cpu = opts.count("mcpu") ? opts["mcpu"] : h.cpu;
    t.attrs = opts.count("mattr") ? opts["mattr"] : (opts.count("mcpu") ? "" : h.attrs);
  } else {
    t.triple = llvm::Triple::normalize(opts["mtriple"]);
    t.cpu = opts.count("mcpu") ? opts["mcpu"] : "generic";
    t.attrs = opts.count("mattr") ? opts["mattr"] : "";
  }
  validate_llvm(t, s);
  return t;
}

std::string Target::str() const {
  if (kind == "cuda") return "cuda -arch=" + arch;
  std::string out = kind;
  if (!triple.empty()) out += " -mtriple=" + triple;
  if (!cpu.empty()) out += " -mcpu=" + cpu;
  if (!attrs.empty()) out += " -mattr=" + attrs;
  return out;
}

int Target::vector_bits() const {
  if (kind != "llvm" || !is_x86(triple)) return 128;
  // Ask the subtarget, so a CPU name that implies AVX-512 counts too.
  auto sti = llvm_support::create_subtarget_info(triple, cpu == "generic" ? "" : cpu, attrs);
  if (sti->checkFeatures("+avx512f")) return 512;
  if (sti->checkFeatures("+avx2")) return 256;
  return 128;
}

bool Target::has_feature(const std::string& feature) const {
  if (kind != "llvm" || !is_x86(triple)) return false;  // kiln knows x86 features only
  auto sti = llvm_support::create_subtarget_info(triple, cpu == "generic" ? "" : cpu, attrs);
  return sti->checkFeatures("+" + feature);
}

bool Target::is_host() const {
  if (kind != "llvm") return false;
  llvm::Triple mine(triple), host(host_triple());
  return mine.getArch() == host.getArch() && mine.getOS() == host.getOS();
}

}  // namespace kiln
