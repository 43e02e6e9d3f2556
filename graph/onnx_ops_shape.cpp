// ONNX operators that move or select elements: Shape, Reshape and its
// relatives (views of the same bytes), Transpose, Concat, Slice, Gather.
#include <algorithm>
#include <limits>

#include "graph/onnx_op_util.h"

namespace kiln::graph {

namespace {

// A constant 1-D int64 tensor computed from its values.
Tensor int64_table(const std::vector<int64_t>& values, const std::string& name) {
  return compute({Expr(static_cast<int64_t>(values.size()))},
                 [&](const std::vector<Var>& i) {
                   Expr e = make_const(DType::i64(), values.back());
                   for (size_t k = values.size() - 1; k-- > 0;)
                     e = select(i[0] == static_cast<int>(k), make_const(DType::i64(), values[k]), e);
                   return e;
                 },
                 name);
}

NodeCompute shape_op(const NodeArgs& a) {
  const std::vector<int64_t>& s = a.shape(0);
  const int r = static_cast<int>(s.size());
  // start and end are clamped to the rank, as slice bounds are.
  int start = static_cast<int>(std::clamp<int64_t>(a.attr_int("start", 0), -r, r));
  int end = static_cast<int>(std::clamp<int64_t>(a.attr_int("end", r), -r, r));
  if (start < 0) start += r;
  if (end < 0) end += r;
  std::vector<int64_t> dims(s.begin() + start, s.begin() + std::max(start, end));
  if (dims.empty()) a.fail("selects no dimensions (kiln computes no empty tensors)");
  NodeCompute c = single_output({Tensor()}, int64_table(dims, "shape"), {static_cast<int64_t>(dims.size())});
  c.shape_only = true;
  return c;
}

// Reshape and its relatives: the output reads the input's flat index.
NodeCompute view(const NodeArgs& a, const std::vector<int64_t>& out_shape) {
  int64_t n = 1;
  for (int64_t d : out_shape) n *= d;
  if (n != a.input(0).num_elements())
    a.fail("makes shape " + shape_str(out_shape) + " from " + shape_str(a.shape(0)) + ", which has " +
           std::to_string(a.input(0).num_elements()) + " elements, not " + std::to_string(n));
  Tensor x = input_placeholder(a, 0);
  const std::vector<int64_t> in_shape = a.shape(0);
  Tensor out = compute_shape(out_shape, [&](const std::vector<Var>& i) {
    std::vector<Expr> idx(i.begin(), i.end());
    return x(unflatten(flat_index(idx, out_shape), in_shape));
  }, "out", "injective");
  NodeCompute c = single_output({x}, out, out_shape);
  c.is_view = true;
  return c;
}

NodeCompute reshape(const NodeArgs& a) {
  std::vector<int64_t> spec = a.opset() < 5 ? a.attr_ints("shape", {}) : a.constant_ints(1, "shape");
  const bool allowzero = a.attr_int("allowzero", 0) != 0;
  const std::vector<int64_t>& in = a.shape(0);
  int infer = -1;
  int64_t known = 1;
  for (size_t k = 0; k < spec.size(); ++k) {
    if (spec[k] == 0 && !allowzero) {
      if (k >= in.size()) a.fail("copies dimension " + std::to_string(k) + " of a rank-" + std::to_string(in.size()) + " input");
      spec[k] = in[k];
    }
    if (spec[k] == -1) {
      if (infer >= 0) a.fail("has more than one -1 in its shape");
      infer = static_cast<int>(k);
      continue;
    }
    if (spec[k] <= 0) a.fail("has extent " + std::to_string(spec[k]) + " in its shape");
    if (known > kMaxTensorElements / spec[k])
      a.fail("has shape " + shape_str(spec) + ", more than the " + std::to_string(kMaxTensorElements) +
             " elements kiln handles in one tensor");
    known *= spec[k];
  }
  if (infer >= 0) {
    if (a.input(0).num_elements() % known != 0)
      a.fail("cannot reshape " + shape_str(in) + " into " + shape_str(spec));
    spec[static_cast<size_t>(infer)] = a.input(0).num_elements() / known;
  }
  return view(a, spec);
}

NodeCompute flatten(const NodeArgs& a) {
  const std::vector<int64_t>& in = a.shape(0);
  const int r = static_cast<int>(in.size());
  // axis in [-r, r]: the number of leading dimensions kept in the first extent.
  int64_t ax = a.attr_int("axis", 1);
  if (ax < -r || ax > r) a.fail("has axis " + std::to_string(ax) + ", outside [-" + std::to_string(r) + ", " + std::to_string(r) + "]");
  if (ax < 0) ax += r;
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < r; ++k) (k < ax ? outer : inner) *= in[static_cast<size_t>(k)];
  return view(a, {outer, inner});
}

std::vector<int64_t> axes_of(const NodeArgs& a, int since_input_opset) {
  if (a.opset() >= since_input_opset) return a.has_input(1) ? a.constant_ints(1, "axes") : std::vector<int64_t>{};
  return a.attr_ints("axes", {});
}

NodeCompute squeeze(const NodeArgs& a) {
  const std::vector<int64_t>& in = a.shape(0);
  const int r = static_cast<int>(in.size());
  std::vector<int64_t> axes = axes_of(a, 13);
  std::vector<bool> drop(in.size(), false);
  for (int64_t ax : axes) {
    const int k = a.axis(ax, r);
    if (in[static_cast<size_t>(k)] != 1) a.fail("squeezes axis " + std::to_string(k) + " of extent " + std::to_string(in[static_cast<size_t>(k)]));
    drop[static_cast<size_t>(k)] = true;
  }
  std::vector<int64_t> out;
  for (size_t k = 0; k < in.size(); ++k)
    if (!(axes.empty() ? in[k] == 1 : drop[k])) out.push_back(in[k]);
  return view(a, out);
}

NodeCompute unsqueeze(const NodeArgs& a) {
  const std::vector<int64_t>& in = a.shape(0);
  const std::vector<int64_t> axes = axes_of(a, 13);
  if (axes.empty()) a.fail("has no axes to insert (ONNX requires them)");
  const int r = static_cast<int>(in.size() + axes.size());
  std::vector<bool> ones(static_cast<size_t>(r), false);
  for (int64_t ax : axes) {
    const size_t k = static_cast<size_t>(a.axis(ax, r));
    if (ones[k]) a.fail("names axis " + std::to_string(k) + " twice");
    ones[k] = true;
  }
  std::vector<int64_t> out;
  size_t next = 0;
  for (int k = 0; k < r; ++k) out.push_back(ones[static_cast<size_t>(k)] ? 1 : in[next++]);
  return view(a, out);
}

NodeCompute transpose(const NodeArgs& a) {
  const std::vector<int64_t>& in = a.shape(0);
  const int r = static_cast<int>(in.size());
  std::vector<int64_t> perm = a.attr_ints("perm", {});
  if (perm.empty())
    for (int k = r - 1; k >= 0; --k) perm.push_back(k);
  if (static_cast<int>(perm.size()) != r) a.fail("has a perm of " + std::to_string(perm.size()) + " axes for rank " + std::to_string(r));
  std::vector<int64_t> out(in.size());
  std::vector<bool> seen(in.size(), false);
  for (int k = 0; k < r; ++k) {
    const int p = a.axis(perm[static_cast<size_t>(k)], r);
    if (seen[static_cast<size_t>(p)]) a.fail("has a perm that names axis " + std::to_string(p) + " twice");
    seen[static_cast<size_t>(p)] = true;
    perm[static_cast<size_t>(k)] = p;
    out[static_cast<size_t>(k)] = in[static_cast<size_t>(p)];
  }
  Tensor x = input_placeholder(a, 0);
  Tensor t = compute_shape(out, [&](const std::vector<Var>& i) {
    std::vector<Expr> idx(in.size());
    for (int k = 0; k < r; ++k) idx[static_cast<size_t>(perm[static_cast<size_t>(k)])] = i[static_cast<size_t>(k)];
    return x(idx);
  }, "out", "injective");
  return single_output({x}, t, out);
}

NodeCompute concat(const NodeArgs& a) {
  const int r = a.rank(0);
  if (r == 0) a.fail("joins scalars (its inputs need at least one axis)");
  const int ax = a.axis(a.attr_int("axis", 0), r);
  std::vector<int64_t> out = a.shape(0);
  std::vector<Tensor> ins;
  std::vector<int64_t> starts;
  out[static_cast<size_t>(ax)] = 0;
  for (int k = 0; k < a.num_inputs(); ++k) {
    const std::vector<int64_t>& s = a.shape(k);
    if (static_cast<int>(s.size()) != r) a.fail("joins tensors of different ranks");
    for (int d = 0; d < r; ++d)
      if (d != ax && s[static_cast<size_t>(d)] != out[static_cast<size_t>(d)])
        a.fail("joins shapes " + shape_str(a.shape(0)) + " and " + shape_str(s) + ", which differ off axis " + std::to_string(ax));
    starts.push_back(out[static_cast<size_t>(ax)]);
    out[static_cast<size_t>(ax)] += s[static_cast<size_t>(ax)];
    ins.push_back(input_placeholder(a, k));
  }
  Tensor t = compute_shape(out, [&](const std::vector<Var>& i) {
    Expr e;
    for (size_t k = ins.size(); k-- > 0;) {
      std::vector<Expr> idx(i.begin(), i.end());
      idx[static_cast<size_t>(ax)] = i[static_cast<size_t>(ax)] - Expr(starts[k]);
      // Reads only happen on the taken branch; clamp keeps the others in bounds.
      idx[static_cast<size_t>(ax)] = max(min(idx[static_cast<size_t>(ax)], Expr(a.shape(static_cast<int>(k))[static_cast<size_t>(ax)] - 1)), Expr(0));
      Expr v = ins[k](idx);
      e = e.defined() ? select(i[static_cast<size_t>(ax)] < Expr(starts[k + 1]), v, e) : v;
    }
    return e;
  }, "out", "injective");
  return single_output(ins, t, out);
}

NodeCompute slice(const NodeArgs& a) {
  const std::vector<int64_t>& in = a.shape(0);
  const int r = static_cast<int>(in.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (a.opset() < 10) {
    starts = a.attr_ints("starts", {});
    ends = a.attr_ints("ends", {});
    axes = a.attr_ints("axes", {});
  } else {
    starts = a.constant_ints(1, "starts");
    ends = a.constant_ints(2, "ends");
    if (a.has_input(3)) axes = a.constant_ints(3, "axes");
    if (a.has_input(4)) steps = a.constant_ints(4, "steps");
  }
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    a.fail("has starts, ends, axes and steps of different lengths");
  std::vector<int64_t> begin(in.size(), 0), step(in.size(), 1), out = in;
  for (size_t k = 0; k < starts.size(); ++k) {
    const int ax = a.axis(axes[k], r);
    const int64_t d = in[static_cast<size_t>(ax)], st = steps[k];
    if (st == 0) a.fail("has a step of 0");
    auto norm = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0) v += d;
      return std::clamp<int64_t>(v, lo, hi);
    };
    const int64_t s = st > 0 ? norm(starts[k], 0, d) : norm(starts[k], 0, d - 1);
    const int64_t e = st > 0 ? norm(ends[k], 0, d) : norm(std::max<int64_t>(ends[k], -d - 1), -1, d - 1);
    const int64_t n = st > 0 ? std::max<int64_t>(0, (e - s + st - 1) / st) : std::max<int64_t>(0, (s - e - st - 1) / -st);
    if (n == 0) a.fail("selects no elements on axis " + std::to_string(ax) + " (kiln computes no empty tensors)");
    begin[static_cast<size_t>(ax)] = s;
    step[static_cast<size_t>(ax)] = st;
    out[static_cast<size_t>(ax)] = n;
  }
  Tensor x = input_placeholder(a, 0);
  Tensor t = compute_shape(out, [&](const std::vector<Var>& i) {
    std::vector<Expr> idx;
    for (size_t k = 0; k < in.size(); ++k) idx.push_back(Expr(begin[k]) + i[k] * Expr(step[k]));
    return x(idx);
  }, "out", "injective");
  return single_output({x}, t, out);
}

NodeCompute gather(const NodeArgs& a) {
  const std::vector<int64_t>& in = a.shape(0);
  const std::vector<int64_t>& ind = a.shape(1);
  if (in.empty()) a.fail("gathers from a scalar");
  const int ax = a.axis(a.attr_int("axis", 0), static_cast<int>(in.size()));
  if (!a.input(1).dtype.is_integer()) a.fail("has indices of type " + a.input(1).dtype.str());
  std::vector<int64_t> out(in.begin(), in.begin() + ax);
  out.insert(out.end(), ind.begin(), ind.end());
  out.insert(out.end(), in.begin() + ax + 1, in.end());
  Tensor x = input_placeholder(a, 0), indices = input_placeholder(a, 1);
  const int64_t d = in[static_cast<size_t>(ax)];
  // ONNX makes an index outside [-d, d-1] an error. Indices known before
  // the network runs are checked here; those computed at run time are
  // clamped below, which keeps every read inside the input.
  if (a.input(1).constant) {
    const std::vector<int64_t> values = a.constant_ints(1, "indices");
    for (size_t k = 0; k < values.size(); ++k)
      if (values[k] < -d || values[k] >= d)
        a.fail("has index " + std::to_string(values[k]) + " (element " + std::to_string(k) +
               " of its indices) outside [" + std::to_string(-d) + ", " + std::to_string(d - 1) +
               "], the range of axis " + std::to_string(ax) + " (extent " + std::to_string(d) + ")");
  }
  Tensor t = compute_shape(out, [&](const std::vector<Var>& i) {
    std::vector<Expr> at(i.begin() + ax, i.begin() + ax + static_cast<long>(ind.size()));
    if (at.empty()) at.push_back(Expr(0));
    Expr j = cast(DType::i32(), indices(at));
    j = select(j < 0, j + Expr(static_cast<int>(d)), j);
    j = max(min(j, Expr(static_cast<int>(d - 1))), Expr(0));  // run-time indices out of range (an ONNX error)
    std::vector<Expr> idx(i.begin(), i.begin() + ax);
    idx.push_back(j);
    idx.insert(idx.end(), i.begin() + ax + static_cast<long>(ind.size()), i.end());
    if (in.size() == 1 && idx.empty()) idx.push_back(j);
    return x(idx);
  }, "out", "injective");
  return single_output({x, indices}, t, out);
}

}  // namespace

void add_shape_ops(std::map<std::string, OpBuilder>& ops) {
  ops["Shape"] = shape_op;
  ops["Reshape"] = reshape;
  ops["Flatten"] = flatten;
  ops["Squeeze"] = squeeze;
  ops["Unsqueeze"] = unsqueeze;
  ops["Identity"] = [](const NodeArgs& a) { return view(a, a.shape(0)); };
  ops["Transpose"] = transpose;
  ops["Concat"] = concat;
  ops["Slice"] = slice;
  ops["Gather"] = gather;
}

}  // namespace kiln::graph
