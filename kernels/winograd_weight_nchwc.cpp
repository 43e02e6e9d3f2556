#include "kernels/winograd_weight_nchwc.h"

#include <algorithm>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d_common.h"
#include "kernels/winograd_matrices.h"

namespace kiln {

namespace {

// Blocked weights [K/kb, C/cb, 3, 3, cb, kb] to [alpha, alpha, K/kb, C/cb, cb, kb],
// or (nhwc) HWIO weights [3, 3, C, K] to [alpha, alpha, C, K].
OpInstance define(bool nhwc, const std::map<std::string, int64_t>& params, DType dtype) {
  const std::string name = nhwc ? "winograd_weight_nhwc" : "winograd_weight_nchwc";
  check_winograd_dtype(name, dtype);
  OpInstance op;
  op.op = name;
  op.dtype = dtype;
  op.ints = params;
  const int64_t K = params.at("K"), C = params.at("C");
  const int64_t cb = nhwc ? 1 : params.at("cb"), kb = nhwc ? 1 : params.at("kb");
  const WinogradMatrices& wm = winograd_matrices(static_cast<int>(params.at("m")));
  if (!nhwc) check_winograd_blocks(name, C, K, cb, kb);
  Tensor weight = nhwc ? placeholder({3, 3, C, K}, dtype, "weight")
                       : placeholder({K / kb, C / cb, 3, 3, cb, kb}, dtype, "weight");
  std::vector<Expr> shape = nhwc ? std::vector<Expr>{wm.alpha, wm.alpha, C, K}
                                 : std::vector<Expr>{wm.alpha, wm.alpha, K / kb, C / cb, cb, kb};
  Tensor out = compute(
      shape,
      [&](const std::vector<Var>& v) {
        // G g GT: the rows of G over the taps' rows, then over their columns.
        auto tap = [&](int r, int q) {
          return nhwc ? weight(r, q, v[2], v[3]) : weight(v[2], v[3], r, q, v[4], v[5]);
        };
        return winograd_apply_2d(wm.G, v[0], v[1], tap, dtype);
      },
      "weight_winograd", "winograd_weight");
  op.inputs = {weight};
  op.outputs = {out};
  // Per (k, c): G g (alpha x 3 from 3 x 3) then (G g) GT.
  op.flops = 2.0 * (K * C) * (wm.alpha * 3 * 3 + wm.alpha * wm.alpha * 3);
  return op;
}

ScheduledOp schedule_nhwc(const OpInstance& op, const CpuInfo& cpu) {
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{op.outputs[0]});
  Stage s = (*sch)[op.outputs[0]];
  auto ax = s.axis();  // e, f, c, k
  IterVar ko, ki;
  s.split(ax[3], std::min<int64_t>(op.ints.at("K"), cpu.vector_bits / op.dtype.bits), &ko, &ki);
  s.reorder({ax[2], ko, ax[0], ax[1], ki});
  s.parallel(s.fuse(ax[2], ko));
  s.unroll(ax[0]);
  s.unroll(ax[1]);
  s.vectorize(ki);
  return ScheduledOp{sch, {op.inputs[0], op.outputs[0]}};
}

ScheduledOp schedule(const OpInstance& op, const CpuInfo&) {
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{op.outputs[0]});
  Stage s = (*sch)[op.outputs[0]];
  auto ax = s.axis();
  s.reorder({ax[2], ax[3], ax[4], ax[0], ax[1], ax[5]});
  IterVar blocks = s.fuse(ax[2], ax[3]);
  s.parallel(blocks);
  s.unroll(ax[0]);
  s.unroll(ax[1]);
  s.vectorize(ax[5]);
  return ScheduledOp{sch, {op.inputs[0], op.outputs[0]}};
}

}  // namespace

void check_winograd_dtype(const std::string& op, DType dtype) {
  user_check(dtype.is_float() && dtype.bits >= 32)
      << op << ": Winograd convolution needs dtype f32 or f64 (its transforms have fractional entries), not "
      << dtype.str();
}

void check_winograd_blocks(const std::string& op, int64_t C, int64_t K, int64_t cb, int64_t kb) {
  user_check(C % cb == 0) << op << ": the input channel block cb=" << cb << " must divide the input channels C=" << C;
  user_check(K % kb == 0) << op << ": the output channel block kb=" << kb << " must divide the output channels K="
                          << K;
}

namespace {

OpDef weight_op_def(bool nhwc) {
  OpDef d;
  d.name = nhwc ? "winograd_weight_nhwc" : "winograd_weight_nchwc";
  d.summary = nhwc ? "the weight transform of conv2d_winograd_nhwc, run once ahead of time: HWIO 3x3 weights "
                     "[3,3,C,K] to G g G^T per channel pair, [m+2,m+2,C,K]"
                   : "the weight transform of conv2d_winograd_nchwc, run once ahead of time: blocked 3x3 weights "
                     "[K/kb,C/cb,3,3,cb,kb] to G g G^T per channel pair, [m+2,m+2,K/kb,C/cb,cb,kb]";
  d.params = {
      int_param("K", "output channels"),
      int_param("C", "input channels"),
      int_param("m", "Winograd output tile: 2 for F(2x2,3x3), 4 for F(4x4,3x3)", "4"),
  };
  if (!nhwc) {
    d.params.push_back(int_param("cb", "input channels per block (divides C)", "16"));
    d.params.push_back(int_param("kb", "output channels per block (divides K)", "16"));
  }
  d.params.push_back(dtype_param());
  d.size_params = {"K", "C"};
  d.build = [nhwc](const std::map<std::string, int64_t>& p, DType t) { return define(nhwc, p, t); };
  d.hand_schedule = nhwc ? schedule_nhwc : schedule;
  return d;
}

}  // namespace

OpDef winograd_weight_nchwc_op_def() { return weight_op_def(false); }

OpDef winograd_weight_nhwc_op_def() { return weight_op_def(true); }

}  // namespace kiln
