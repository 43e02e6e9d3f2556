#include "kernels/matmul_packed_b.h"

#include <sstream>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d_common.h"

namespace kiln {

namespace {

OpInstance define_pack(const std::map<std::string, int64_t>& p, DType dtype) {
  const int64_t K = p.at("K"), N = p.at("N"), nb = p.at("nb");
  const bool trans_b = p.at("trans_b") != 0;
  OpInstance op;
  op.op = "pack_matmul_b";
  op.dtype = dtype;
  op.ints = p;
  Tensor B = trans_b ? placeholder({N, K}, dtype, "B") : placeholder({K, N}, dtype, "B");
  const int panels = static_cast<int>((N + nb - 1) / nb);
  Tensor PB = compute(
      {panels, static_cast<int>(K), static_cast<int>(nb)},
      [&](const std::vector<Var>& v) {
        Expr j = v[0] * static_cast<int>(nb) + v[2];
        Expr jc = min(j, static_cast<int>(N - 1));  // in bounds, also where the select discards it
        Expr e = trans_b ? B(jc, v[1]) : B(v[1], jc);
        return N % nb == 0 ? e : select(j < static_cast<int>(N), e, make_zero(dtype));
      },
      "packed_B", "pack");
  op.inputs = {B};
  op.outputs = {PB};
  op.flops = 0;
  return op;
}

// The panels in parallel; along a panel's row, nb values vectorized (B
// row-major) or k outer so that a transposed B's rows are read in order.
ScheduledOp schedule_pack(const OpInstance& op, const CpuInfo&) {
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{op.outputs[0]});
  Stage s = (*sch)[op.outputs[0]];
  auto ax = s.axis();  // jo, k, ji
  s.parallel(ax[0]);
  if (op.ints.at("trans_b") != 0)
    s.reorder({ax[0], ax[2], ax[1]});
  else
    s.vectorize(ax[2]);
  return ScheduledOp{sch, {op.inputs[0], op.outputs[0]}};
}

GemmShape packed_shape(const std::map<std::string, int64_t>& p) {
  GemmShape g;
  g.M = p.at("M");
  g.N = p.at("N");
  g.K = p.at("K");
  g.b_panel = p.at("nb");
  g.trans_a = p.at("trans_a") != 0;
  g.bias = p.at("bias") != 0;
  g.relu = p.at("relu") != 0;
  g.gelu = p.at("gelu") != 0;
  g.b_name = "packed_B";
  return g;
}

}  // namespace

OpDef pack_matmul_b_op_def() {
  OpDef d;
  d.name = "pack_matmul_b";
  d.summary =
      "packs matmul's B once, ahead of time: B[K,N] (B[N,K] with trans_b) to panels of nb columns, "
      "PB[ceil(N/nb),K,nb], zero past N (matmul_packed_b's operand)";
  d.params = {
      int_param("K", "rows of B (the reduction)"),
      int_param("N", "columns of B"),
      int_param("nb", "columns per panel", std::to_string(kPackedBPanel)),
      {OpParam::kFlag, "trans_b", "1: B is stored transposed, as [N,K]", "0"},
      dtype_param(),
  };
  d.size_params = {"K", "N"};
  d.build = define_pack;
  d.hand_schedule = schedule_pack;
  return d;
}

OpDef matmul_packed_b_op_def() {
  OpDef d;
  d.name = "matmul_packed_b";
  d.summary =
      "matmul with B packed ahead of time by pack_matmul_b: C[M,N] = A[M,K] . B, B read from PB[ceil(N/nb),K,nb]; "
      "A stored [K,M] with trans_a; optional bias[N] and relu or gelu epilogue; FLOPs 2*M*N*K";
  d.params = {
      int_param("M", "rows of A and C"),
      int_param("N", "columns of B and C"),
      int_param("K", "columns of A, rows of B (the reduction)"),
      int_param("nb", "columns per panel of the packed B (the register tile's width)", std::to_string(kPackedBPanel)),
      {OpParam::kFlag, "trans_a", "1: A is stored transposed, as [K,M]", "0"},
      {OpParam::kFlag, "bias", "1: add bias[N] to every row", "0"},
      {OpParam::kFlag, "relu", "1: apply max(x, 0) to the result", "0"},
      {OpParam::kFlag, "gelu", "1: apply gelu 0.5*x*(1+erf(x/sqrt(2))) to the result (floats; not with relu)", "0"},
      dtype_param(),
  };
  d.size_params = {"M", "N", "K"};
  d.build = [](const std::map<std::string, int64_t>& p, DType t) {
    OpInstance op = gemm_define(packed_shape(p), t);
    op.op = "matmul_packed_b";
    op.ints = p;
    return op;
  };
  set_gemm_template(d, [](const OpInstance& op) { return packed_shape(op.ints); });
  return d;
}

std::vector<OpAlternative> packed_b_alternatives(const GemmShape& g, DType dtype) {
  if (g.batch > 0 || g.b_panel > 0) return {};
  std::ostringstream pack, kernel;
  pack << "pack_matmul_b:K=" << g.K << ",N=" << g.N << ",nb=" << kPackedBPanel << ",trans_b=" << g.trans_b
       << ",dtype=" << dtype.str();
  kernel << "matmul_packed_b:M=" << g.M << ",N=" << g.N << ",K=" << g.K << ",nb=" << kPackedBPanel
         << ",trans_a=" << g.trans_a << ",bias=" << g.bias << ",relu=" << g.relu << ",gelu=" << g.gelu
         << ",dtype=" << dtype.str();
  OpAlternative a;
  a.name = "packed_b";
  a.prepare = {UnfusedStep{pack.str(), {1}}};
  a.kernel.workload = kernel.str();
  a.kernel.inputs = {0, -1};
  if (g.bias) a.kernel.inputs.push_back(2);
  return {a};
}

}  // namespace kiln
