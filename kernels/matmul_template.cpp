#include "kernels/matmul_template.h"

#include <algorithm>

#include "compute/error.h"
#include "compute/expr_ops.h"
#include "kernels/template_util.h"

namespace kiln {

namespace {

// Band loops: 0 = yo, 1 = xo, 2 = ym, 3 = xm.
const std::vector<std::vector<int64_t>>& band_orders() {
  static const std::vector<std::vector<int64_t>> orders = {
      {0, 1, 2, 3},  // row blocks outer
      {1, 0, 3, 2},  // column panels outer (a B panel is reused down the rows)
      {1, 0, 2, 3},  // column panels outer, rows before columns inside a block
      {0, 1, 3, 2},  // row blocks outer, columns before rows inside a block
      {0, 2, 1, 3},  // whole row strips, then column tiles
      {1, 3, 0, 2},  // whole column strips, then row tiles
  };
  return orders;
}

const std::vector<int64_t> kTileRows = {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16};

}  // namespace

std::shared_ptr<ConfigSpace> matmul_space(const OpInstance& op, const CpuInfo& cpu) {
  int64_t M = op.ints.at("M"), N = op.ints.at("N"), K = op.ints.at("K");
  int lanes = vector_lanes(cpu, accumulator_type(op.dtype));
  auto s = std::make_shared<ConfigSpace>();
  s->define_split_levels("tile_y", M, {block_candidates(M, M), capped_candidates(M, kTileRows)});
  s->define_split_levels("tile_x", N, {block_candidates(N, N), vector_tile_candidates(N, lanes)});
  s->define_split_levels("tile_k", K, {block_candidates(K, K)});
  s->define_reorder("order", band_orders());
  s->define_choice("acc_at", {0, 1, 2, 3});
  s->define_choice("k_outer", {0, 1});
  s->define_choice("pack_b", {-2, -1, 0, 1, 2, 3});
  s->define_choice("unroll_k", {1, 2, 4, 8});
  s->define_annotate("unroll_y", {"unroll", "none"});
  s->define_choice("parallel", {0, 1, 2});
  return s;
}

Config matmul_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
  int64_t K = op.ints.at("K");
  int lanes = vector_lanes(cpu, accumulator_type(op.dtype));
  nlohmann::json j;
  // Six rows of two (16 registers) or four (32 registers) vectors: the
  // accumulators, the B vectors and a broadcast A value fit the registers.
  int vectors_per_row = vector_registers(cpu) >= 32 ? 4 : 2;
  j["tile_y"] = nearest_split(space, "tile_y", {1, 6});
  j["tile_x"] = nearest_split(space, "tile_x", {1, vectors_per_row * lanes});
  j["tile_k"] = nearest_split(space, "tile_k", {K});
  j["order"] = band_orders()[1];
  j["acc_at"] = 3;
  j["k_outer"] = 0;
  j["pack_b"] = 0;
  j["unroll_k"] = 4;
  j["unroll_y"] = "unroll";
  j["parallel"] = cpu.num_threads > 1 ? 1 : 0;
  return space.make(j);
}

MatmulParams matmul_decode(const Config& c) {
  MatmulParams p;
  p.tile_y = c.split("tile_y");
  p.tile_x = c.split("tile_x");
  p.tile_k = c.split("tile_k");
  p.order = c.reorder("order");
  p.acc_at = static_cast<int>(c.choice("acc_at"));
  p.k_outer = c.choice("k_outer") != 0;
  p.pack_b = static_cast<int>(c.choice("pack_b"));
  p.unroll_k = c.choice("unroll_k");
  p.unroll_y = c.annotate("unroll_y") == "unroll";
  p.parallel = static_cast<int>(c.choice("parallel"));
  return p;
}

ScheduledOp matmul_apply(const OpInstance& op, const Config& cfg) {
  return matmul_template_schedule(op, matmul_decode(cfg));
}

ScheduledOp matmul_template_schedule(const OpInstance& op, const MatmulParams& p) {
  user_check(op.op == "matmul") << "the matmul template cannot schedule op '" << op.op << "'";
  user_check(p.tile_y.size() == 3 && p.tile_x.size() == 3 && p.tile_k.size() == 2 && p.order.size() == 4)
      << "matmul template: tile_y and tile_x need 3 factors, tile_k 2, order 4 loops";
  const int64_t ym = p.tile_y[1], yi = p.tile_y[2], xm = p.tile_x[1], xi = p.tile_x[2], kin = p.tile_k[1];
  user_check(ym > 0 && yi > 0 && xm > 0 && xi > 0 && kin > 0 && p.unroll_k > 0)
      << "matmul template: tile sizes and unroll factors must be positive";
  int64_t M = op.ints.at("M"), N = op.ints.at("N"), K = op.ints.at("K");
  bool with_bias = op.ints.at("bias") != 0, relu = op.ints.at("relu") != 0;
  DType acc = accumulator_type(op.dtype);
  const Tensor& A = op.inputs[0];
  const Tensor& B = op.inputs[1];
  const bool pack = p.pack_b != -2;
  const int nb = static_cast<int>(xi);

  // B packed into panels of xi columns: PB[jo, k, ji] = B[k, jo*xi + ji]
  // (zero past N), so each register tile reads its B rows contiguously.
  Tensor PB;
  if (pack)
    PB = compute(
        {(N + xi - 1) / xi, K, xi},
        [&](Var jo, Var k, Var ji) {
          Expr j = jo * nb + ji;
          Expr v = B(k, min(j, static_cast<int>(N - 1)));
          return (N % nb == 0) ? v : select(j < static_cast<int>(N), v, make_zero(op.dtype));
        },
        "PB", "pack");
  IterVar k = reduce_axis(static_cast<int>(K), "k");
  Tensor C = compute(
      {M, N},
      [&](Var i, Var j) {
        Expr b = pack ? PB(floordiv(j, nb), k->var, floormod(j, nb)) : B(k->var, j);
        return sum(cast(acc, A(i, k->var)) * cast(acc, b), {k});
      },
      "C", "matmul");
  Tensor out = C;
  if (with_bias || relu) {
    const Tensor* bias = with_bias ? &op.inputs[2] : nullptr;
    out = compute(
        {M, N},
        [&](Var i, Var j) {
          Expr v = C(i, j);
          if (bias) v = v + (*bias)(j);
          if (relu) v = max(v, make_zero(acc));
          return v;
        },
        "out", "epilogue");
  }
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& s = *sch;
  // The accumulator: the matmul stage itself when an epilogue stage writes
  // the output, else a cache_write stage.
  Tensor acc_t = out.same_tensor(C) ? s.cache_write(C, MemScope::kLocal) : C;
  if (!out.same_tensor(C)) s[C].set_scope(MemScope::kLocal);

  Stage so = s[out];
  IterVar yo, yr, ym_l, yi_l, xo, xr, xm_l, xi_l;
  so.split(so.axis()[0], ym * yi, &yo, &yr);
  so.split(yr, yi, &ym_l, &yi_l);
  so.split(so.axis()[1], xm * xi, &xo, &xr);
  so.split(xr, xi, &xm_l, &xi_l);
  LoopBand band(so, {yo, xo, ym_l, xm_l}, p.order, {yi_l, xi_l}, p.parallel, true);
  so.vectorize(xi_l);
  const int acc_pos = std::max(0, std::min(p.acc_at, band.size() - 1));

  Stage sc = s[acc_t];
  sc.compute_at(so, band.at(acc_pos));
  IterVar cyo, cyi, cxo, cxi, cko, cki;
  sc.split(sc.axis()[0], yi, &cyo, &cyi);
  sc.split(sc.axis()[1], xi, &cxo, &cxi);
  sc.split(sc.reduce_axis()[0], kin, &cko, &cki);
  std::vector<IterVar> k_inner{cki};
  if (p.unroll_k > 1) {
    IterVar ckm, cku;
    sc.split(cki, p.unroll_k, &ckm, &cku);
    sc.unroll(cku);
    k_inner = {ckm, cku};
  }
  std::vector<IterVar> order = p.k_outer ? std::vector<IterVar>{cko, cyo, cxo} : std::vector<IterVar>{cyo, cxo, cko};
  order.insert(order.end(), k_inner.begin(), k_inner.end());
  order.push_back(cyi);
  order.push_back(cxi);
  sc.reorder(order);
  if (p.unroll_y) sc.unroll(cyi);
  sc.vectorize(cxi);

  if (pack) {
    Stage sp = s[PB];
    if (p.pack_b < 0) {
      if (p.parallel > 0) sp.parallel(sp.axis()[0]);
    } else {
      sp.compute_at(so, band.at(std::min(p.pack_b, acc_pos)));
    }
    sp.vectorize(sp.axis()[2]);
  }
  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

}  // namespace kiln
