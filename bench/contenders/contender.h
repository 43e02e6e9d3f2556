// Baseline contenders for `kiln bench`: other libraries' implementations of
// kiln's ops, set up on caller-owned arrays (the op's inputs, filled by the
// caller) so that every contender computes the same values on the same data.
// Set-up (layout reorders of constant operands, primitive creation,
// compilation) happens outside timing; run() is what is timed; finish()
// leaves the result in the op's own output layout in the output array.
//
// The libraries are not linked into kiln: each in-process contender (oneDNN,
// OpenBLAS; cuBLAS and cuDNN later) is a plug-in, a shared object next to
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

}  // namespace kiln::baselines

// The entry point's name and type; the version suffix changes with the
// interface, so an old plug-in is refused instead of crashing.
#define KILN_CONTENDER_ENTRY kiln_contender_plugin_v1
#define KILN_CONTENDER_ENTRY_NAME "kiln_contender_plugin_v1"
extern "C" {
typedef const kiln::baselines::ContenderPlugin* (*KilnContenderEntry)();
}
