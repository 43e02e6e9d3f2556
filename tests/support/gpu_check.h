// Checking GPU schedules without a GPU: a config of an op's cuda template
// is lowered, printed as CUDA C, compiled by the host C++ compiler against
// the emulation header and run on the CPU on random inputs, then compared
// with the reference interpreter (tasks/reference_check.h). Optionally the
// same source is compiled by NVRTC for real architectures and its resource
// use checked against their limits.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "codegen/cuda_codegen.h"
#include "codegen/cuda_emulation.h"
#include "codegen/nvrtc.h"
#include "codegen/runtime_dtype.h"
#include "kernels/op_registry.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "schedule/lower.h"
#include "tasks/kernel_build.h"
#include "tasks/reference_check.h"

namespace kiln::testing {

// The CUDA source of a config of the workload's cuda template.
inline CudaSource gpu_source(const OpInstance& op, const Config& cfg, const GpuLimits& gpu) {
  ScheduledOp so = find_op(op.op).gpu.apply_config(op, cfg);
  LoweredFunc f = lower_gpu(*so.schedule, so.args, "kiln_" + op.op, gpu);
  return emit_cuda(f, gpu);
}

// Runs `src` under emulation on random inputs and checks the outputs;
// "" when they match, else what went wrong.
inline std::string run_emulated_and_check(const OpInstance& op, const CudaSource& src, const std::string& dir,
                                          uint64_t seed) {
  EmulatedModule em = build_emulated_module(src, dir);
  auto mod = rt::Module::load(em.path);
  kiln_packed_fn fn = mod->get_function(src.function);
  if (!fn) return "the emulated module has no entry point " + src.function;
  std::vector<rt::NDArray> arrays;
  std::vector<void*> ptrs;
  const std::vector<Tensor> args = op.args();  // inputs, then outputs
  for (size_t i = 0; i < args.size(); ++i) {
    std::vector<int64_t> shape;
    for (auto& e : args[i].shape()) shape.push_back(*as_const_int(e));
    rt::NDArray a = rt::NDArray::empty(shape, to_runtime_dtype(args[i].dtype()));
    if (i < op.inputs.size())
      a.fill_random(seed + i);
    else
      a.fill_zero();
    arrays.push_back(a);
    ptrs.push_back(a.data());
  }
  if (fn(ptrs.data()) != 0) return "emulated launch failed: " + emulated_error(*mod);
  const auto split = arrays.begin() + static_cast<long>(op.inputs.size());
  std::vector<rt::NDArray> ins(arrays.begin(), split), outs(split, arrays.end());
  CheckResult cr = check_outputs(op, ins, outs, seed);
  return cr.ok ? "" : "wrong result: " + cr.detail;
}

// NVRTC-compiles `src` for `gpu`'s architecture; "" when it compiles within
// the limits (registers, no spills beyond a few bytes, shared memory).
inline std::string compile_for_gpu(const CudaSource& src, const GpuLimits& gpu) {
  NvrtcOutput out;
  try {
    out = nvrtc_compile(src.code, src.function + ".cu", gpu.arch);
  } catch (const UserError& e) {
    return e.what();
  }
  if (out.cubin.empty()) return "no cubin";
  if (out.resources.size() != src.launches.size())
    return "ptxas reported " + std::to_string(out.resources.size()) + " kernels, the source has " +
           std::to_string(src.launches.size());
  for (auto& r : out.resources) {
    if (r.registers > gpu.max_registers_per_thread) return r.kernel + ": too many registers";
    if (r.shared_bytes > gpu.max_shared_static_per_block) return r.kernel + ": too much shared memory";
  }
  return "";
}

}  // namespace kiln::testing
