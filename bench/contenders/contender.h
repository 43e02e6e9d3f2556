// Baseline contenders for `kiln bench`: other libraries' implementations of
// kiln's ops, set up on caller-owned arrays (the op's inputs, filled by the
// caller) so that every contender computes the same values on the same data.
// Set-up (layout reorders of constant operands, primitive creation,
// compilation) happens outside timing; run() is what is timed; finish()
// leaves the result in the op's own output layout in the output array.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/op_registry.h"
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

// The libraries kiln can be compared with, by the names `kiln bench
// --baselines` takes: "onednn", "openblas", "halide".
std::vector<std::string> baseline_names();
// Whether the library was found when kiln was built (halide: whether its
// helper executable can be found now, see halide_client.h).
bool baseline_available(const std::string& name);
// A short description of the library and its version, for reports.
std::string baseline_version(const std::string& name);
// Whether the library has a contender for this op (OpenBLAS: GEMM ops only).
bool baseline_supports(const std::string& name, const OpInstance& op);

// The in-process contenders. `inputs` are the op's inputs in the op's order
// (OpInstance::inputs), `out` its output array. UserError when the library
// cannot run this instance (a parameter combination it lacks).
std::unique_ptr<Contender> make_onednn_contender(const OpInstance& op, const std::vector<rt::NDArray>& inputs,
                                                 const rt::NDArray& out);
std::unique_ptr<Contender> make_openblas_contender(const OpInstance& op, const std::vector<rt::NDArray>& inputs,
                                                   const rt::NDArray& out);

// An integer parameter of the op, or `fallback` when the op does not have it.
int64_t param_or(const OpInstance& op, const std::string& name, int64_t fallback);

}  // namespace kiln::baselines
