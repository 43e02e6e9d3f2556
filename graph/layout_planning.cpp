#include "graph/layout_planning.h"

#include <map>
#include <set>
#include <sstream>

#include "graph/shape_inference.h"

namespace kiln::graph {

namespace {

// Element-wise operators: a blocked tensor in, the same layout out, as long
// as every other operand is a scalar or has the output's channels.
const std::set<std::string>& elementwise_ops() {
  static const std::set<std::string> ops = {
      "Add",  "Sub", "Mul", "Div", "Pow",   "Clip", "Relu",       "Sigmoid",     "Tanh",      "Exp",      "Log",
      "Sqrt", "Erf", "Abs", "Neg", "Floor", "Ceil", "Reciprocal", "HardSigmoid", "HardSwish", "LeakyRelu"};
  return ops;
}

bool is_scalar(const Value& v) { return v.num_elements() == 1; }

// Channels per block for `c` channels: kChannelBlock, or half of it (the
// classifier's 8, 24, 40, 88 and 200 channels), else 0: not blocked.
int64_t channel_block(int64_t c) {
  if (c % kChannelBlock == 0) return kChannelBlock;
  if (c % (kChannelBlock / 2) == 0) return kChannelBlock / 2;
  return 0;
}

// The input block of a convolution: a first layer's few channels make one.
int64_t input_block(int64_t c) {
  const int64_t b = channel_block(c);
  return b == 0 && c < kChannelBlock ? c : b;
}

// A Conv as a blocked op: its workload and its blocks.
struct BlockedConv {
  std::string workload;
  int64_t cb = 0, kb = 0;  // input and output channels per block
  bool depthwise = false;
};

class Planner {
 public:
  Planner(Graph& g, const InferredGraph& inf, PassStats* stats) : g_(g), inf_(inf), stats_(*stats) {}

  void run() {
    std::vector<Node> nodes = std::move(g_.nodes);
    g_.nodes.clear();
    for (size_t i = 0; i < nodes.size(); ++i) {
      Node& n = nodes[i];
      if (inf_.folded[i]) {
        g_.nodes.push_back(std::move(n));
      } else if (std::optional<BlockedConv> bc = blocked_conv(i, n)) {
        block_conv(std::move(n), *bc);
      } else if (!block_elementwise(n) && !block_global_pool(n)) {
        for (int v : n.inputs)
          if (v >= 0) ensure_plain(v);
        g_.nodes.push_back(std::move(n));
      }
    }
    for (int v : g_.outputs) ensure_plain(v);
  }

 private:
  // The conv2d_nchwc or depthwise_conv2d_nchwc form of a Conv that kiln's
  // conv2d or depthwise_conv2d computes, when its shape blocks.
  std::optional<BlockedConv> blocked_conv(size_t i, const Node& n) const {
    const std::optional<OpInstance>& op = inf_.computes[i].op;
    if (n.op_type != "Conv" || !op || op->dtype != DType::f32() || n.inputs.size() < 2 ||
        !g_.values[static_cast<size_t>(n.inputs[1])].constant)
      return std::nullopt;
    auto at = [&](const char* k) {
      auto it = op->ints.find(k);
      return it == op->ints.end() ? int64_t{0} : it->second;
    };
    const int64_t C = at("C");
    BlockedConv bc;
    std::ostringstream wl;
    if (op->op == "depthwise_conv2d") {
      bc.depthwise = true;
      bc.cb = bc.kb = channel_block(C);
      if (bc.cb == 0) return std::nullopt;
      wl << "depthwise_conv2d_nchwc:N=" << at("N") << ",C=" << C << ",H=" << at("H") << ",W=" << at("W")
         << ",R=" << at("R") << ",S=" << at("S") << ",stride=" << at("stride") << ",pad=" << at("pad")
         << ",dilation=" << at("dilation") << ",cb=" << bc.cb;
      if (at("stride_w") > 0) wl << ",stride_w=" << at("stride_w");
    } else if (op->op == "conv2d") {
      const int64_t K = at("K");
      bc.cb = input_block(C);
      bc.kb = channel_block(K);
      if (at("groups") > 1 || bc.cb == 0 || bc.kb == 0) return std::nullopt;
      wl << "conv2d_nchwc:N=" << at("N") << ",C=" << C << ",H=" << at("H") << ",W=" << at("W") << ",K=" << K
         << ",R=" << at("R") << ",S=" << at("S") << ",stride=" << at("stride") << ",pad=" << at("pad")
         << ",dilation=" << at("dilation") << ",cb=" << bc.cb << ",kb=" << bc.kb;
    } else {
      return std::nullopt;
    }
    for (const char* flag : {"bias", "relu", "relu6", "hswish", "hsigmoid"})
      if (at(flag) != 0) wl << "," << flag << "=1";
    bc.workload = wl.str();
    return bc;
  }

  void block_conv(Node n, const BlockedConv& bc) {
    Node pack;
    pack.op_type = kPackConvWeight;
    pack.name = n.name + ":pack_weight";
    pack.inputs = {n.inputs[1]};
    pack.attrs[kBlockIn] = bc.cb;
    pack.attrs[kBlockOut] = bc.kb;
    pack.attrs[kDepthwise] = int64_t{bc.depthwise ? 1 : 0};
    pack.outputs = {new_value(n.inputs[1], ":packed")};

    Node conv;
    conv.op_type = kConvBlocked;
    conv.name = n.name;
    conv.attrs[kWorkload] = bc.workload;
    conv.inputs = {blocked_copy(n.inputs[0], bc.cb), pack.outputs[0]};
    if (n.inputs.size() > 2 && n.inputs[2] >= 0) conv.inputs.push_back(n.inputs[2]);
    conv.outputs = {blocked_output(n.outputs[0], bc.kb)};
    g_.nodes.push_back(std::move(pack));
    g_.nodes.push_back(std::move(conv));
    ++stats_.blocked_convs;
  }

  // An element-wise node with a blocked operand runs blocked when its other
  // operands are scalars or tensors with the output's channels.
  bool block_elementwise(Node& n) {
    if (!elementwise_ops().count(n.op_type) || n.outputs.size() != 1) return false;
    const Value& out = g_.values[static_cast<size_t>(n.outputs[0])];
    if (out.shape.size() != 4 || out.dtype != DType::f32()) return false;
    int64_t block = 0;
    for (int v : n.inputs) {
      if (v < 0) continue;
      const Value& in = g_.values[static_cast<size_t>(v)];
      if (is_scalar(in)) continue;
      if (in.shape.size() != 4 || in.shape[1] != out.shape[1]) return false;
      auto b = blocked_.find(v);
      if (b == blocked_.end()) continue;
      const int64_t vb = block_of_.at(b->second);
      if (block != 0 && vb != block) return false;
      block = vb;
    }
    if (block == 0) return false;
    for (int& v : n.inputs)
      if (v >= 0 && !is_scalar(g_.values[static_cast<size_t>(v)])) v = blocked_copy(v, block);
    n.outputs[0] = blocked_output(n.outputs[0], block);
    g_.nodes.push_back(std::move(n));
    ++stats_.blocked_nodes;
    return true;
  }

  bool block_global_pool(Node& n) {
    if ((n.op_type != "GlobalAveragePool" && n.op_type != "GlobalMaxPool") || n.inputs.size() != 1) return false;
    auto b = blocked_.find(n.inputs[0]);
    if (b == blocked_.end() || g_.values[static_cast<size_t>(n.inputs[0])].shape.size() != 4) return false;
    const int64_t block = block_of_.at(b->second);
    n.inputs[0] = b->second;
    n.attrs[kBlockedLayout] = int64_t{1};
    n.outputs[0] = blocked_output(n.outputs[0], block);
    g_.nodes.push_back(std::move(n));
    ++stats_.blocked_nodes;
    return true;
  }

  // A new value after `of` (its element type; shapes come from inference).
  int new_value(int of, const std::string& suffix) {
    Value v;
    v.name = g_.values[static_cast<size_t>(of)].name + suffix;
    v.dtype = g_.values[static_cast<size_t>(of)].dtype;
    return g_.add_value(std::move(v));
  }

  // `v` blocked by `block` channels: its blocked copy, else a conversion.
  int blocked_copy(int v, int64_t block) {
    auto b = blocked_.find(v);
    if (b != blocked_.end() && block_of_.at(b->second) == block) return b->second;
    ensure_plain(v);
    Node to;
    to.op_type = kToBlocked;
    to.name = g_.values[static_cast<size_t>(v)].name + ":to_nchwc";
    to.inputs = {v};
    to.attrs[kBlock] = block;
    const int copy = new_value(v, ":nchw" + std::to_string(block) + "c");
    to.outputs = {copy};
    g_.nodes.push_back(std::move(to));
    if (!g_.values[static_cast<size_t>(v)].constant) ++stats_.layout_conversions;
    if (b == blocked_.end()) remember(v, copy, block);
    return copy;
  }

  // The blocked value a blocked node computes in place of `v`; v itself is
  // computed from it only if a node needs it (ensure_plain).
  int blocked_output(int v, int64_t block) {
    const int copy = new_value(v, ":nchw" + std::to_string(block) + "c");
    remember(v, copy, block);
    pending_.insert(v);
    return copy;
  }

  void remember(int v, int copy, int64_t block) {
    blocked_[v] = copy;
    block_of_[copy] = block;
  }

  // A value whose NCHW form no node computes yet gets its conversion.
  void ensure_plain(int v) {
    if (!pending_.erase(v)) return;
    Node from;
    from.op_type = kFromBlocked;
    from.name = g_.values[static_cast<size_t>(v)].name + ":to_nchw";
    from.inputs = {blocked_.at(v)};
    from.outputs = {v};
    g_.nodes.push_back(std::move(from));
    ++stats_.layout_conversions;
  }

  Graph& g_;
  const InferredGraph& inf_;
  PassStats& stats_;
  std::map<int, int> blocked_;       // value -> its blocked copy
  std::map<int, int64_t> block_of_;  // blocked copy -> channels per block
  std::set<int> pending_;            // values computed blocked only, so far
};

}  // namespace

void plan_layouts(Graph& g, PassStats* stats) {
  const InferredGraph inf = infer_and_fold(g);
  Planner(g, inf, stats).run();
}

}  // namespace kiln::graph
