// Golden lowered IR of the hand-written schedules for a fixed kernel set, so
// that a change to lowering shows its effect on real kernels. Regenerate
// with KILN_UPDATE_GOLDEN=1 after an intended change and review the diff.
#include <catch2/catch.hpp>

#include "compute/printer.h"
#include "kernels/op_registry.h"
#include "schedule/lower.h"
#include "support/golden.h"

using namespace kiln;

namespace {

void check_golden(const std::string& name, const std::string& workload) {
  OpInstance op = build_workload(workload);
  CpuInfo cpu;  // fixed: AVX-512 width, 2 threads, whatever this machine is
  cpu.vector_bits = 512;
  cpu.num_threads = 2;
  ScheduledOp so = find_op(op.op).default_schedule(op, cpu);
  testing::check_golden_text(name + ".ir", to_string(lower(*so.schedule, so.args, name)) + "\n");
}

}  // namespace

TEST_CASE("golden IR: matmul with a tail", "[golden]") { check_golden("matmul_13x40x9", "matmul:M=13,N=40,K=9"); }
TEST_CASE("golden IR: matmul with bias and relu", "[golden]") {
  check_golden("matmul_bias_relu_12x32x8", "matmul:M=12,N=32,K=8,bias=1,relu=1");
}
TEST_CASE("golden IR: conv2d stride 2 with padding", "[golden]") {
  check_golden("conv2d_c3_9x9_k8_s2_p1", "conv2d:C=3,H=9,W=9,K=8,R=3,S=3,stride=2,pad=1");
}
TEST_CASE("golden IR: element-wise chain", "[golden]") { check_golden("elemwise_7x50", "elemwise:M=7,N=50"); }
