// lower(): a scheduled graph -> a LoweredFunc ready for code generation.
//
// One linear list of passes (see lower.cpp), each a pure Stmt -> Stmt
// function in schedule/passes/. KILN_DEBUG_LOWER=1 prints the IR after each
// pass that changed it; KILN_VERIFY_IR=1 (and debug builds) verify the IR
// after every pass.
#pragma once

#include <string>
#include <vector>

#include "compute/function.h"
#include "schedule/gpu_limits.h"
#include "schedule/schedule.h"

namespace kiln {

// `args` are the function's buffers in calling order: every input
// placeholder the outputs read, and the outputs. User errors: a placeholder
// missing from args, an arg that is neither an input nor a stage.
// How far lower() goes: kFull is ready for codegen; kAnnotatedLoops stops
// before vectorize/unroll, so loops still carry their annotations (what the
// cost model's features describe) and the IR stays small.
enum class LowerDepth { kFull, kAnnotatedLoops };
LoweredFunc lower(const Schedule& sch, const std::vector<Tensor>& args, const std::string& name,
                  LowerDepth depth = LowerDepth::kFull);

// lower() for a cuda target (`limits` of its architecture): the GPU pass
// list (no loop partitioning; barriers inserted where threads share data),
// then every kernel checked against the limits (schedule/gpu_kernels.h) and
// its barriers verified. User errors in schedule terms for a schedule that
// could not launch.
LoweredFunc lower_gpu(const Schedule& sch, const std::vector<Tensor>& args, const std::string& name,
                      const GpuLimits& limits, LowerDepth depth = LowerDepth::kFull);

// The loop nest before any pass ran (for `kiln lower --stage=ops` and tests).
Stmt lower_to_loop_nest(const Schedule& sch, const std::vector<Tensor>& args, std::vector<BufferArg>* buffer_args);

}  // namespace kiln
