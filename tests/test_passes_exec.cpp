// Property tests for the lowering passes: random small loop nests shaped like
// schedule_ops' output (non-divisible splits with guards, every loop kind,
// root and compute_at realizations, storage_align, reductions) are lowered
// through storage_flatten / loop_partition / vectorize / unroll /
// remove_no_op in several orders, verified after every pass, and executed
// with the interpreter in test_passes_exec.h. The lowered IR must compute
// exactly what the unlowered IR computes, which must equal a direct C++
// computation.
#include "tests/test_passes_exec.h"

#include <catch2/catch.hpp>
#include <functional>
#include <random>

#include "compute/expr_ops.h"
#include "compute/simplify.h"
#include "schedule/passes/loop_partition.h"
#include "schedule/passes/remove_no_op.h"
#include "schedule/passes/storage_flatten.h"
#include "schedule/passes/unroll.h"
#include "schedule/passes/vectorize.h"
#include "schedule/verify.h"

using namespace kiln;
using kiln_test::Buffer;
using kiln_test::ExecStats;
using kiln_test::Interpreter;

namespace {

struct Rng {
  std::mt19937 gen;
  explicit Rng(uint32_t seed) : gen(seed) {}
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); }
  bool coin() { return uniform(0, 1) == 1; }
  ForKind kind(bool allow_parallel = true) {
    static const ForKind kinds[] = {ForKind::kSerial, ForKind::kVectorized, ForKind::kUnrolled, ForKind::kParallel};
    return kinds[uniform(0, allow_parallel ? 3 : 2)];
  }
};

// A split of an axis of `extent` by `factor`, as schedule_ops emits it.
struct Split {
  Var outer, inner;
  int outer_extent, factor;
  Expr index, guard;  // guard undefined when the factor divides the extent
};

Split split(const std::string& name, int extent, int factor) {
  Split s{Var(name + ".outer"), Var(name + ".inner"), (extent + factor - 1) / factor, factor, Expr(), Expr()};
  s.index = s.outer * factor + s.inner;
  if (extent % factor) s.guard = s.index < extent;
  return s;
}

Stmt loop(const Var& v, int extent, ForKind kind, Stmt body) {
  return ForNode::make(v, make_zero(DType::i32()), make_const(DType::i32(), int64_t{extent}), kind, body);
}

// Wraps s in the defined guards, either as one `&&` condition or nested ifs.
Stmt guard(std::vector<Expr> conds, Stmt s, bool nested) {
  Expr all;
  for (auto& c : conds) {
    if (!c.defined()) continue;
    if (nested)
      s = IfThenElseNode::make(c, s);
    else
      all = all.defined() ? all && c : c;
  }
  return all.defined() ? IfThenElseNode::make(all, s) : s;
}

Stmt bind_args(const std::vector<std::pair<Tensor, Var>>& args, Stmt body) {
  for (auto it = args.rbegin(); it != args.rend(); ++it)
    body = AttrStmtNode::make(it->first, passes::kBufferBind, it->second, body);
  return body;
}

struct Program {
  Stmt stmt;
  std::vector<std::pair<Tensor, Var>> args;
  std::vector<std::vector<double>> inputs;  // for the first args.size() - 1 args
  std::vector<double> expected;             // the last arg (the output)
  std::string what;
};

std::vector<double> random_data(Rng& rng, size_t n) {
  std::vector<double> v(n);
  for (auto& x : v) x = rng.uniform(-9, 9);
  return v;
}

// Runs a statement over fresh buffers and returns the output.
std::vector<double> run(const Program& p, const Stmt& s, ExecStats* stats = nullptr) {
  std::vector<Buffer> bufs;
  for (size_t a = 0; a < p.args.size(); ++a) {
    size_t size = 1;
    for (auto& e : p.args[a].first.shape()) size *= *as_const_int(e);
    bool input = a + 1 < p.args.size();
    bufs.emplace_back(p.args[a].first.name(), size, input);
    if (input) bufs.back().data = p.inputs[a];
  }
  std::unordered_map<const VarNode*, Buffer*> handles;
  for (size_t a = 0; a < p.args.size(); ++a) handles[p.args[a].second.node()] = &bufs[a];
  Interpreter interp(handles);
  interp.exec(s);
  if (stats) *stats = interp.stats;
  for (bool w : bufs.back().written) REQUIRE(w);
  return bufs.back().data;
}

// C[i, j] = T[i, j] + select(j + 1 < W, A[i, j + 1], 0) * 3 where T (realized
// at root, maybe storage-aligned) is A * 2 + j.
Program elementwise_root(Rng& rng) {
  int H = rng.uniform(1, 9), W = rng.uniform(1, 9);
  Tensor A = placeholder({H, W}, DType::i32(), "A"), T = placeholder({H, W}, DType::i32(), "T"),
         C = placeholder({H, W}, DType::i32(), "C");
  Var Ah = Var::handle("A", DType::i32()), Ch = Var::handle("C", DType::i32());
  bool nested = rng.coin();

  Var ti("T.i");
  Split tj = split("T.j", W, rng.uniform(1, 5));
  Stmt tnest = ProvideNode::make(T, A(ti, tj.index) * 2 + tj.index, {ti, tj.index});
  tnest = guard({tj.guard}, tnest, nested);
  tnest = loop(ti, H, rng.kind(),
               loop(tj.outer, tj.outer_extent, ForKind::kSerial, loop(tj.inner, tj.factor, rng.kind(), tnest)));

  Split i = split("C.i", H, rng.uniform(1, 4)), j = split("C.j", W, rng.uniform(1, 5));
  Expr value = T(i.index, j.index) + select(j.index + 1 < W, A(i.index, j.index + 1), Expr(0)) * 3;
  Stmt cnest = guard({i.guard, j.guard}, ProvideNode::make(C, value, {i.index, j.index}), nested);
  cnest = loop(j.inner, j.factor, rng.kind(), cnest);
  cnest = loop(i.inner, i.factor, rng.kind(false), cnest);
  cnest = loop(j.outer, j.outer_extent, rng.kind(false), cnest);
  cnest = loop(i.outer, i.outer_extent, rng.kind(), cnest);

  std::vector<RealizeNode::Align> align(2);
  if (rng.coin()) {
    int64_t f = rng.uniform(2, 8);
    align[0] = {f, rng.uniform(0, static_cast<int>(f) - 1)};
  }
  Stmt body = RealizeNode::make(T, {Range(Expr(0), Expr(H)), Range(Expr(0), Expr(W))}, MemScope::kGlobal, align,
                                SeqNode::make({tnest, cnest}));
  Program p;
  p.args = {{A, Ah}, {C, Ch}};
  p.stmt = bind_args(p.args, body);
  p.inputs = {random_data(rng, H * W)};
  const auto& a = p.inputs[0];
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) p.expected.push_back(a[y * W + x] * 2 + x + (x + 1 < W ? a[y * W + x + 1] : 0) * 3);
  p.what = "elementwise_root H=" + std::to_string(H) + " W=" + std::to_string(W);
  return p;
}

// T = A + 1 computed at C's outer i loop (realized over [io*fi, fi) x [0, W),
// global or local), C[i, j] = T[i, j] * T[i, W - 1 - j].
Program compute_at(Rng& rng) {
  int H = rng.uniform(1, 9), W = rng.uniform(1, 9);
  Tensor A = placeholder({H, W}, DType::i32(), "A"), T = placeholder({H, W}, DType::i32(), "T"),
         C = placeholder({H, W}, DType::i32(), "C");
  Var Ah = Var::handle("A", DType::i32()), Ch = Var::handle("C", DType::i32());
  bool nested = rng.coin();
  Split i = split("C.i", H, rng.uniform(1, 4)), j = split("C.j", W, rng.uniform(1, 5));

  Var ti("T.i"), tj("T.j");
  Expr trow = i.outer * i.factor + ti;
  Stmt tnest =
      guard({i.guard.defined() ? trow < H : Expr()}, ProvideNode::make(T, A(trow, tj) + 1, {trow, tj}), nested);
  tnest = loop(ti, i.factor, rng.kind(), loop(tj, W, rng.kind(), tnest));

  Expr value = T(i.index, j.index) * T(i.index, Expr(W - 1) - j.index);
  Stmt cnest = guard({i.guard, j.guard}, ProvideNode::make(C, value, {i.index, j.index}), nested);
  cnest = loop(j.inner, j.factor, rng.kind(), cnest);
  cnest = loop(j.outer, j.outer_extent, rng.kind(false), cnest);
  cnest = loop(i.inner, i.factor, rng.kind(false), cnest);
  MemScope scope = rng.coin() ? MemScope::kLocal : MemScope::kGlobal;
  Stmt body = RealizeNode::make(T, {Range(i.outer * i.factor, Expr(i.factor)), Range(Expr(0), Expr(W))}, scope, {},
                                SeqNode::make({tnest, cnest}));
  body = loop(i.outer, i.outer_extent, rng.kind(), body);

  Program p;
  p.args = {{A, Ah}, {C, Ch}};
  p.stmt = bind_args(p.args, body);
  p.inputs = {random_data(rng, H * W)};
  const auto& a = p.inputs[0];
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) p.expected.push_back((a[y * W + x] + 1) * (a[y * W + W - 1 - x] + 1));
  p.what = "compute_at H=" + std::to_string(H) + " W=" + std::to_string(W);
  return p;
}

// C[i, j] = sum_k A[i, k] * B[k, j] with j split; the init nest reuses the
// j.inner var (as schedule_ops does); k sits outside or inside j.inner.
Program reduction(Rng& rng) {
  int M = rng.uniform(1, 6), N = rng.uniform(1, 9), K = rng.uniform(1, 6);
  Tensor A = placeholder({M, K}, DType::i32(), "A"), B = placeholder({K, N}, DType::i32(), "B"),
         C = placeholder({M, N}, DType::i32(), "C");
  Var Ah = Var::handle("A", DType::i32()), Bh = Var::handle("B", DType::i32()), Ch = Var::handle("C", DType::i32());
  bool nested = rng.coin();
  Var i("C.i"), k("k");
  Split j = split("C.j", N, rng.uniform(1, 5));
  ForKind jk = rng.kind(false);
  Stmt init = guard({j.guard}, ProvideNode::make(C, make_zero(DType::i32()), {i, j.index}), nested);
  init = loop(j.inner, j.factor, jk, init);
  Stmt update = guard({j.guard}, ProvideNode::make(C, C(i, j.index) + A(i, k) * B(k, j.index), {i, j.index}), nested);
  if (rng.coin())
    update = loop(k, K, rng.kind(false), loop(j.inner, j.factor, jk, update));
  else
    update = loop(j.inner, j.factor, jk, loop(k, K, rng.kind(false), update));
  Stmt body = loop(i, M, rng.kind(), loop(j.outer, j.outer_extent, ForKind::kSerial, SeqNode::make({init, update})));

  Program p;
  p.args = {{A, Ah}, {B, Bh}, {C, Ch}};
  p.stmt = bind_args(p.args, body);
  p.inputs = {random_data(rng, M * K), random_data(rng, K * N)};
  for (int y = 0; y < M; ++y)
    for (int x = 0; x < N; ++x) {
      double acc = 0;
      for (int z = 0; z < K; ++z) acc += p.inputs[0][y * K + z] * p.inputs[1][z * N + x];
      p.expected.push_back(acc);
    }
  p.what = "reduction M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K);
  return p;
}

using PassFn = Stmt (*)(const Stmt&);
struct NamedPass {
  const char* name;
  PassFn fn;
};

// Runs the passes in order, verifying after each, and returns the result.
Stmt lower_with(const Program& p, const std::vector<NamedPass>& pipeline) {
  VerifyOptions opt;
  for (auto& a : p.args) opt.free_vars.push_back(a.second);
  Stmt s = p.stmt;
  verify_ir(s, "input", opt);
  for (auto& np : pipeline) {
    s = np.fn(s);
    if (std::string(np.name) == "storage_flatten") opt.flattened = true;
    if (std::string(np.name) == "vectorize") opt.vectorized = true;
    verify_ir(s, np.name, opt);
  }
  return s;
}

Stmt simplify_stmt(const Stmt& s) { return simplify(s); }

const std::vector<std::vector<NamedPass>>& pipelines() {
  static const std::vector<std::vector<NamedPass>> p = {
      // lower()'s order.
      {{"storage_flatten", passes::storage_flatten},
       {"simplify", simplify_stmt},
       {"loop_partition", passes::loop_partition},
       {"vectorize", passes::vectorize},
       {"unroll", passes::unroll},
       {"simplify", simplify_stmt},
       {"remove_no_op", passes::remove_no_op}},
      // Without simplify.
      {{"storage_flatten", passes::storage_flatten},
       {"loop_partition", passes::loop_partition},
       {"vectorize", passes::vectorize},
       {"unroll", passes::unroll},
       {"remove_no_op", passes::remove_no_op}},
      // No partition: guards inside vectorized loops become predicates.
      {{"storage_flatten", passes::storage_flatten},
       {"vectorize", passes::vectorize},
       {"unroll", passes::unroll},
       {"remove_no_op", passes::remove_no_op}},
      // Partition before flattening, unroll before vectorize.
      {{"loop_partition", passes::loop_partition},
       {"storage_flatten", passes::storage_flatten},
       {"unroll", passes::unroll},
       {"vectorize", passes::vectorize},
       {"remove_no_op", passes::remove_no_op}},
  };
  return p;
}

void check_program(const std::function<Program(Rng&)>& make, uint32_t seed0, int count) {
  for (int n = 0; n < count; ++n) {
    Rng rng(seed0 + n);
    Program p = make(rng);
    INFO(p.what << " seed " << seed0 + n);
    ExecStats base_stats;
    REQUIRE(run(p, p.stmt, &base_stats) == p.expected);
    for (size_t k = 0; k < pipelines().size(); ++k) {
      INFO("pipeline " << k);
      Stmt lowered = lower_with(p, pipelines()[k]);
      ExecStats stats;
      REQUIRE(run(p, lowered, &stats) == p.expected);
      // No pass adds guard evaluations.
      CHECK(stats.if_evals <= base_stats.if_evals);
    }
  }
}

}  // namespace

TEST_CASE("lowered random elementwise nests compute what the loop nest computes", "[passes][exec]") {
  check_program(elementwise_root, 1000, 120);
}

TEST_CASE("lowered random compute_at nests compute what the loop nest computes", "[passes][exec]") {
  check_program(compute_at, 2000, 120);
}

TEST_CASE("lowered random reductions compute what the loop nest computes", "[passes][exec]") {
  check_program(reduction, 3000, 120);
}
