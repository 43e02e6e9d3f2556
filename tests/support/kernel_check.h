// Lowers a schedule, JIT-compiles it for the host, runs it on random inputs
// and compares every output with the reference interpreter. Returns "" when
// they agree, else a description of the first mismatch.
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/build.h"
#include "codegen/runtime_dtype.h"
#include "compute/interpreter.h"
#include "compute/printer.h"
#include "runtime/ndarray.h"
#include "schedule/lower.h"

namespace kiln::testing {

// 16-bit float outputs are f32 sums rounded once; two summation orders can
// round to neighbouring values, one unit in the last place apart (2^-10 of
// the value in f16, 2^-7 in bf16).
inline double tolerance_for(DType t) {
  if (!t.is_float()) return 0.0;
  if (t.bits == 16) return t.code == DType::kBFloat ? 1e-2 : 2e-3;
  return t.bits == 64 ? 1e-9 : 2e-4;
}

// `ref_outputs`: the plain definition's outputs (same placeholders as
// `inputs`); `args`: the scheduled graph's inputs then outputs. `tolerance`
// (relative and absolute) replaces tolerance_for when >= 0.
inline std::string check_schedule(const Schedule& sch, const std::vector<Tensor>& inputs,
                                  const std::vector<Tensor>& args, const std::vector<Tensor>& ref_outputs,
                                  uint64_t seed, std::string* ir = nullptr, double tolerance = -1) {
  LoweredFunc f = lower(sch, args, "kernel");
  if (ir) *ir = to_string(f);
  auto jit = JitModule::compile({f}, Target::host());
  std::vector<std::pair<Tensor, HostTensor>> host_inputs;
  std::vector<rt::NDArray> arrays;
  std::vector<void*> ptrs;
  for (size_t i = 0; i < args.size(); ++i) {
    const BufferArg& a = f.args[i];
    rt::NDArray arr = rt::NDArray::empty(a.shape, to_runtime_dtype(a.dtype));
    if (i < inputs.size()) {
      HostTensor h(a.dtype, a.shape);
      h.fill_random(seed + i, -2.0, 2.0);
      std::memcpy(arr.data(), h.bytes.data(), h.bytes.size());
      host_inputs.emplace_back(inputs[i], h);
    } else {
      std::memset(arr.data(), 0xcd, arr.nbytes());  // garbage: every element must be written
    }
    arrays.push_back(arr);
    ptrs.push_back(arr.data());
  }
  int32_t rc = jit->get_function(f.name)(ptrs.data());
  if (rc != 0) return "kernel returned " + std::to_string(rc);
  std::vector<HostTensor> expected = interpret(ref_outputs, host_inputs);
  for (size_t o = 0; o < ref_outputs.size(); ++o) {
    const rt::NDArray& arr = arrays[inputs.size() + o];
    HostTensor actual(expected[o].dtype, expected[o].shape);
    std::memcpy(actual.bytes.data(), arr.data(), actual.bytes.size());
    double tol = tolerance >= 0 ? tolerance : tolerance_for(expected[o].dtype);
    std::string msg = compare_tensors(expected[o], actual, tol, tol);
    if (!msg.empty()) return ref_outputs[o].name() + ": " + msg;
  }
  return "";
}

// Lowers and JIT-compiles a schedule for the host and runs it on `inputs`,
// copied byte for byte into its leading arguments (a buffer of another
// shape but the same size is fine: a view of the same bytes). Returns the
// last argument, the output, in the kernel's own shape. Throws when an
// input's size differs or the kernel fails.
inline HostTensor run_schedule(const Schedule& sch, const std::vector<Tensor>& args,
                               const std::vector<HostTensor>& inputs) {
  LoweredFunc f = lower(sch, args, "kernel");
  auto jit = JitModule::compile({f}, Target::host());
  std::vector<rt::NDArray> arrays;
  std::vector<void*> ptrs;
  for (size_t i = 0; i < f.args.size(); ++i) {
    arrays.push_back(rt::NDArray::empty(f.args[i].shape, to_runtime_dtype(f.args[i].dtype)));
    if (i < inputs.size()) {
      if (arrays.back().nbytes() != inputs[i].bytes.size())
        throw std::runtime_error("input " + std::to_string(i) + " has " + std::to_string(inputs[i].bytes.size()) +
                                 " bytes, the kernel's argument " + std::to_string(arrays.back().nbytes()));
      std::memcpy(arrays.back().data(), inputs[i].bytes.data(), inputs[i].bytes.size());
    }
    ptrs.push_back(arrays.back().data());
  }
  const int32_t rc = jit->get_function(f.name)(ptrs.data());
  if (rc != 0) throw std::runtime_error("kernel returned " + std::to_string(rc));
  HostTensor out(f.args.back().dtype, f.args.back().shape);
  std::memcpy(out.bytes.data(), arrays.back().data(), out.bytes.size());
  return out;
}

}  // namespace kiln::testing
