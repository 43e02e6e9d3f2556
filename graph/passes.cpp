#include "graph/passes.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace kiln::graph {

namespace {

// A float attribute (an int one too), or `dflt`; nullopt when it has another type.
std::optional<double> float_attr(const Node& n, const std::string& name, double dflt) {
  auto it = n.attrs.find(name);
  if (it == n.attrs.end()) return dflt;
  if (auto* d = std::get_if<double>(&it->second)) return *d;
  if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  return std::nullopt;
}

// Who reads each value (nodes by index; graph outputs count as readers).
struct Uses {
  std::vector<std::vector<int>> readers;
  std::vector<bool> is_output;
  explicit Uses(const Graph& g) : readers(g.values.size()), is_output(g.values.size(), false) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (int v : g.nodes[i].inputs)
        if (v >= 0) readers[static_cast<size_t>(v)].push_back(static_cast<int>(i));
    for (int v : g.outputs) is_output[static_cast<size_t>(v)] = true;
  }
  // The only node reading v, or -1.
  int sole_reader(int v) const {
    const auto& r = readers[static_cast<size_t>(v)];
    if (is_output[static_cast<size_t>(v)] || r.size() != 1) return -1;
    return r[0];
  }
};

// An int-list attribute, or `dflt` when absent (nullopt when of another type).
std::optional<std::vector<int64_t>> ints_attr(const Node& n, const std::string& name, std::vector<int64_t> dflt) {
  auto it = n.attrs.find(name);
  if (it == n.attrs.end()) return dflt;
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  return std::nullopt;
}

bool all_equal(const std::vector<int64_t>& v) {
  return std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == v[0]; });
}

// A 2-D Conv whose explicit pads differ across its sides while its strides
// and dilations are the same on both axes (kiln's conv2d family then covers
// it once the padding is a copy of its own).
bool needs_padded_copy(const Node& conv) {
  auto auto_pad = conv.attrs.find("auto_pad");
  if (auto_pad != conv.attrs.end()) {
    auto* s = std::get_if<std::string>(&auto_pad->second);
    if (!s || *s != "NOTSET") return false;
  }
  auto pads = ints_attr(conv, "pads", {});
  auto strides = ints_attr(conv, "strides", {1, 1}), dilations = ints_attr(conv, "dilations", {1, 1});
  if (!pads || !strides || !dilations || pads->size() != 4 || strides->size() != 2 || dilations->size() != 2)
    return false;
  // Pads out of range stay on the convolution, whose definition reports them.
  const bool in_range =
      std::all_of(pads->begin(), pads->end(), [](int64_t p) { return p >= 0 && p <= kMaxWindowValue; });
  return in_range && !all_equal(*pads) && all_equal(*strides) && all_equal(*dilations);
}

const HostTensor* constant_of(const Graph& g, const Node& n, size_t i) {
  if (i >= n.inputs.size() || n.inputs[i] < 0) return nullptr;
  const Value& v = g.values[static_cast<size_t>(n.inputs[i])];
  return v.constant && v.dtype == DType::f32() ? &*v.constant : nullptr;
}

// A constant that holds one value per output channel K of a 2-D
// convolution's [N,K,H,W] output (shape [K,1,1] or [1,K,1,1]) or a single
// value: its K values, else empty.
std::vector<double> per_channel(const HostTensor& c, int64_t K) {
  // A single value of rank <= 4 broadcasts onto [N,K,H,W] without changing its shape.
  if (c.num_elements() == 1) return c.shape.size() <= 4 ? std::vector<double>(static_cast<size_t>(K), c.get_float(0)) : std::vector<double>{};
  const std::vector<int64_t>& s = c.shape;
  const bool channel = (s.size() == 3 && s[0] == K && s[1] == 1 && s[2] == 1) ||
                       (s.size() == 4 && s[0] == 1 && s[1] == K && s[2] == 1 && s[3] == 1);
  std::vector<double> v;
  if (!channel) return v;
  for (int64_t k = 0; k < K; ++k) v.push_back(c.get_float(k));
  return v;
}

int add_constant(Graph& g, const std::string& name, HostTensor t) {
  Value v;
  v.name = name;
  v.dtype = t.dtype;
  v.shape = t.shape;
  v.shape_known = true;
  v.constant = std::move(t);
  return g.add_value(std::move(v));
}

// conv(x) * s + b per output channel, folded into the conv's weights and bias.
void fold_into_conv(Graph& g, Node& conv, const std::vector<double>& scale, const std::vector<double>& shift) {
  const HostTensor& w = *constant_of(g, conv, 1);
  const int64_t K = w.shape[0], per_k = w.num_elements() / K;  // K > 0: conv_foldable
  HostTensor nw(DType::f32(), w.shape), nb(DType::f32(), {K});
  const HostTensor* b = constant_of(g, conv, 2);
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t i = 0; i < per_k; ++i) nw.set_float(k * per_k + i, w.get_float(k * per_k + i) * scale[static_cast<size_t>(k)]);
    const double old = b ? b->get_float(k) : 0.0;
    nb.set_float(k, old * scale[static_cast<size_t>(k)] + shift[static_cast<size_t>(k)]);
  }
  conv.inputs.resize(3);
  conv.inputs[1] = add_constant(g, conv.name + ":folded_weight", std::move(nw));
  conv.inputs[2] = add_constant(g, conv.name + ":folded_bias", std::move(nb));
}

bool conv_foldable(const Graph& g, const Node& n) {
  if (n.op_type != "Conv" || n.attrs.count(kFusedActivation)) return false;
  const HostTensor* w = constant_of(g, n, 1);
  if (!w || w->shape.size() != 4 || w->shape[0] <= 0 || n.outputs.size() != 1) return false;
  if (n.inputs.size() < 3 || n.inputs[2] < 0) return true;
  const HostTensor* b = constant_of(g, n, 2);
  return b && b->num_elements() == w->shape[0];
}

double scalar_const(const Graph& g, const Node& n, size_t i, bool* ok) {
  const HostTensor* c = constant_of(g, n, i);
  *ok = c && c->num_elements() == 1;
  return *ok ? c->get_float(0) : 0.0;
}

// The activation `n` applies to value x, or "" (with the nodes it spans).
std::string activation_after(const Graph& g, const Uses& uses, int x, std::vector<int>* span) {
  const auto& readers = uses.readers[static_cast<size_t>(x)];
  if (uses.is_output[static_cast<size_t>(x)]) return "";
  if (readers.size() == 1) {
    const Node& n = g.nodes[static_cast<size_t>(readers[0])];
    span->assign({readers[0]});
    if (n.op_type == "Relu") return "relu";
    if (n.op_type == "HardSwish") return "hswish";
    if (n.op_type == "HardSigmoid") {
      const std::optional<double> alpha = float_attr(n, "alpha", 0.2), beta = float_attr(n, "beta", 0.5);
      if (alpha && beta && std::abs(*alpha - 1.0 / 6.0) < 1e-6 && *beta == 0.5) return "hsigmoid";
    }
    if (n.op_type == "Clip") {
      double lo = -1, hi = -1;
      bool ok_lo = true, ok_hi = true;
      if (g.opset < 11) {
        const std::optional<double> a = n.attrs.count("min") ? float_attr(n, "min", 0) : std::nullopt;
        const std::optional<double> b = n.attrs.count("max") ? float_attr(n, "max", 0) : std::nullopt;
        ok_lo = a.has_value();
        ok_hi = b.has_value();
        if (ok_lo) lo = *a;
        if (ok_hi) hi = *b;
      } else {
        lo = scalar_const(g, n, 1, &ok_lo);
        hi = scalar_const(g, n, 2, &ok_hi);
      }
      if (ok_lo && ok_hi && lo == 0.0 && hi == 6.0) return "relu6";
    }
    return "";
  }
  // Hard-swish as exporters spell it: Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6).
  if (readers.size() != 2) return "";
  int add = -1, mul = -1;
  for (int r : readers) {
    const std::string& op = g.nodes[static_cast<size_t>(r)].op_type;
    if (op == "Add") add = r;
    if (op == "Mul") mul = r;
  }
  if (add < 0 || mul < 0) return "";
  const Node& a = g.nodes[static_cast<size_t>(add)];
  const Node& m0 = g.nodes[static_cast<size_t>(mul)];
  if (a.inputs.size() != 2 || m0.inputs.size() != 2) return "";
  bool ok = false;
  const int three_at = a.inputs[0] == x ? 1 : 0;
  if (scalar_const(g, a, static_cast<size_t>(three_at), &ok) != 3.0 || !ok) return "";
  const int clip = uses.sole_reader(a.outputs[0]);
  if (clip < 0) return "";
  const Node& c = g.nodes[static_cast<size_t>(clip)];
  if (c.op_type != "Clip") return "";
  std::vector<int> ignored;
  if (activation_after(g, uses, a.outputs[0], &ignored) != "relu6") return "";
  const Node& m = g.nodes[static_cast<size_t>(mul)];
  if (!((m.inputs[0] == x && m.inputs[1] == c.outputs[0]) || (m.inputs[1] == x && m.inputs[0] == c.outputs[0]))) return "";
  const int div = uses.sole_reader(m.outputs[0]);
  if (div < 0) return "";
  const Node& d = g.nodes[static_cast<size_t>(div)];
  if (d.op_type != "Div" || d.inputs.size() != 2 || d.inputs[0] != m.outputs[0] || scalar_const(g, d, 1, &ok) != 6.0 || !ok) return "";
  if (uses.sole_reader(c.outputs[0]) != mul) return "";
  span->assign({add, clip, mul, div});
  return "hswish";
}

}  // namespace

PassStats optimize(Graph& g, bool pack_weights) {
  PassStats st;
  std::set<int> removed;
  auto rebuild = [&]() {
    std::vector<Node> kept;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (!removed.count(static_cast<int>(i))) kept.push_back(std::move(g.nodes[i]));
    g.nodes = std::move(kept);
    removed.clear();
  };

  // 1. Per-channel affine arithmetic after a convolution folds into it.
  for (bool changed = true; changed;) {
    changed = false;
    Uses uses(g);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      Node& conv = g.nodes[i];
      if (removed.count(static_cast<int>(i)) || !conv_foldable(g, conv)) continue;
      const int next = uses.sole_reader(conv.outputs[0]);
      if (next < 0 || removed.count(next)) continue;
      const Node& n = g.nodes[static_cast<size_t>(next)];
      const int64_t K = constant_of(g, conv, 1)->shape[0];
      std::vector<double> scale(static_cast<size_t>(K), 1.0), shift(static_cast<size_t>(K), 0.0);
      if (n.op_type == "BatchNormalization" && n.outputs.size() == 1) {
        const HostTensor *s = constant_of(g, n, 1), *b = constant_of(g, n, 2), *mean = constant_of(g, n, 3),
                         *var = constant_of(g, n, 4);
        if (!s || !b || !mean || !var || s->num_elements() != K || b->num_elements() != K || mean->num_elements() != K ||
            var->num_elements() != K)
          continue;
        const std::optional<double> eps = float_attr(n, "epsilon", 1e-5);
        if (!eps) continue;
        const double e = *eps;
        for (int64_t k = 0; k < K; ++k) {
          scale[static_cast<size_t>(k)] = s->get_float(k) / std::sqrt(var->get_float(k) + e);
          shift[static_cast<size_t>(k)] = b->get_float(k) - mean->get_float(k) * scale[static_cast<size_t>(k)];
        }
      } else if ((n.op_type == "Mul" || n.op_type == "Add") && n.inputs.size() == 2) {
        const size_t other = n.inputs[0] == conv.outputs[0] ? 1 : 0;
        const HostTensor* c = constant_of(g, n, other);
        if (!c) continue;
        const std::vector<double> v = per_channel(*c, K);
        if (v.empty()) continue;
        (n.op_type == "Mul" ? scale : shift) = v;
      } else {
        continue;
      }
      fold_into_conv(g, conv, scale, shift);
      conv.outputs[0] = n.outputs[0];
      removed.insert(next);
      ++st.folded_affine;
      changed = true;
    }
    rebuild();
  }

  // 2. Activations fuse into the convolution's epilogue.
  {
    Uses uses(g);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      Node& conv = g.nodes[i];
      if (conv.op_type != "Conv" || conv.attrs.count(kFusedActivation)) continue;
      std::vector<int> span;
      const std::string act = activation_after(g, uses, conv.outputs[0], &span);
      if (act.empty()) continue;
      conv.attrs[kFusedActivation] = act;
      conv.outputs[0] = g.nodes[static_cast<size_t>(span.back())].outputs[0];
      removed.insert(span.begin(), span.end());
      ++st.fused_activation;
    }
    rebuild();
  }

  // 3. A constant row added to a matrix product becomes its bias.
  {
    Uses uses(g);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      Node& mm = g.nodes[i];
      if (mm.op_type != "MatMul" || mm.inputs.size() != 2 || mm.inputs[0] < 0 || mm.inputs[1] < 0) continue;
      const int next = uses.sole_reader(mm.outputs[0]);
      if (next < 0) continue;
      const Node& add = g.nodes[static_cast<size_t>(next)];
      if (add.op_type != "Add" || add.inputs.size() != 2) continue;
      const size_t other = add.inputs[0] == mm.outputs[0] ? 1 : 0;
      const HostTensor* c = constant_of(g, add, other);
      const Value& b = g.values[static_cast<size_t>(mm.inputs[1])];
      if (!c || c->shape.size() != 1 || !b.constant || b.shape.size() != 2 || c->shape[0] != b.shape[1]) continue;
      mm.inputs.push_back(add.inputs[other]);
      mm.outputs[0] = add.outputs[0];
      removed.insert(next);
      ++st.fused_bias;
    }
    rebuild();
  }
  // 4. Constant matrix weights are packed once, at compile time, into the
  //    panels kiln's matmul_packed_b reads (the pack node folds).
  {
    std::vector<Node> nodes;
    for (Node& mm : g.nodes) {
      const bool eligible = mm.op_type == "MatMul" && mm.inputs.size() >= 2 && mm.inputs[0] >= 0 && mm.inputs[1] >= 0;
      const Value* b = eligible ? &g.values[static_cast<size_t>(mm.inputs[1])] : nullptr;
      if (!pack_weights || !b || !b->constant || b->dtype != DType::f32() || b->shape.size() != 2 ||
          g.values[static_cast<size_t>(mm.inputs[0])].dtype != DType::f32()) {
        nodes.push_back(std::move(mm));
        continue;
      }
      Node pack;
      pack.op_type = kPackMatmulB;
      pack.name = mm.name + ":pack_b";
      pack.inputs = {mm.inputs[1]};
      pack.attrs[kPackedPanel] = kPackPanelColumns;
      Value packed;
      packed.name = b->name + ":packed";
      pack.outputs = {g.add_value(std::move(packed))};
      mm.inputs[1] = pack.outputs[0];
      mm.attrs[kPackedPanel] = kPackPanelColumns;
      mm.attrs[kPackedColumns] = g.values[static_cast<size_t>(pack.inputs[0])].shape[1];
      nodes.push_back(std::move(pack));
      nodes.push_back(std::move(mm));
      ++st.packed_weights;
    }
    g.nodes = std::move(nodes);
  }
  // 5. A 2-D convolution padded differently on its sides (pads (0,1,0,1)
  //    around a 1x3 kernel, asymmetric padding written out) reads a
  //    zero-padded copy and pads nothing: kiln's conv2d family has one
  //    padding for every side, and the copy is one pass over the input.
  {
    std::vector<Node> nodes;
    for (Node& conv : g.nodes) {
      if (conv.op_type == "Conv" && !conv.inputs.empty() && conv.inputs[0] >= 0 && needs_padded_copy(conv)) {
        Node pad;
        pad.op_type = kPadSpatial;
        pad.name = conv.name + ":pad";
        pad.inputs = {conv.inputs[0]};
        pad.attrs[kSpatialPads] = std::get<std::vector<int64_t>>(conv.attrs.at("pads"));
        Value padded;
        padded.name = g.values[static_cast<size_t>(conv.inputs[0])].name + ":padded";
        pad.outputs = {g.add_value(std::move(padded))};
        conv.inputs[0] = pad.outputs[0];
        conv.attrs["pads"] = std::vector<int64_t>{0, 0, 0, 0};
        nodes.push_back(std::move(pad));
        ++st.padded_inputs;
      }
      nodes.push_back(std::move(conv));
    }
    g.nodes = std::move(nodes);
  }
  return st;
}

}  // namespace kiln::graph
