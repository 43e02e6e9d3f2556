// elemwise: a chain of element-wise stages over two [M, N] inputs, all
// fused into one loop by the schedule:
//   t1 = A * B + 1;  t2 = max(t1, 0);
//   out = t2 * sigmoid(t1) + tanh(A)       (float types)
//   out = t2 * 3 - A                        (integer types)
#pragma once

#include "kernels/op_registry.h"

namespace kiln {

OpDef elemwise_op_def();
OpInstance elemwise_define(int64_t M, int64_t N, DType dtype);

struct ElemwiseSchedule {
  int64_t vector_lanes = 16;
  int64_t unroll = 4;  // vectors per innermost iteration
  bool parallel = true;
};
ScheduledOp elemwise_schedule(const OpInstance& op, const ElemwiseSchedule& cfg);

}  // namespace kiln
