// kiln's own nodes for blocked layouts (graph/layout_planning.h): the
// NCHW[x]c conversions, convolution weights packed into the blocks of
// conv2d_nchwc and depthwise_conv2d_nchwc (folded at compile time), and a
// convolution on blocked data as one of those ops.
#include "base/error.h"
#include "graph/layout_planning.h"
#include "graph/onnx_op_util.h"

namespace kiln::graph {

namespace {

// [N, C, H, W] -> [N, C/b, H, W, b]: channel c = co*b + ci.
NodeCompute to_blocked(const NodeArgs& a) {
  const std::vector<int64_t>& in = a.shape(0);
  const int64_t b = a.attr_int(kBlock, 0);
  if (in.size() != 4 || b <= 0 || in[1] % b != 0)
    a.fail("blocks a tensor of shape " + shape_str(in) + " by " + std::to_string(b) + " channels");
  const std::vector<int64_t> out = {in[0], in[1] / b, in[2], in[3], b};
  Tensor x = input_placeholder(a, 0);
  Tensor y = compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        return x({i[0], i[1] * Expr(b) + i[4], i[2], i[3]});
      },
      "out", "injective");
  return single_output({x}, y, out);
}

// [N, C/b, H, W, b] -> [N, C, H, W].
NodeCompute from_blocked(const NodeArgs& a) {
  const std::vector<int64_t>& in = a.shape(0);
  if (in.size() != 5) a.fail("unblocks a tensor of shape " + shape_str(in));
  const int64_t b = in[4];
  const std::vector<int64_t> out = {in[0], in[1] * b, in[2], in[3]};
  Tensor x = input_placeholder(a, 0);
  Tensor y = compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        return x({i[0], floordiv(i[1], Expr(b)), i[2], i[3], floormod(i[1], Expr(b))});
      },
      "out", "injective");
  return single_output({x}, y, out);
}

// A Conv's weights [K, C/groups, R, S] in the blocks the templates read.
NodeCompute pack_conv_weight(const NodeArgs& a) {
  const std::vector<int64_t>& w = a.shape(0);
  const int64_t cb = a.attr_int(kBlockIn, 0), kb = a.attr_int(kBlockOut, 0);
  const bool depthwise = a.attr_int(kDepthwise, 0) != 0;
  const bool fits =
      w.size() == 4 && cb > 0 && kb > 0 && w[0] % kb == 0 && (depthwise ? w[1] == 1 && cb == kb : w[1] % cb == 0);
  if (!fits)
    a.fail("packs weights of shape " + shape_str(w) + " in blocks of " + std::to_string(cb) + " x " +
           std::to_string(kb));
  Tensor x = input_placeholder(a, 0);
  if (depthwise) {
    // [C/cb, R, S, cb]
    const std::vector<int64_t> out = {w[0] / cb, w[2], w[3], cb};
    Tensor y = compute(
        te_shape(out),
        [&](const std::vector<Var>& i) {
          return x({i[0] * Expr(cb) + i[3], Expr(0), i[1], i[2]});
        },
        "out", "pack");
    return single_output({x}, y, out);
  }
  // [K/kb, C/cb, R, S, cb, kb]
  const std::vector<int64_t> out = {w[0] / kb, w[1] / cb, w[2], w[3], cb, kb};
  Tensor y = compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        return x({i[0] * Expr(kb) + i[5], i[1] * Expr(cb) + i[4], i[2], i[3]});
      },
      "out", "pack");
  return single_output({x}, y, out);
}

// The convolution as the kiln workload the pass chose: its inputs must be
// the op's (blocked data, packed weights, bias).
NodeCompute conv_blocked(const NodeArgs& a) {
  const std::string workload = a.attr_str(kWorkload, "");
  OpInstance op;
  try {
    op = build_workload(workload);
  } catch (const UserError& e) {
    a.fail("has workload '" + workload + "': " + e.what());
  }
  if (a.num_inputs() != static_cast<int>(op.inputs.size()))
    a.fail("has " + std::to_string(a.num_inputs()) + " inputs for " + std::to_string(op.inputs.size()) + " of " +
           op.op);
  for (int k = 0; k < a.num_inputs(); ++k)
    if (a.shape(k) != static_shape(op.inputs[static_cast<size_t>(k)]))
      a.fail("has input " + std::to_string(k) + " of shape " + shape_str(a.shape(k)) + " where " + op.op + " reads " +
             shape_str(static_shape(op.inputs[static_cast<size_t>(k)])));
  const std::vector<int64_t> out = static_shape(op.outputs[0]);
  return op_compute(std::move(op), out);
}

}  // namespace

void add_layout_ops(std::map<std::string, OpBuilder>& ops) {
  ops[kToBlocked] = to_blocked;
  ops[kFromBlocked] = from_blocked;
  ops[kPackConvWeight] = pack_conv_weight;
  ops[kConvBlocked] = conv_blocked;
}

}  // namespace kiln::graph
