// Golden CUDA C of the cuda template's default config for a fixed kernel
// set, so that a change to GPU lowering or to the CUDA backend shows its
// effect on real kernels. Regenerate with KILN_UPDATE_GOLDEN=1 after an
// intended change and review the diff.
#include <catch2/catch.hpp>

#include "codegen/cuda_codegen.h"
#include "kernels/op_registry.h"
#include "schedule/lower.h"
#include "support/golden.h"

using namespace kiln;

namespace {

void check_golden_cuda(const std::string& name, const std::string& workload) {
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  OpInstance op = build_workload(workload);
  const GpuTemplate& t = find_op(op.op).gpu;
  auto space = t.define_space(op, gpu);
  ScheduledOp so = t.apply_config(op, t.default_config(op, gpu, *space));
  testing::check_golden_text(name + ".cu", emit_cuda(lower_gpu(*so.schedule, so.args, name, gpu), gpu).code);
}

}  // namespace

TEST_CASE("golden CUDA: matmul 128x128x64", "[golden][gpu]") {
  check_golden_cuda("cuda_matmul_128x128x64", "matmul:M=128,N=128,K=64");
}
TEST_CASE("golden CUDA: dense with a tail, bias and gelu", "[golden][gpu]") {
  check_golden_cuda("cuda_dense_5x70x37_bias_gelu", "dense:N=5,IN=37,OUT=70,bias=1,gelu=1");
}
