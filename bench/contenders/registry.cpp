// Which baselines can run here, and their contenders: the plug-ins are
// opened on first use (see contender.h).
#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <mutex>

#include "base/error.h"
#include "bench/contenders/baselines.h"
#include "bench/contenders/halide_client.h"
#include "kernels/conv2d_nchwc.h"
#include "kernels/depthwise_conv2d_nchwc.h"

namespace kiln::baselines {
namespace {

namespace fs = std::filesystem;

struct PluginInfo {
  const char* name;           // as --baselines takes it
  const char* library;        // what it wraps, for messages
  const char* file;           // the plug-in's file name
  const char* build_package;  // Debian package needed to build the plug-in
  const char* run_package;    // Debian package needed to load it
};

const PluginInfo kPlugins[] = {
    {"onednn", "oneDNN", "libkiln-contender-onednn.so", "libdnnl-dev", "libdnnl2"},
    {"openblas", "OpenBLAS", "libkiln-contender-openblas.so", "libopenblas-dev", "libopenblas0"},
};

const PluginInfo* plugin_info(const std::string& name) {
  for (const PluginInfo& p : kPlugins)
    if (name == p.name) return &p;
  return nullptr;
}

// Where a plug-in is looked for: $KILN_PLUGIN_DIR alone when it is set;
// else the kiln executable's folder (the build tree) and ../lib/kiln beside
// it (an install), then the folder this build put them in.
std::vector<fs::path> plugin_dirs() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("KILN_PLUGIN_DIR"); env && *env) return {fs::path(env)};
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(self.parent_path());
    dirs.push_back(self.parent_path() / ".." / "lib" / "kiln");
  }
#ifdef KILN_PLUGIN_BUILD_DIR
  dirs.emplace_back(KILN_PLUGIN_BUILD_DIR);
#endif
  return dirs;
}

// A plug-in opened once per process: its entry's object, or why it cannot be
// used (naming the package to install).
struct Loaded {
  const ContenderPlugin* plugin = nullptr;
  std::string error;
};

const Loaded& load(const PluginInfo& info) {
  static std::mutex mu;
  static std::map<std::string, Loaded> loaded;
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded.find(info.name);
  if (it != loaded.end()) return it->second;
  Loaded& l = loaded[info.name];
  fs::path path;
  for (const fs::path& dir : plugin_dirs()) {
    std::error_code ec;
    if (fs::exists(dir / info.file, ec)) {
      path = dir / info.file;
      break;
    }
  }
  if (path.empty()) {
    std::string searched;
    for (const fs::path& dir : plugin_dirs()) searched += (searched.empty() ? "" : ", ") + dir.string();
    l.error = std::string("this kiln has no ") + info.library + " contender (no " + info.file + " in " + searched +
              "; kiln builds it where Debian's " + info.build_package + " is installed)";
    return l;
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    l.error = std::string("cannot load the ") + info.library + " contender " + path.string() + " (" + dlerror() +
              "); install Debian's " + info.run_package;
    return l;
  }
  auto entry = reinterpret_cast<KilnContenderEntry>(dlsym(handle, KILN_CONTENDER_ENTRY_NAME));
  if (!entry) {
    l.error = path.string() + " is not a kiln contender plug-in of this version (no " KILN_CONTENDER_ENTRY_NAME ")";
    return l;
  }
  l.plugin = entry();
  l.error = l.plugin->unavailable_reason();
  if (!l.error.empty()) l.plugin = nullptr;
  return l;  // the handle stays open for the life of the process
}

}  // namespace

std::vector<std::string> baseline_names() { return {"onednn", "openblas", "halide"}; }

std::string baseline_unavailable_reason(const std::string& name) {
  if (name == "halide")
    return halide_helper_path().empty() ? "the kiln-halide-baseline helper was not found (it is built where Debian's "
                                          "libhalide14-0-dev is installed; or set KILN_HALIDE_BASELINE to its path)"
                                        : "";
  const PluginInfo* info = plugin_info(name);
  user_check(info != nullptr) << "unknown baseline '" << name << "' (baselines: onednn, openblas, halide)";
  return load(*info).error;
}

bool baseline_available(const std::string& name) { return baseline_unavailable_reason(name).empty(); }

std::string baseline_version(const std::string& name) {
  if (name == "halide") return "Halide (helper " + halide_helper_path() + ")";
  const PluginInfo* info = plugin_info(name);
  if (!info || !load(*info).plugin) return name + " (not available)";
  return load(*info).plugin->version();
}

bool baseline_supports(const std::string& name, const OpInstance& op) {
  static const std::vector<std::string> all = {
      "matmul",           "batch_matmul", "dense",      "conv2d",  "conv2d_nhwc", "conv2d_nchwc",
      "depthwise_conv2d", "depthwise_conv2d_nchwc", "max_pool2d",   "avg_pool2d", "max_pool2d_nchwc",
      "avg_pool2d_nchwc", "global_avg_pool2d_nchwc", "dwsep_nchwc", "softmax", "layer_norm"};
  static const std::vector<std::string> gemm = {"matmul", "batch_matmul", "dense"};
  const auto& ops = name == "openblas" ? gemm : all;
  if (name == "halide" && op.op == "dwsep_nchwc") return false;  // no fused pipeline in the helper
  if (op.dtype != DType::f32()) return false;
  for (auto& o : ops)
    if (o == op.op) return true;
  return false;
}

ContenderOp contender_op(const OpInstance& op) {
  ContenderOp c;
  c.op = op.op;
  c.ints = op.ints;
  c.f32 = op.dtype == DType::f32();
  c.canonical = op.canonical;
  if (op.op == "conv2d_nchwc") {
    const Conv2dNchwcShape s = conv2d_nchwc_shape(op);
    c.blocked = {s.N, s.C, s.H, s.W, s.K, s.Cg, s.R, s.S, s.OH, s.OW, s.cb, s.kb};
  }
  if (op.op == "depthwise_conv2d_nchwc") {
    const DepthwiseNchwcShape s = depthwise_conv2d_nchwc_shape(op);
    c.blocked = {s.N, s.C, s.H, s.W, s.C, 1, s.R, s.S, s.OH, s.OW, s.cb, s.cb};
  }
  if (is_blocked_pool(op.op)) {
    auto& p = c.ints;
    if (op.op == "global_avg_pool2d_nchwc") p.insert({{"R", p.at("H")}, {"S", p.at("W")}, {"stride", 1}, {"pad", 0}});
    const int64_t OH = (p.at("H") + 2 * p.at("pad") - p.at("R")) / p.at("stride") + 1;
    const int64_t OW = (p.at("W") + 2 * p.at("pad") - p.at("S")) / p.at("stride") + 1;
    c.blocked = {p.at("N"), p.at("C"), p.at("H"), p.at("W"), p.at("C"), 1, p.at("R"), p.at("S"), OH, OW, p.at("cb"),
                 p.at("cb")};
  }
  return c;
}

std::unique_ptr<Contender> make_contender(const std::string& name, const OpInstance& op,
                                          const std::vector<rt::NDArray>& inputs, const rt::NDArray& out) {
  const PluginInfo* info = plugin_info(name);
  user_check(info != nullptr) << "'" << name << "' is not an in-process baseline (onednn, openblas)";
  const Loaded& l = load(*info);
  user_check(l.plugin != nullptr) << l.error;
  return l.plugin->make(contender_op(op), inputs, out);
}

}  // namespace kiln::baselines
