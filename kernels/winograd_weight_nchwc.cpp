#include "kernels/winograd_weight_nchwc.h"

#include <algorithm>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d_common.h"
#include "kernels/winograd_matrices.h"

namespace kiln {

namespace {

struct WeightShape {
  int64_t K, C, m, alpha, cb, kb;
};

WeightShape weight_shape(const std::map<std::string, int64_t>& p) {
  WeightShape s{};
  s.K = p.at("K");
  s.C = p.at("C");
  s.m = p.at("m");
  s.cb = p.at("cb");
  s.kb = p.at("kb");
  s.alpha = winograd_matrices(static_cast<int>(s.m)).alpha;
  return s;
}

OpInstance define(const std::map<std::string, int64_t>& params, DType dtype) {
  check_winograd_dtype("winograd_weight_nchwc", dtype);
  OpInstance op;
  op.op = "winograd_weight_nchwc";
  op.dtype = dtype;
  op.ints = params;
  WeightShape s = weight_shape(params);
  check_winograd_blocks("winograd_weight_nchwc", s.C, s.K, s.cb, s.kb);
  const WinogradMatrices& wm = winograd_matrices(static_cast<int>(s.m));
  Tensor weight = placeholder({s.K / s.kb, s.C / s.cb, 3, 3, s.cb, s.kb}, dtype, "weight");
  Tensor out = compute(
      {s.alpha, s.alpha, s.K / s.kb, s.C / s.cb, s.cb, s.kb},
      [&](const std::vector<Var>& v) {
        // G g GT: the rows of G over the taps' rows, then over their columns.
        return winograd_apply_2d(
            wm.G, v[0], v[1], [&](int r, int q) { return weight(v[2], v[3], r, q, v[4], v[5]); }, dtype);
      },
      "weight_winograd", "winograd_weight");
  op.inputs = {weight};
  op.outputs = {out};
  // Per (ko, co, ci, ki): G g (alpha x 3 from 3 x 3) then (G g) GT.
  op.flops = 2.0 * (s.K * s.C) * (s.alpha * 3 * 3 + s.alpha * s.alpha * 3);
  return op;
}

// NHWC: HWIO weights [3, 3, C, K] to [alpha, alpha, C, K].
OpInstance define_nhwc(const std::map<std::string, int64_t>& params, DType dtype) {
  check_winograd_dtype("winograd_weight_nhwc", dtype);
  OpInstance op;
  op.op = "winograd_weight_nhwc";
  op.dtype = dtype;
  op.ints = params;
  const int64_t K = params.at("K"), C = params.at("C"), m = params.at("m");
  const WinogradMatrices& wm = winograd_matrices(static_cast<int>(m));
  Tensor weight = placeholder({3, 3, C, K}, dtype, "weight");
  Tensor out = compute(
      {wm.alpha, wm.alpha, C, K},
      [&](const std::vector<Var>& v) {
        return winograd_apply_2d(wm.G, v[0], v[1], [&](int r, int q) { return weight(r, q, v[2], v[3]); }, dtype);
      },
      "weight_winograd", "winograd_weight");
  op.inputs = {weight};
  op.outputs = {out};
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

OpDef winograd_weight_nchwc_op_def() {
  OpDef d;
  d.name = "winograd_weight_nchwc";
  d.summary =
      "the weight transform of conv2d_winograd_nchwc, run once ahead of time: blocked 3x3 weights "
      "[K/kb,C/cb,3,3,cb,kb] to G g G^T per channel pair, [m+2,m+2,K/kb,C/cb,cb,kb]";
  d.params = {
      int_param("K", "output channels"),
      int_param("C", "input channels"),
      int_param("m", "Winograd output tile: 2 for F(2x2,3x3), 4 for F(4x4,3x3)", "4"),
      int_param("cb", "input channels per block (divides C)", "16"),
      int_param("kb", "output channels per block (divides K)", "16"),
      dtype_param(),
  };
  d.size_params = {"K", "C"};
  d.build = define;
  d.hand_schedule = schedule;
  return d;
}

OpDef winograd_weight_nhwc_op_def() {
  OpDef d;
  d.name = "winograd_weight_nhwc";
  d.summary =
      "the weight transform of conv2d_winograd_nhwc, run once ahead of time: HWIO 3x3 weights [3,3,C,K] to "
      "G g G^T per channel pair, [m+2,m+2,C,K]";
  d.params = {
      int_param("K", "output channels"),
      int_param("C", "input channels"),
      int_param("m", "Winograd output tile: 2 for F(2x2,3x3), 4 for F(4x4,3x3)", "4"),
      dtype_param(),
  };
  d.size_params = {"K", "C"};
  d.build = define_nhwc;
  d.hand_schedule = schedule_nhwc;
  return d;
}

}  // namespace kiln
