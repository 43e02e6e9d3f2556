// Baseline contenders for `kiln bench`: other libraries' implementations of
// kiln's ops, set up on caller-owned arrays (the op's inputs, filled by the
// caller) so that every contender computes the same values on the same data.
// Set-up (layout reorders of constant operands, primitive creation,
// compilation) happens outside timing; run() is what is timed; finish()
// leaves the result in the op's own output layout in the output array.
//
// The libraries are not linked into kiln: each in-process contender (oneDNN,
// OpenBLAS; cuBLAS and cuDNN for GPUs, below) is a plug-in, a shared object next to
// the kiln executable that `kiln bench` opens with dlopen when it asks for
// that baseline (plugin.h); Halide's runs as a helper process
// (halide_client.h). So nobody pays for a baseline they do not use, and a
// missing one is a message naming the Debian package, not a failed start.
// This header is what the plug-ins see: runtime arrays and plain op
// parameters, nothing of the compiler.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/ndarray.h"

namespace kiln::baselines {

class Contender {
 public:
  virtual ~Contender() = default;
  virtual void run() = 0;
  virtual void finish() = 0;
  // The implementation the library chose (oneDNN's impl string, ...).
  virtual std::string impl() const = 0;
};

// The sizes of conv2d_nchwc (and of depthwise_conv2d_nchwc: K = C, Cg = 1,
// kb = cb), for the contenders that convert their blocked layouts.
struct BlockedConvShape {
  int64_t N, C, H, W, K, Cg, R, S, OH, OW, cb, kb;
};

// An op instance as the plug-ins see it.
struct ContenderOp {
  std::string op;                       // "matmul", "conv2d_nchwc", ...
  std::map<std::string, int64_t> ints;  // every integer parameter, resolved
  bool f32 = true;                      // whether the op computes in f32
  std::string dtype = "f32";            // the op's dtype by name ("f32", "f16", ...)
  std::string canonical;                // canonical workload string, for messages
  // conv2d_nchwc, depthwise_conv2d_nchwc and the blocked pools only. A
  // global pool's ints also hold the window of the plain pool it is (R = H,
  // S = W, stride 1, pad 0).
  BlockedConvShape blocked{};
};

// The pooling ops on the blocked layout, run by the contenders as the plain
// pools they are (max_pool2d_nchwc as max_pool2d, the average ones as
// avg_pool2d).
inline bool is_blocked_pool(const std::string& op) {
  return op == "max_pool2d_nchwc" || op == "avg_pool2d_nchwc" || op == "global_avg_pool2d_nchwc";
}

// An integer parameter of the op, or `fallback` when the op does not have it.
inline int64_t param_or(const ContenderOp& op, const std::string& name, int64_t fallback) {
  auto it = op.ints.find(name);
  return it == op.ints.end() ? fallback : it->second;
}

// What a plug-in library exports, through one extern "C" function named
// kKilnContenderEntry that returns a pointer to a static instance.
class ContenderPlugin {
 public:
  virtual ~ContenderPlugin() = default;
  // "" when the library it wraps can run here; else why not, naming the
  // Debian package to install.
  virtual std::string unavailable_reason() const = 0;
  // A short description of the library and its version, for reports.
  virtual std::string version() const = 0;
  // `inputs` are the op's inputs in the op's order, `out` its output array.
  // UserError when the library cannot run this instance.
  virtual std::unique_ptr<Contender> make(const ContenderOp& op, const std::vector<rt::NDArray>& inputs,
                                          const rt::NDArray& out) const = 0;
};

// ---- GPU contenders (cuBLAS, cuDNN)
//
// They work on device memory that kiln's driver runtime (runtime/cuda_driver.h)
// allocated in the primary context of GPU 0, which kiln has made current on
// the calling thread before it opens a GPU plug-in. The CUDA runtime API the
// libraries use binds to that same primary context, so the pointers are
// valid in both. Every call the timed part makes goes to the legacy default
// stream (stream 0), where kiln records its CUDA events and launches its own
// kernels: both sides are timed by the same events, L2 flush included.

// A tensor in device memory (a CUdeviceptr) and its shape in the op's layout.
struct DeviceTensor {
  uint64_t ptr = 0;
  std::vector<int64_t> shape;
};

class GpuContender {
 public:
  virtual ~GpuContender() = default;
  // Issues the op on the default stream and returns without waiting: the
  // caller times it between CUDA events. The output is written in the op's
  // own layout.
  virtual void enqueue() = 0;
  // The implementation the library chose ("cublasGemmEx CUBLAS_GEMM_DEFAULT",
  // cuDNN's algorithm and workspace, ...).
  virtual std::string impl() const = 0;
};

class GpuContenderPlugin {
 public:
  virtual ~GpuContenderPlugin() = default;
  // "" when the library can run on GPU 0 here; else why not (no GPU, the
  // library could not initialize, ...).
  virtual std::string unavailable_reason() const = 0;
  virtual std::string version() const = 0;
  // Whether the library has a contender for this op at all (by op name and
  // dtype); make() may still refuse an instance it cannot cover.
  virtual bool supports(const ContenderOp& op) const = 0;
  // `inputs` are the op's inputs in device memory in the op's order, `out`
  // its output. Set-up (algorithm search, workspace, constant reorders)
  // happens here, outside timing. UserError when the library cannot run
  // this instance, saying why.
  virtual std::unique_ptr<GpuContender> make(const ContenderOp& op, const std::vector<DeviceTensor>& inputs,
                                             const DeviceTensor& out) const = 0;
};

}  // namespace kiln::baselines

// The entry points' names and types; the version suffix changes with the
// interface, so an old plug-in is refused instead of crashing.
#define KILN_CONTENDER_ENTRY kiln_contender_plugin_v2
#define KILN_CONTENDER_ENTRY_NAME "kiln_contender_plugin_v2"
#define KILN_GPU_CONTENDER_ENTRY kiln_gpu_contender_plugin_v1
#define KILN_GPU_CONTENDER_ENTRY_NAME "kiln_gpu_contender_plugin_v1"
extern "C" {
typedef const kiln::baselines::ContenderPlugin* (*KilnContenderEntry)();
typedef const kiln::baselines::GpuContenderPlugin* (*KilnGpuContenderEntry)();
}
