#include "kernels/matmul_template.h"

#include "base/error.h"

namespace kiln {

GemmShape matmul_gemm_shape(const OpInstance& op) {
  auto flag = [&](const char* name) {
    auto it = op.ints.find(name);
    return it != op.ints.end() && it->second != 0;
  };
  GemmShape g;
  g.M = op.ints.at("M");
  g.N = op.ints.at("N");
  g.K = op.ints.at("K");
  g.trans_a = flag("trans_a");
  g.trans_b = flag("trans_b");
  g.bias = flag("bias");
  g.relu = flag("relu");
  g.gelu = flag("gelu");
  return g;
}

std::shared_ptr<ConfigSpace> matmul_space(const OpInstance& op, const CpuInfo& cpu) {
  return gemm_space(matmul_gemm_shape(op), op.dtype, cpu);
}

Config matmul_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
  return gemm_default(matmul_gemm_shape(op), op.dtype, cpu, space);
}

MatmulParams matmul_decode(const Config& c) { return gemm_decode(c); }

ScheduledOp matmul_apply(const OpInstance& op, const Config& cfg) {
  return matmul_template_schedule(op, matmul_decode(cfg));
}

ScheduledOp matmul_template_schedule(const OpInstance& op, const MatmulParams& p) {
  user_check(op.op == "matmul") << "the matmul template cannot schedule op '" << op.op << "'";
  return gemm_schedule(op, matmul_gemm_shape(op), p);
}

}  // namespace kiln
