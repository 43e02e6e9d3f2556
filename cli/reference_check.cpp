#include "cli/reference_check.h"

#include <cstring>
#include <sstream>

#include "codegen/runtime_dtype.h"
#include "compute/interpreter.h"

namespace kiln::cli {

namespace {

HostTensor to_host(const rt::NDArray& a, DType t) {
  HostTensor h;
  h.dtype = t;
  h.shape = a.shape();
  h.bytes.resize(a.nbytes());
  std::memcpy(h.bytes.data(), a.data(), a.nbytes());
  return h;
}

double tolerance_for(DType t) { return t.is_float() ? (t.bits <= 16 ? 1e-2 : (t.bits == 32 ? 1e-3 : 1e-9)) : 0; }

}  // namespace

CheckResult check_outputs(const OpInstance& op, const std::vector<rt::NDArray>& inputs,
                          const std::vector<rt::NDArray>& outputs, uint64_t /*seed*/) {
  std::vector<std::pair<Tensor, HostTensor>> in;
  for (size_t i = 0; i < op.inputs.size(); ++i) in.emplace_back(op.inputs[i], to_host(inputs[i], op.inputs[i].dtype()));
  std::vector<HostTensor> expected = interpret(op.outputs, in);
  CheckResult r;
  for (size_t i = 0; i < op.outputs.size(); ++i) {
    DType t = op.outputs[i].dtype();
    HostTensor actual = to_host(outputs[i], t);
    double tol = tolerance_for(t);
    std::string msg = compare_tensors(expected[i], actual, tol, tol);
    r.checked += static_cast<int64_t>(expected[i].bytes.size() / static_cast<size_t>(t.bytes()));
    if (!msg.empty()) {
      r.ok = false;
      r.detail = op.outputs[i].name() + ": " + msg;
      break;
    }
  }
  return r;
}

}  // namespace kiln::cli
