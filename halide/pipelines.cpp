#include "halide/pipelines.h"

#include <stdexcept>

namespace kiln::halide_baseline {

using namespace Halide;

namespace {

// Column panel width of matmul's packed weights and output: four AVX-512
// vectors of f32, so that a panel is read contiguously (a plain [K, 1024]
// matrix is read at a 4 KiB stride, which defeats the caches and the
// prefetchers). Of 16, 32, 64 and 128, 64 gave Adams2019 its best matmul
// 1024^3 (222 GFLOP/s against 206 for 32 and 186-222 for 128).
constexpr int kPanel = 64;

// Output channel block of conv2d's weights and output. 32 let Adams2019 find
// register tiles of several pixels (196-227 GFLOP/s on ResNet 3x3 and 1x1
// layers); 16 and 64 left it with one pixel per tile (about 60).
constexpr int kChannelBlock = 32;

constexpr int kVector = 16;  // f32 lanes of an AVX-512 vector

int64_t get(const std::map<std::string, int64_t>& p, const std::string& name, int64_t fallback) {
  auto it = p.find(name);
  return it == p.end() ? fallback : it->second;
}

int need(const std::map<std::string, int64_t>& p, const std::string& name) {
  auto it = p.find(name);
  if (it == p.end()) throw std::invalid_argument("missing parameter " + name);
  return static_cast<int>(it->second);
}

Box box_of(const std::vector<int64_t>& row_major_shape) {
  Box b;
  for (size_t i = row_major_shape.size(); i-- > 0;) b.emplace_back(0, static_cast<int>(row_major_shape[i]));
  return b;
}

Region region_of(const Box& b) {
  Region r;
  for (auto& [min, extent] : b) r.emplace_back(min, extent);
  return r;
}

// Exact bounds and dense strides: the JIT then compiles for these sizes.
void pin(OutputImageParam p, const Box& b) {
  int stride = 1;
  for (size_t d = 0; d < b.size(); ++d) {
    p.dim(static_cast<int>(d)).set_bounds(b[d].first, b[d].second).set_stride(stride);
    stride *= b[d].second;
  }
}

ImageParam input(const Box& b, const std::string& name) {
  ImageParam p(Float(32), static_cast<int>(b.size()), name);
  pin(p, b);
  p.set_estimates(region_of(b));
  return p;
}

// An input that Halide reads in kiln's layout.
ImageParam as_is(OpPipeline& pl, const std::vector<int64_t>& shape, const std::string& name) {
  ImageParam p = input(box_of(shape), name);
  pl.inputs.push_back(p);
  pl.prepare.push_back({p, Func(), box_of(shape)});
  return p;
}

// An input that an adapter converts first: `source` is kiln's array,
// `convert` (defined on it by the caller) fills `box`.
struct Converted {
  ImageParam source, param;
  Func convert;
};
Converted converted(OpPipeline& pl, const std::vector<int64_t>& shape, const Box& box, const std::string& name) {
  Converted c{input(box_of(shape), name + "_kiln"), input(box, name), Func(name + "_to_halide")};
  pl.inputs.push_back(c.param);
  pl.prepare.push_back({c.source, c.convert, box});
  return c;
}

void set_output(OpPipeline& pl, Func out, const Box& box) {
  pin(out.output_buffer(), box);
  out.set_estimates(region_of(box));
  pl.output = out;
  pl.output_box = box;
}

Expr epilogue(Expr v, bool relu, bool gelu) {
  if (relu) return max(v, 0.0f);
  if (gelu) return 0.5f * v * (1.0f + erf(v * 0.70710678118654752f));
  return v;
}

// A convolution's activation flags (kiln's kernels/activation.h).
Expr conv_activation(Expr v, const std::map<std::string, int64_t>& p) {
  auto relu6 = [](Expr x) { return min(max(x, 0.0f), 6.0f); };
  if (get(p, "relu", 0)) return max(v, 0.0f);
  if (get(p, "relu6", 0)) return relu6(v);
  if (get(p, "hswish", 0)) return v * relu6(v + 3.0f) / 6.0f;
  if (get(p, "hsigmoid", 0)) return relu6(v + 3.0f) / 6.0f;
  return v;
}

Var x("x"), y("y"), z("z"), w("w");

// batch_matmul: out(n, m, b) = sum_k a(m, k, b) * b(k, n, b), in kiln's
// layouts (both operands are activations: oneDNN does not repack them either).
OpPipeline batch_matmul(const std::map<std::string, int64_t>& p, const std::vector<std::vector<int64_t>>& in,
                        const std::vector<int64_t>& out_shape) {
  OpPipeline pl;
  bool ta = get(p, "trans_a", 0), tb = get(p, "trans_b", 0);
  ImageParam A = as_is(pl, in.at(0), "A"), B = as_is(pl, in.at(1), "B");
  RDom r(0, need(p, "K"), "r");
  Func prod("prod"), out("out");
  prod(x, y, z) = 0.0f;
  prod(x, y, z) += (ta ? A(y, r, z) : A(r, y, z)) * (tb ? B(r, x, z) : B(x, r, z));
  out(x, y, z) = epilogue(prod(x, y, z), get(p, "relu", 0), get(p, "gelu", 0));
  set_output(pl, out, box_of(out_shape));
  pl.layout = "kiln's row-major layouts";
  return pl;
}

// matmul and dense: out[M, N] = a[M, K] . b[K, N] (+ bias[N]). The constant
// operand b (dense's weight [OUT, IN] is b transposed) is packed into
// column panels, bp(ni, k, no) = b[k][no * kPanel + ni] (zero past N), and
// Halide writes the output in the same panels.
OpPipeline gemm(const std::string& op, const std::map<std::string, int64_t>& p,
                const std::vector<std::vector<int64_t>>& in, const std::vector<int64_t>& out_shape) {
  OpPipeline pl;
  const bool dense = op == "dense";
  int M = static_cast<int>(out_shape.at(0)), N = static_cast<int>(out_shape.at(1));
  int K = dense ? need(p, "IN") : need(p, "K");
  bool ta = !dense && get(p, "trans_a", 0), tb = dense || get(p, "trans_b", 0);
  int panels = (N + kPanel - 1) / kPanel;
  Var ni("ni"), m("m"), no("no"), k("k");
  ImageParam A = as_is(pl, in.at(0), "A");
  Converted B = converted(pl, in.at(1), {{0, kPanel}, {0, K}, {0, panels}}, "B");
  Func b_src = BoundaryConditions::constant_exterior(B.source, 0.0f);
  B.convert(ni, k, no) = tb ? b_src(k, no * kPanel + ni) : b_src(no * kPanel + ni, k);
  RDom r(0, K, "r");
  Func prod("prod"), out("out");
  prod(ni, m, no) = 0.0f;
  prod(ni, m, no) += (ta ? A(m, r) : A(r, m)) * B.param(ni, r, no);
  Expr v = prod(ni, m, no);
  if (get(p, "bias", 0)) {
    Converted bias = converted(pl, in.at(2), {{0, kPanel}, {0, panels}}, "bias");
    bias.convert(ni, no) = BoundaryConditions::constant_exterior(bias.source, 0.0f)(no * kPanel + ni);
    v = v + bias.param(ni, no);
  }
  out(ni, m, no) = epilogue(v, get(p, "relu", 0), get(p, "gelu", 0));
  Box out_box = {{0, kPanel}, {0, M}, {0, panels}};
  set_output(pl, out, out_box);
  pl.finish.source = input(out_box, "out_panels");
  pl.finish.convert = Func("out_to_kiln");
  pl.finish.convert(x, y) = pl.finish.source(x % kPanel, y, x / kPanel);
  pl.finish.box = box_of(out_shape);
  pl.layout = "weights packed in " + std::to_string(kPanel) + "-column panels, output in the same panels";
  return pl;
}

// conv2d (NCHW / NHWC, groups) and depthwise_conv2d, bias and activation fused.
// The input goes to Halide's apps/conv_layer layout: data(c, x, y, n),
// channels innermost and pre-padded. conv2d computes in oneDNN-style
// blocked layouts: output channels in blocks of kChannelBlock (zero-padded),
// weights(ki, s, r, c, ko) and output(ki, x, y, ko, n), i.e. kiln's
// [N][K/32][OH][OW][32]. depthwise_conv2d computes in NHWC: weights(c, s, r),
// output(c, x, y, n).
OpPipeline conv(const std::string& op, const std::map<std::string, int64_t>& p,
                const std::vector<std::vector<int64_t>>& in, const std::vector<int64_t>& out_shape) {
  OpPipeline pl;
  const bool nhwc = op == "conv2d_nhwc", depthwise = op == "depthwise_conv2d";
  int N = need(p, "N"), C = need(p, "C"), H = need(p, "H"), W = need(p, "W"), R = need(p, "R"), S = need(p, "S");
  int K = depthwise ? C : need(p, "K");
  int G = depthwise ? C : static_cast<int>(get(p, "groups", 1));
  int st = static_cast<int>(get(p, "stride", 1)), pad = static_cast<int>(get(p, "pad", 0));
  int dil = static_cast<int>(get(p, "dilation", 1));
  int Cg = C / G, Kg = K / G;
  int OH = static_cast<int>(out_shape.at(nhwc ? 1 : 2)), OW = static_cast<int>(out_shape.at(nhwc ? 2 : 3));
  const int KB = depthwise ? 1 : kChannelBlock, blocks = (K + KB - 1) / KB;
  // depthwise_conv2d vectorizes its channels: they are zero-padded to whole
  // vectors (Adams2019 vectorizes a dimension shorter than a vector too).
  const int CP = depthwise ? (C + kVector - 1) / kVector * kVector : C;
  Var c("c"), ki("ki"), ko("ko"), s("s"), rr("rr"), ox("ox"), oy("oy"), n("n");

  // A batch of one has no n dimension: with an extent-1 dimension in the
  // loop nest Adams2019 settles for one-pixel register tiles (about 60
  // GFLOP/s instead of 200 on ResNet layers).
  const bool batched = N > 1;
  auto with_n = [&](std::vector<Expr> e, Expr nn) {
    if (batched) e.push_back(nn);
    return e;
  };
  auto with_n_box = [&](Box b) {
    if (batched) b.emplace_back(0, N);
    return b;
  };

  Converted D = converted(pl, in.at(0), with_n_box({{0, CP}, {0, W + 2 * pad}, {0, H + 2 * pad}}), "data");
  Func d_src = BoundaryConditions::constant_exterior(D.source, 0.0f);
  // kiln's data is [N, C, H, W] or [N, H, W, C], so its n is there even for N == 1.
  D.convert(with_n({c, x, y}, n)) = nhwc ? d_src(c, x - pad, y - pad, batched ? Expr(n) : 0)
                                         : d_src(x - pad, y - pad, c, batched ? Expr(n) : 0);
  auto data = [&](Expr ch, Expr ix, Expr iy) { return D.param(with_n({ch, ix, iy}, n)); };

  Func acc("acc"), out("out");
  std::vector<Var> vars;
  Box out_box;
  if (depthwise) {
    Converted Wt = converted(pl, in.at(1), {{0, CP}, {0, S}, {0, R}}, "weight");
    Wt.convert(c, s, rr) = BoundaryConditions::constant_exterior(Wt.source, 0.0f)(s, rr, 0, c);  // kiln [C, 1, R, S]
    Expr init = 0.0f;
    if (get(p, "bias", 0)) {
      Converted bias = converted(pl, in.at(2), {{0, CP}}, "bias");
      bias.convert(c) = BoundaryConditions::constant_exterior(bias.source, 0.0f)(c);
      init = bias.param(c);
    }
    RDom r(0, S, 0, R, "r");
    vars = {c, ox, oy};
    if (batched) vars.push_back(n);
    acc(vars) = init;
    acc(vars) += data(c, ox * st + r.x * dil, oy * st + r.y * dil) * Wt.param(c, r.x, r.y);
    out_box = with_n_box({{0, CP}, {0, OW}, {0, OH}});
  } else {
    Converted Wt = converted(pl, in.at(1), {{0, KB}, {0, S}, {0, R}, {0, Cg}, {0, blocks}}, "weight");
    Func w_src = BoundaryConditions::constant_exterior(Wt.source, 0.0f);  // zero past K
    Expr kk = ko * KB + ki;
    if (nhwc)
      Wt.convert(ki, s, rr, c, ko) = w_src(kk, c, s, rr);  // kiln HWIO [R, S, C/G, K]
    else
      Wt.convert(ki, s, rr, c, ko) = w_src(s, rr, c, kk);  // kiln [K, C/G, R, S]
    Expr init = 0.0f;
    if (get(p, "bias", 0)) {
      Converted bias = converted(pl, in.at(2), {{0, KB}, {0, blocks}}, "bias");
      bias.convert(ki, ko) = BoundaryConditions::constant_exterior(bias.source, 0.0f)(kk);
      init = bias.param(ki, ko);
    }
    RDom r(0, Cg, 0, S, 0, R, "r");  // ci, s, r: the input channel innermost, as in apps/conv_layer
    // The group of a padding channel (past K) is clamped: its weights are zero.
    Expr ci = G == 1 ? Expr(r.x) : (min(kk, K - 1) / Kg) * Cg + r.x;
    vars = {ki, ox, oy, ko};
    if (batched) vars.push_back(n);
    acc(vars) = init;
    acc(vars) += data(ci, ox * st + r.y * dil, oy * st + r.z * dil) * Wt.param(ki, r.y, r.z, r.x, ko);
    out_box = with_n_box({{0, KB}, {0, OW}, {0, OH}, {0, blocks}});
  }
  out(vars) = conv_activation(acc(vars), p);
  set_output(pl, out, out_box);
  pl.finish.source = input(out_box, "out_halide");
  pl.finish.convert = Func("out_to_kiln");
  Func& f = pl.finish.convert;
  ImageParam& o = pl.finish.source;
  Expr nn = batched ? Expr(n) : 0;
  if (depthwise)
    f(ox, oy, c, n) = o(with_n({c, ox, oy}, nn));
  else if (nhwc)
    f(c, ox, oy, n) = o(with_n({c % KB, ox, oy, c / KB}, nn));
  else
    f(ox, oy, c, n) = o(with_n({c % KB, ox, oy, c / KB}, nn));
  pl.finish.box = box_of(out_shape);
  std::string input_layout = std::string("NHWC") + (pad ? " pre-padded" : "");
  std::string b = std::to_string(KB);
  pl.layout = depthwise ? input_layout + " input, weights [R][S][C], NHWC output"
                        : input_layout + " input, weights [K/" + b + "][C/G][R][S][" + b + "], output [N][K/" + b +
                              "][OH][OW][" + b + "]";
  pl.layout += " (kiln's layouts reordered outside timing)";
  return pl;
}

OpPipeline pool(const std::string& op, const std::map<std::string, int64_t>& p,
                const std::vector<std::vector<int64_t>>& in, const std::vector<int64_t>& out_shape) {
  OpPipeline pl;
  const bool is_max = op == "max_pool2d";
  int H = need(p, "H"), Wd = need(p, "W"), R = need(p, "R"), S = need(p, "S");
  int st = static_cast<int>(get(p, "stride", 1)), pad = static_cast<int>(get(p, "pad", 0));
  ImageParam D = as_is(pl, in.at(0), "data");
  Func padded = BoundaryConditions::constant_exterior(D, is_max ? Float(32).min() : Expr(0.0f));
  RDom r(0, S, 0, R, "r");
  Expr ix = x * st + r.x - pad, iy = y * st + r.y - pad;
  Func out("out");
  if (is_max) {
    out(x, y, z, w) = maximum(padded(ix, iy, z, w));
  } else {
    // Padding is excluded from the count (oneDNN's pooling_avg_exclude_padding).
    Expr x0 = x * st - pad, y0 = y * st - pad;
    Expr count = (min(x0 + S, Wd) - max(x0, 0)) * (min(y0 + R, H) - max(y0, 0));
    out(x, y, z, w) = sum(padded(ix, iy, z, w)) / cast<float>(count);
  }
  set_output(pl, out, box_of(out_shape));
  pl.layout = "NCHW";
  return pl;
}

OpPipeline softmax(const std::map<std::string, int64_t>& p, const std::vector<std::vector<int64_t>>& in,
                   const std::vector<int64_t>& out_shape) {
  OpPipeline pl;
  ImageParam X = as_is(pl, in.at(0), "x");
  RDom r(0, need(p, "N"), "r");
  Func mx("mx"), e("e"), s("s"), out("out");
  mx(y) = maximum(X(r, y));
  e(x, y) = exp(X(x, y) - mx(y));
  s(y) = sum(e(r, y));
  out(x, y) = e(x, y) / s(y);
  set_output(pl, out, box_of(out_shape));
  pl.layout = "row-major";
  return pl;
}

OpPipeline layer_norm(const std::map<std::string, int64_t>& p, const std::vector<std::vector<int64_t>>& in,
                      const std::vector<int64_t>& out_shape) {
  OpPipeline pl;
  ImageParam X = as_is(pl, in.at(0), "x"), gamma = as_is(pl, in.at(1), "gamma"), beta = as_is(pl, in.at(2), "beta");
  float N = static_cast<float>(need(p, "N"));
  RDom r(0, need(p, "N"), "r");
  Func mean("mean"), var("var"), out("out");
  mean(y) = sum(X(r, y)) / N;
  var(y) = sum((X(r, y) - mean(y)) * (X(r, y) - mean(y))) / N;
  out(x, y) = (X(x, y) - mean(y)) / sqrt(var(y) + 1e-5f) * gamma(x) + beta(x);
  set_output(pl, out, box_of(out_shape));
  pl.layout = "row-major";
  return pl;
}

}  // namespace

OpPipeline define_pipeline(const std::string& op, const std::map<std::string, int64_t>& params,
                           const std::vector<std::vector<int64_t>>& input_shapes,
                           const std::vector<int64_t>& output_shape) {
  if (op == "matmul" || op == "dense") return gemm(op, params, input_shapes, output_shape);
  if (op == "batch_matmul") return batch_matmul(params, input_shapes, output_shape);
  if (op == "conv2d" || op == "conv2d_nhwc" || op == "depthwise_conv2d")
    return conv(op, params, input_shapes, output_shape);
  if (op == "max_pool2d" || op == "avg_pool2d") return pool(op, params, input_shapes, output_shape);
  if (op == "softmax") return softmax(params, input_shapes, output_shape);
  if (op == "layer_norm") return layer_norm(params, input_shapes, output_shape);
  throw std::invalid_argument("no Halide pipeline for op '" + op + "'");
}

}  // namespace kiln::halide_baseline
