#include "halide/pipelines.h"

#include <stdexcept>

namespace kiln::halide_baseline {

using namespace Halide;

namespace {

int64_t get(const std::map<std::string, int64_t>& p, const std::string& name, int64_t fallback) {
  auto it = p.find(name);
  return it == p.end() ? fallback : it->second;
}

int64_t need(const std::map<std::string, int64_t>& p, const std::string& name) {
  auto it = p.find(name);
  if (it == p.end()) throw std::invalid_argument("missing parameter " + name);
  return it->second;
}

Region estimates_of(const std::vector<int64_t>& row_major_shape) {
  Region r;
  for (size_t i = row_major_shape.size(); i-- > 0;) r.emplace_back(0, static_cast<int>(row_major_shape[i]));
  return r;
}

ImageParam input(const std::vector<int64_t>& shape, const std::string& name) {
  ImageParam p(Float(32), static_cast<int>(shape.size()), name);
  p.set_estimates(estimates_of(shape));
  return p;
}

Expr epilogue(Expr v, bool relu, bool gelu) {
  if (relu) return max(v, 0.0f);
  if (gelu) return 0.5f * v * (1.0f + erf(v * 0.70710678118654752f));
  return v;
}

Var x("x"), y("y"), z("z"), w("w");

// matmul / dense / batch_matmul: out(n, m[, b]) = sum_k a(m, k) * b(k, n).
OpPipeline gemm(const std::string& op, const std::map<std::string, int64_t>& p,
                const std::vector<std::vector<int64_t>>& in) {
  OpPipeline pl;
  const bool dense = op == "dense", batched = op == "batch_matmul";
  int64_t K = dense ? need(p, "IN") : need(p, "K");
  bool ta = !dense && get(p, "trans_a", 0), tb = dense || get(p, "trans_b", 0);
  ImageParam A = input(in.at(0), "A"), B = input(in.at(1), "B");
  pl.inputs = {A, B};
  RDom r(0, static_cast<int>(K), "r");
  // x: column n, y: row m, z: batch.
  auto a = [&](Expr m, Expr k) { return batched ? (ta ? A(m, k, z) : A(k, m, z)) : (ta ? A(m, k) : A(k, m)); };
  auto b = [&](Expr k, Expr n) { return batched ? (tb ? B(k, n, z) : B(n, k, z)) : (tb ? B(k, n) : B(n, k)); };
  Func prod("prod");
  std::vector<Var> vars = batched ? std::vector<Var>{x, y, z} : std::vector<Var>{x, y};
  prod(vars) = 0.0f;
  prod(vars) += a(y, r) * b(r, x);
  Expr v = prod(vars);
  if (!batched && get(p, "bias", 0)) {
    ImageParam bias = input(in.at(2), "bias");
    pl.inputs.push_back(bias);
    v = v + bias(x);
  }
  Func out("out");
  out(vars) = epilogue(v, get(p, "relu", 0), get(p, "gelu", 0));
  pl.output = out;
  return pl;
}

// conv2d (NCHW / NHWC, groups) and depthwise_conv2d, bias and relu fused.
OpPipeline conv(const std::string& op, const std::map<std::string, int64_t>& p,
                const std::vector<std::vector<int64_t>>& in) {
  OpPipeline pl;
  const bool nhwc = op == "conv2d_nhwc", depthwise = op == "depthwise_conv2d";
  int C = static_cast<int>(need(p, "C")), R = static_cast<int>(need(p, "R")), S = static_cast<int>(need(p, "S"));
  int K = depthwise ? C : static_cast<int>(need(p, "K"));
  int G = depthwise ? C : static_cast<int>(get(p, "groups", 1));
  int st = static_cast<int>(get(p, "stride", 1)), pad = static_cast<int>(get(p, "pad", 0));
  int dil = static_cast<int>(get(p, "dilation", 1));
  int Cg = C / G, Kg = K / G;
  ImageParam D = input(in.at(0), "data"), W = input(in.at(1), "weight");
  pl.inputs = {D, W};
  Func padded = BoundaryConditions::constant_exterior(D, 0.0f);
  RDom r(0, Cg, 0, S, 0, R, "r");  // ci, s, r
  // ox, oy: output column and row; k: output channel; n: image.
  Var ox("ox"), oy("oy"), k("k"), n("n");
  Expr ix = ox * st + r.y * dil - pad, iy = oy * st + r.z * dil - pad;
  Expr c = G == 1 ? Expr(r.x) : (k / Kg) * Cg + r.x;
  Func acc("acc");
  std::vector<Var> vars = nhwc ? std::vector<Var>{k, ox, oy, n} : std::vector<Var>{ox, oy, k, n};
  Expr init = 0.0f;
  if (get(p, "bias", 0)) {
    ImageParam bias = input(in.at(2), "bias");
    pl.inputs.push_back(bias);
    init = bias(k);
  }
  acc(vars) = init;
  if (nhwc)
    acc(vars) += padded(c, ix, iy, n) * W(k, r.x, r.y, r.z);  // weight HWIO [R, S, C/G, K]
  else if (depthwise)
    acc(vars) += padded(ix, iy, k, n) * W(r.y, r.z, 0, k);  // weight [C, 1, R, S]; r.x spans 0..0
  else
    acc(vars) += padded(ix, iy, c, n) * W(r.y, r.z, r.x, k);  // weight [K, C/G, R, S]
  Func out("out");
  out(vars) = epilogue(acc(vars), get(p, "relu", 0), false);
  pl.output = out;
  return pl;
}

OpPipeline pool(const std::string& op, const std::map<std::string, int64_t>& p,
                const std::vector<std::vector<int64_t>>& in) {
  OpPipeline pl;
  const bool is_max = op == "max_pool2d";
  int H = static_cast<int>(need(p, "H")), Wd = static_cast<int>(need(p, "W"));
  int R = static_cast<int>(need(p, "R")), S = static_cast<int>(need(p, "S"));
  int st = static_cast<int>(get(p, "stride", 1)), pad = static_cast<int>(get(p, "pad", 0));
  ImageParam D = input(in.at(0), "data");
  pl.inputs = {D};
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
  pl.output = out;
  return pl;
}

OpPipeline softmax(const std::map<std::string, int64_t>& p, const std::vector<std::vector<int64_t>>& in) {
  OpPipeline pl;
  ImageParam X = input(in.at(0), "x");
  pl.inputs = {X};
  RDom r(0, static_cast<int>(need(p, "N")), "r");
  Func mx("mx"), e("e"), s("s"), out("out");
  mx(y) = maximum(X(r, y));
  e(x, y) = exp(X(x, y) - mx(y));
  s(y) = sum(e(r, y));
  out(x, y) = e(x, y) / s(y);
  pl.output = out;
  return pl;
}

OpPipeline layer_norm(const std::map<std::string, int64_t>& p, const std::vector<std::vector<int64_t>>& in) {
  OpPipeline pl;
  ImageParam X = input(in.at(0), "x"), gamma = input(in.at(1), "gamma"), beta = input(in.at(2), "beta");
  pl.inputs = {X, gamma, beta};
  float N = static_cast<float>(need(p, "N"));
  RDom r(0, static_cast<int>(need(p, "N")), "r");
  Func mean("mean"), var("var"), out("out");
  mean(y) = sum(X(r, y)) / N;
  var(y) = sum((X(r, y) - mean(y)) * (X(r, y) - mean(y))) / N;
  out(x, y) = (X(x, y) - mean(y)) / sqrt(var(y) + 1e-5f) * gamma(x) + beta(x);
  pl.output = out;
  return pl;
}

}  // namespace

OpPipeline define_pipeline(const std::string& op, const std::map<std::string, int64_t>& params,
                           const std::vector<std::vector<int64_t>>& input_shapes,
                           const std::vector<int64_t>& output_shape) {
  OpPipeline pl;
  if (op == "matmul" || op == "dense" || op == "batch_matmul")
    pl = gemm(op, params, input_shapes);
  else if (op == "conv2d" || op == "conv2d_nhwc" || op == "depthwise_conv2d")
    pl = conv(op, params, input_shapes);
  else if (op == "max_pool2d" || op == "avg_pool2d")
    pl = pool(op, params, input_shapes);
  else if (op == "softmax")
    pl = softmax(params, input_shapes);
  else if (op == "layer_norm")
    pl = layer_norm(params, input_shapes);
  else
    throw std::invalid_argument("no Halide pipeline for op '" + op + "'");
  pl.output.set_estimates(estimates_of(output_shape));
  return pl;
}

}  // namespace kiln::halide_baseline
