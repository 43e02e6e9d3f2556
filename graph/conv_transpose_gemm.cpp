#include "graph/conv_transpose_gemm.h"

#include <algorithm>
#include <cstring>

#include "graph/shape_inference.h"

namespace kiln::graph {

namespace {

using Ints = std::vector<int64_t>;

Ints ints_attr(const Node& n, const std::string& name, const Ints& dflt) {
  auto it = n.attrs.find(name);
  if (it == n.attrs.end()) return dflt;
  const auto* v = std::get_if<Ints>(&it->second);
  return v ? *v : Ints{};
}

bool all_equal(const Ints& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

// The rewrite applies: rank 4, batch 1, f32, constant weights (and bias),
// one group, kernel == strides, no dilation, padding or output padding.
bool upsampling(const Graph& g, const Node& n) {
  if (n.op_type != "ConvTranspose" || n.inputs.size() < 2 || n.inputs[0] < 0 || n.inputs[1] < 0) return false;
  const Value& x = g.values[static_cast<size_t>(n.inputs[0])];
  const Value& w = g.values[static_cast<size_t>(n.inputs[1])];
  if (!x.shape_known || x.shape.size() != 4 || x.shape[0] != 1 || x.dtype != DType::f32()) return false;
  if (!w.constant || w.dtype != DType::f32() || w.shape.size() != 4 || w.shape[0] != x.shape[1]) return false;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    const Value& b = g.values[static_cast<size_t>(n.inputs[2])];
    if (!b.constant || b.dtype != DType::f32() || b.num_elements() != w.shape[1]) return false;
  }
  auto group = n.attrs.find("group");
  if (group != n.attrs.end() && std::get_if<int64_t>(&group->second) && std::get<int64_t>(group->second) != 1)
    return false;
  for (const char* unsupported : {"output_shape", "auto_pad"})
    if (n.attrs.count(unsupported)) return false;
  const Ints kernel = {w.shape[2], w.shape[3]};
  return ints_attr(n, "kernel_shape", kernel) == kernel && ints_attr(n, "strides", {1, 1}) == kernel &&
         all_equal(ints_attr(n, "dilations", {1, 1}), 1) && all_equal(ints_attr(n, "pads", {0, 0, 0, 0}), 0) &&
         all_equal(ints_attr(n, "output_padding", {0, 0}), 0);
}

}  // namespace

void conv_transpose_as_gemm(Graph& g, PassStats* stats) {
  // Shapes are needed, and inferring them costs a pass over the graph.
  if (std::none_of(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return n.op_type == "ConvTranspose"; })) return;
  infer_and_fold(g);
  std::vector<Node> nodes;
  for (Node& n : g.nodes) {
    if (!upsampling(g, n)) {
      nodes.push_back(std::move(n));
      continue;
    }
    const Ints xs = g.values[static_cast<size_t>(n.inputs[0])].shape;
    const HostTensor w = *g.values[static_cast<size_t>(n.inputs[1])].constant;  // g.values grows below
    const int64_t C = xs[1], H = xs[2], W = xs[3], K = w.shape[1], sh = w.shape[2], sw = w.shape[3];
    const int64_t M = K * sh * sw;
    auto constant = [&](const std::string& name, HostTensor t) {
      Value v;
      v.name = n.name + ":" + name;
      v.dtype = t.dtype;
      v.shape = t.shape;
      v.shape_known = true;
      v.constant = std::move(t);
      return g.add_value(std::move(v));
    };
    auto ints = [&](const std::string& name, const Ints& values) {
      HostTensor t(DType::i64(), {static_cast<int64_t>(values.size())});
      std::memcpy(t.bytes.data(), values.data(), values.size() * sizeof(int64_t));
      return constant(name, std::move(t));
    };
    auto fresh = [&](const std::string& name) {
      Value v;
      v.name = n.name + ":" + name;
      return g.add_value(std::move(v));
    };
    auto add = [&](const std::string& op, const std::string& name, std::vector<int> ins, int out) {
      Node m;
      m.op_type = op;
      m.name = n.name + ":" + name;
      m.inputs = std::move(ins);
      m.outputs = {out};
      nodes.push_back(std::move(m));
      return &nodes.back();
    };
    // Wt[(k, ph, pw), c] = W[c, k, ph, pw].
    HostTensor wt(DType::f32(), {M, C});
    const float* src = w.data<float>();
    float* dst = wt.data<float>();
    for (int64_t c = 0; c < C; ++c)
      for (int64_t m = 0; m < M; ++m) dst[m * C + c] = src[c * M + m];
    const int out = n.outputs[0];
    const int x2 = fresh("x2d"), y2 = fresh("gemm"), y5 = fresh("phases"), yt = fresh("interleaved");
    add("Reshape", "x2d", {n.inputs[0], ints("x2d_shape", {C, H * W})}, x2);
    add("MatMul", "gemm", {constant("wt", std::move(wt)), x2}, y2);
    add("Reshape", "phases", {y2, ints("phases_shape", {K, sh, sw, H, W})}, y5);
    const bool bias = n.inputs.size() > 2 && n.inputs[2] >= 0;
    const int before_bias = bias ? fresh("interleaved_nobias") : yt;
    add("Transpose", "interleave", {y5}, before_bias)->attrs["perm"] = Ints{0, 3, 1, 4, 2};
    if (bias) {
      HostTensor b = *g.values[static_cast<size_t>(n.inputs[2])].constant;
      b.shape = {K, 1, 1, 1, 1};
      add("Add", "bias", {before_bias, constant("bias", std::move(b))}, yt);
    }
    add("Reshape", "out", {yt, ints("out_shape", {1, K, H * sh, W * sw})}, out);
    ++stats->gemm_conv_transposes;
  }
  g.nodes = std::move(nodes);
}

}  // namespace kiln::graph
