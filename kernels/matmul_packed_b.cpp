#include "kernels/matmul_packed_b.h"

#include <sstream>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d_common.h"
#include "kernels/quantize.h"

namespace kiln {

namespace {

OpInstance define_pack(const std::map<std::string, int64_t>& p, DType dtype) {
  const int64_t K = p.at("K"), N = p.at("N"), nb = p.at("nb"), ks = p.at("kstep");
  const bool trans_b = p.at("trans_b") != 0;
  user_check(K % ks == 0) << "pack_matmul_b: K (" << K << ") must be a multiple of kstep (" << ks << ")";
  OpInstance op;
  op.op = "pack_matmul_b";
  op.dtype = dtype;
  op.ints = p;
  Tensor B = trans_b ? placeholder({N, K}, dtype, "B") : placeholder({K, N}, dtype, "B");
  const int panels = static_cast<int>((N + nb - 1) / nb);
  // Element (k, j) of B, zero past N.
  auto element = [&](Expr k, Expr j) {
    Expr jc = min(j, static_cast<int>(N - 1));  // in bounds, also where the select discards it
    Expr e = trans_b ? B(jc, k) : B(k, jc);
    return N % nb == 0 ? e : select(j < static_cast<int>(N), e, make_zero(dtype));
  };
  std::vector<Expr> shape{panels, static_cast<int>(K / ks), static_cast<int>(nb)};
  if (ks > 1) shape.push_back(static_cast<int>(ks));
  Tensor PB = compute(
      shape,
      [&](const std::vector<Var>& v) {
        Expr j = v[0] * static_cast<int>(nb) + v[2];
        return ks > 1 ? element(v[1] * static_cast<int>(ks) + v[3], j) : element(v[1], j);
      },
      "packed_B", "pack");
  op.inputs = {B};
  op.outputs = {PB};
  op.flops = 0;
  return op;
}

// The panels in parallel; along a panel's row, nb values vectorized (B
// row-major: with k steps, one vector per step, stored kstep apart) or k
// outer so that a transposed B's rows are read in order.
ScheduledOp schedule_pack(const OpInstance& op, const CpuInfo&) {
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{op.outputs[0]});
  Stage s = (*sch)[op.outputs[0]];
  auto ax = s.axis();  // jo, k, ji (, ki)
  s.parallel(ax[0]);
  const bool steps = ax.size() == 4;
  if (op.ints.at("trans_b") != 0) {
    if (!steps) s.reorder({ax[0], ax[2], ax[1]});
  } else if (steps) {
    s.reorder({ax[0], ax[1], ax[3], ax[2]});
    s.unroll(ax[3]);
    s.vectorize(ax[2]);
  } else {
    s.vectorize(ax[2]);
  }
  return ScheduledOp{sch, {op.inputs[0], op.outputs[0]}};
}

// What matmul_packed_b and qmatmul_packed_b share: the sizes, the packed
// B and the bias and relu flags.
GemmShape packed_common(const std::map<std::string, int64_t>& p) {
  GemmShape g;
  g.M = p.at("M");
  g.N = p.at("N");
  g.K = p.at("K");
  g.b_panel = p.at("nb");
  g.b_kstep = p.at("kstep");
  g.bias = p.at("bias") != 0;
  g.relu = p.at("relu") != 0;
  g.b_name = "packed_B";
  return g;
}

GemmShape packed_shape(const std::map<std::string, int64_t>& p, DType) {
  GemmShape g = packed_common(p);
  g.trans_a = p.at("trans_a") != 0;
  g.gelu = p.at("gelu") != 0;
  return g;
}

GemmShape packed_quantized_shape(const std::map<std::string, int64_t>& p, DType out) {
  GemmShape g = packed_common(p);
  g.quantized = true;
  g.out_type = out;
  return g;
}

// A packed kernel's definition and template: the GEMM of the shape its
// parameters give (`shape`, from the parameters and the op's dtype).
void set_packed_gemm(OpDef& d, GemmShape (*shape)(const std::map<std::string, int64_t>&, DType)) {
  d.size_params = {"M", "N", "K"};
  d.build = [name = d.name, shape](const std::map<std::string, int64_t>& p, DType t) {
    OpInstance op = gemm_define(shape(p, t), t);
    op.op = name;
    op.ints = p;
    return op;
  };
  set_gemm_template(d, [shape](const OpInstance& op) { return shape(op.ints, op.dtype); });
}

// M, N, K and nb, the parameters both packed kernels start with.
std::vector<OpParam> packed_kernel_params() {
  return {
      int_param("M", "rows of A and C"),
      int_param("N", "columns of B and C"),
      int_param("K", "columns of A, rows of B (the reduction)"),
      int_param("nb", "columns per panel of the packed B (the register tile's width)", std::to_string(kPackedBPanel)),
  };
}

OpParam kstep_param(const std::string& default_value, bool omit_when_default) {
  return {OpParam::kInt,
          "kstep",
          "consecutive k values of a column kept together in a panel row (1: none; 4 for int8 and 2 for bf16: the "
          "tensor instructions' blocked layout)",
          default_value,
          1,
          omit_when_default};
}

}  // namespace

OpDef pack_matmul_b_op_def() {
  OpDef d;
  d.name = "pack_matmul_b";
  d.summary =
      "packs matmul's B once, ahead of time: B[K,N] (B[N,K] with trans_b) to panels of nb columns, "
      "PB[ceil(N/nb),K,nb], or PB[ceil(N/nb),K/kstep,nb,kstep] with kstep > 1, zero past N (matmul_packed_b's and "
      "qmatmul_packed_b's operand)";
  d.params = {
      int_param("K", "rows of B (the reduction)"),
      int_param("N", "columns of B"),
      int_param("nb", "columns per panel", std::to_string(kPackedBPanel)),
      {OpParam::kFlag, "trans_b", "1: B is stored transposed, as [N,K]", "0"},
      dtype_param(),
      kstep_param("1", true),
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
  d.params = packed_kernel_params();
  d.params.insert(
      d.params.end(),
      {
          {OpParam::kFlag, "trans_a", "1: A is stored transposed, as [K,M]", "0"},
          {OpParam::kFlag, "bias", "1: add bias[N] to every row", "0"},
          {OpParam::kFlag, "relu", "1: apply max(x, 0) to the result", "0"},
          {OpParam::kFlag, "gelu", "1: apply gelu 0.5*x*(1+erf(x/sqrt(2))) to the result (floats; not with relu)", "0"},
          dtype_param(),
          kstep_param("1", true),
      });
  set_packed_gemm(d, packed_shape);
  return d;
}

OpDef qmatmul_packed_b_op_def() {
  OpDef d;
  d.name = "qmatmul_packed_b";
  d.summary =
      "qmatmul with B (i8) packed ahead of time by pack_matmul_b, read from PB[ceil(N/nb),K/kstep,nb,kstep]: "
      "requantize(A . B + bias[N], scale[N]) into u8, i8, f32 or i32; FLOPs 2*M*N*K";
  d.params = packed_kernel_params();
  d.params.insert(d.params.end(), {
                                      kstep_param("4", false),
                                      {OpParam::kFlag, "bias", "1: add an i32 bias[N] to the sums", "0"},
                                      {OpParam::kFlag, "relu", "1: clamp the result at 0", "0"},
                                      quantized_out_param(),
                                  });
  set_packed_gemm(d, packed_quantized_shape);
  return d;
}

std::vector<OpAlternative> packed_b_alternatives(const GemmShape& g, DType dtype) {
  if (g.batch > 0 || g.b_panel > 0) return {};
  // int8 and bf16 B in the tensor instructions' blocked layout (kiln's
  // register tiles read it as it is, tensorized or not); plain panels when
  // K is not whole steps (no instruction is offered then anyway).
  int64_t ks = g.quantized ? 4 : dtype == DType::bf16() ? 2 : 1;
  if (g.K % ks != 0) ks = 1;
  const DType b_type = g.quantized ? DType::i8() : dtype;
  std::ostringstream pack, kernel;
  pack << "pack_matmul_b:K=" << g.K << ",N=" << g.N << ",nb=" << kPackedBPanel << ",trans_b=" << g.trans_b
       << ",dtype=" << b_type.str();
  if (ks > 1) pack << ",kstep=" << ks;
  if (g.quantized) {
    kernel << "qmatmul_packed_b:M=" << g.M << ",N=" << g.N << ",K=" << g.K << ",nb=" << kPackedBPanel << ",kstep=" << ks
           << ",bias=" << g.bias << ",relu=" << g.relu << ",out=" << g.out_type.str();
  } else {
    kernel << "matmul_packed_b:M=" << g.M << ",N=" << g.N << ",K=" << g.K << ",nb=" << kPackedBPanel
           << ",trans_a=" << g.trans_a << ",bias=" << g.bias << ",relu=" << g.relu << ",gelu=" << g.gelu
           << ",dtype=" << dtype.str();
    if (ks > 1) kernel << ",kstep=" << ks;
  }
  OpAlternative a;
  a.name = "packed_b";
  a.prepare = {UnfusedStep{pack.str(), {1}}};
  a.kernel.workload = kernel.str();
  a.kernel.inputs = {0, -1};
  if (g.bias) a.kernel.inputs.push_back(2);
  if (g.quantized && g.out_type != DType::i32()) a.kernel.inputs.push_back(g.bias ? 3 : 2);  // scale
  return {a};
}

}  // namespace kiln
