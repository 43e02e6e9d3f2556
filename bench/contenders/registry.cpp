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
  const char* name;        // as --baselines takes it
  const char* library;     // what it wraps, for messages
  const char* file;        // the plug-in's file name
  const char* build_hint;  // where kiln builds the plug-in
  const char* run_hint;    // what to install when it does not load
  bool gpu;                // a GpuContenderPlugin (kiln bench --target cuda)
};

const PluginInfo kPlugins[] = {
    {"onednn", "oneDNN", "libkiln-contender-onednn.so", "where Debian's libdnnl-dev is installed",
     "install Debian's libdnnl2", false},
    {"openblas", "OpenBLAS", "libkiln-contender-openblas.so", "where Debian's libopenblas-dev is installed",
     "install Debian's libopenblas0", false},
    {"cublas", "cuBLAS", "libkiln-contender-cublas.so",
     "where the CUDA toolkit (cuBLAS, cuBLASLt, the CUDA runtime) is installed",
     "install the CUDA toolkit's cuBLAS and CUDA runtime libraries", true},
    {"cudnn", "cuDNN", "libkiln-contender-cudnn.so", "where the CUDA toolkit and cuDNN 9 are installed",
     "install cuDNN 9 and the CUDA runtime", true},
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
  const GpuContenderPlugin* gpu_plugin = nullptr;
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
              "; kiln builds it " + info.build_hint + ")";
    return l;
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    l.error = std::string("cannot load the ") + info.library + " contender " + path.string() + " (" + dlerror() +
              "); " + info.run_hint;
    return l;
  }
  const char* entry_name = info.gpu ? KILN_GPU_CONTENDER_ENTRY_NAME : KILN_CONTENDER_ENTRY_NAME;
  void* entry = dlsym(handle, entry_name);
  if (!entry) {
    l.error = path.string() + " is not a kiln contender plug-in of this version (no " + entry_name + ")";
    return l;
  }
  // A GPU plug-in's answer initializes the CUDA runtime in GPU 0's primary
  // context (which kiln bench --target cuda has made current).
  if (info.gpu) {
    l.gpu_plugin = reinterpret_cast<KilnGpuContenderEntry>(entry)();
    l.error = l.gpu_plugin->unavailable_reason();
    if (!l.error.empty()) l.gpu_plugin = nullptr;
  } else {
    l.plugin = reinterpret_cast<KilnContenderEntry>(entry)();
    l.error = l.plugin->unavailable_reason();
    if (!l.error.empty()) l.plugin = nullptr;
  }
  return l;  // the handle stays open for the life of the process
}

}  // namespace

std::vector<std::string> baseline_names() { return {"onednn", "openblas", "halide"}; }
std::vector<std::string> gpu_baseline_names() { return {"cublas", "cudnn"}; }
std::vector<std::string> all_baseline_names() { return {"onednn", "openblas", "halide", "cublas", "cudnn"}; }

bool is_gpu_baseline(const std::string& name) {
  const PluginInfo* info = plugin_info(name);
  return info && info->gpu;
}

std::string baseline_unavailable_reason(const std::string& name) {
  if (name == "halide")
    return halide_helper_path().empty() ? "the kiln-halide-baseline helper was not found (it is built where Debian's "
                                          "libhalide14-0-dev is installed; or set KILN_HALIDE_BASELINE to its path)"
                                        : "";
  const PluginInfo* info = plugin_info(name);
  user_check(info != nullptr) << "unknown baseline '" << name
                               << "' (baselines: onednn, openblas, halide; with --target cuda: cublas, cudnn)";
  return load(*info).error;
}

bool baseline_available(const std::string& name) { return baseline_unavailable_reason(name).empty(); }

std::string baseline_version(const std::string& name) {
  if (name == "halide") return "Halide (helper " + halide_helper_path() + ")";
  const PluginInfo* info = plugin_info(name);
  if (!info || !load(*info).error.empty()) return name + " (not available)";
  return info->gpu ? load(*info).gpu_plugin->version() : load(*info).plugin->version();
}

bool baseline_supports(const std::string& name, const OpInstance& op) {
  if (const PluginInfo* info = plugin_info(name); info && info->gpu) {
    const Loaded& l = load(*info);
    return l.gpu_plugin && l.gpu_plugin->supports(contender_op(op));
  }
  static const std::vector<std::string> all = {
      "matmul",           "batch_matmul", "dense",      "conv2d",  "conv2d_nhwc", "conv2d_nchwc",
      "depthwise_conv2d", "depthwise_conv2d_nchwc", "max_pool2d",   "avg_pool2d", "max_pool2d_nchwc",
      "avg_pool2d_nchwc", "global_avg_pool2d_nchwc", "dwsep_nchwc", "softmax", "layer_norm"};
  static const std::vector<std::string> gemm = {"matmul", "batch_matmul", "dense"};
  const auto& ops = name == "openblas" ? gemm : all;
  if (name == "halide" && op.op == "dwsep_nchwc") return false;  // no fused pipeline in the helper
  // oneDNN also runs kiln's int8 GEMMs and bf16 GEMMs.
  if (name == "onednn" && (op.op == "qmatmul" || op.op == "qdense" || op.op == "qconv2d_nchwc" ||
                           op.op == "conv2d_nchwc_bf16"))
    return true;
  if (name == "onednn" && op.dtype == DType::bf16() && (op.op == "matmul" || op.op == "batch_matmul" || op.op == "dense"))
    return true;
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
  c.dtype = op.dtype.str();
  c.canonical = op.canonical;
  if (op.op == "conv2d_nchwc" || op.op == "qconv2d_nchwc" || op.op == "conv2d_nchwc_bf16") {
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
  user_check(info != nullptr && !info->gpu) << "'" << name << "' is not an in-process CPU baseline (onednn, openblas)";
  const Loaded& l = load(*info);
  user_check(l.plugin != nullptr) << l.error;
  return l.plugin->make(contender_op(op), inputs, out);
}

std::unique_ptr<GpuContender> make_gpu_contender(const std::string& name, const OpInstance& op,
                                                 const std::vector<DeviceTensor>& inputs, const DeviceTensor& out) {
  const PluginInfo* info = plugin_info(name);
  user_check(info != nullptr && info->gpu) << "'" << name << "' is not a GPU baseline (cublas, cudnn)";
  const Loaded& l = load(*info);
  user_check(l.gpu_plugin != nullptr) << l.error;
  return l.gpu_plugin->make(contender_op(op), inputs, out);
}

}  // namespace kiln::baselines
