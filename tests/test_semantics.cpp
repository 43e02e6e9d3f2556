// One semantics for min and max on NaN (compute/expr.h): the interpreter,
// the simplifier's constant folding and the LLVM backend agree, through every
// op with an epilogue or a max reduction.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>

#include "codegen/build.h"
#include "codegen/runtime_dtype.h"
#include "compute/expr_ops.h"
#include "compute/interpreter.h"
#include "compute/printer.h"
#include "compute/simplify.h"
#include "kernels/op_registry.h"
#include "runtime/ndarray.h"
#include "schedule/lower.h"

using namespace kiln;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

CpuInfo host_cpu() {
  CpuInfo cpu;
  cpu.vector_bits = 512;
  cpu.num_threads = 2;
  return cpu;
}

// Runs the op's default config on random inputs with NaN planted in its first
// input at `nan_at` (flat indices) and compares every output element with
// the interpreter: NaN must be NaN on both sides, and every other element
// within tolerance. "" when they agree.
std::string run_with_nans(const std::string& workload, const std::vector<int64_t>& nan_at) {
  OpInstance op = build_workload(workload);
  const OpDef& def = find_op(op.op);
  ScheduledOp so = def.default_schedule(op, host_cpu());
  LoweredFunc f = lower(*so.schedule, so.args, "kernel");
  auto jit = JitModule::compile({f}, Target::host());
  std::vector<std::pair<Tensor, HostTensor>> host_inputs;
  std::vector<rt::NDArray> arrays;
  std::vector<void*> ptrs;
  for (size_t i = 0; i < so.args.size(); ++i) {
    const BufferArg& a = f.args[i];
    rt::NDArray arr = rt::NDArray::empty(a.shape, to_runtime_dtype(a.dtype));
    if (i < op.inputs.size()) {
      HostTensor h(a.dtype, a.shape);
      h.fill_random(7 + i, -2.0, 2.0);
      if (i == 0)
        for (int64_t k : nan_at) h.set_float(std::min(k, h.num_elements() - 1), kNaN);
      std::memcpy(arr.data(), h.bytes.data(), h.bytes.size());
      host_inputs.emplace_back(op.inputs[i], h);
    } else {
      std::memset(arr.data(), 0xcd, arr.nbytes());
    }
    arrays.push_back(arr);
    ptrs.push_back(arr.data());
  }
  if (int32_t rc = jit->get_function(f.name)(ptrs.data()); rc != 0) return "kernel returned " + std::to_string(rc);
  std::vector<HostTensor> expected = interpret(op.outputs, host_inputs);
  for (size_t o = 0; o < op.outputs.size(); ++o) {
    HostTensor actual(expected[o].dtype, expected[o].shape);
    std::memcpy(actual.bytes.data(), arrays[op.inputs.size() + o].data(), actual.bytes.size());
    int64_t nans = 0;
    for (int64_t k = 0; k < expected[o].num_elements(); ++k) nans += std::isnan(expected[o].get_float(k));
    if (nans == 0) return "the planted NaN reached no output element (test set-up)";
    std::string msg = compare_tensors(expected[o], actual, 2e-4, 2e-4);
    if (!msg.empty()) return op.outputs[o].name() + ": " + msg;
  }
  return "";
}

}  // namespace

TEST_CASE("min and max of floats propagate NaN from either side, first operand on ties") {
  CHECK(std::isnan(float_max(kNaN, 0.0)));
  CHECK(std::isnan(float_max(0.0, kNaN)));
  CHECK(std::isnan(float_min(kNaN, 0.0)));
  CHECK(std::isnan(float_min(0.0, kNaN)));
  CHECK(float_max(1.0, 2.0) == 2.0);
  CHECK(float_min(1.0, 2.0) == 1.0);
  CHECK(std::signbit(float_min(-0.0, 0.0)));  // ties: the first operand
  CHECK(!std::signbit(float_max(0.0, -0.0)));
}

TEST_CASE("the simplifier folds min and max of NaN constants to NaN") {
  for (DType t : {DType::f32(), DType::f64()}) {
    for (bool nan_first : {true, false}) {
      // Built as nodes, so that the simplifier's own folding is what is tested.
      Expr n = make_const(t, kNaN), one = make_const(t, 1.0);
      Expr folded_max = simplify(nan_first ? MaxNode::make(n, one) : MaxNode::make(one, n));
      Expr folded_min = simplify(nan_first ? MinNode::make(n, one) : MinNode::make(one, n));
      Expr built = nan_first ? max(n, one) : max(one, n);  // the builders fold too
      REQUIRE(built.as<FloatImmNode>());
      CHECK(std::isnan(built.as<FloatImmNode>()->value));
      INFO(t.str() << " " << to_string(folded_max) << " " << to_string(folded_min));
      auto* fm = folded_max.as<FloatImmNode>();
      auto* fn = folded_min.as<FloatImmNode>();
      REQUIRE(fm);
      REQUIRE(fn);
      CHECK(std::isnan(fm->value));
      CHECK(std::isnan(fn->value));
    }
  }
}

TEST_CASE("NaN passes through every epilogue and max reduction the same in kernels and the interpreter") {
  // relu(NaN) is NaN (so are relu6, hswish and hsigmoid of NaN), a max pool
  // window holding NaN is NaN, softmax of a row
  // holding NaN is NaN: in the kernel exactly where in the interpreter.
  const std::vector<std::string> workloads = {
      "matmul:M=13,N=37,K=9,bias=1,relu=1",
      "matmul:M=5,N=33,K=7,gelu=1",
      "dense:N=3,IN=10,OUT=19,bias=1,relu=1",
      "batch_matmul:B=2,M=7,N=17,K=5",
      "conv2d:C=3,H=9,W=11,K=5,R=3,S=3,pad=1,bias=1,relu=1",
      "conv2d_nhwc:H=8,W=7,C=4,K=6,R=3,S=3,pad=1,bias=1,relu=1",
      "conv2d_nchwc:C=16,H=7,W=6,K=16,R=3,S=3,pad=1,cb=8,kb=8,bias=1,relu=1",
      "depthwise_conv2d:C=5,H=9,W=8,R=3,S=3,pad=1,bias=1,relu=1",
      "depthwise_conv2d_nchwc:C=16,H=9,W=8,R=3,S=3,pad=1,cb=8,bias=1,relu6=1",
      "conv2d_nchwc:C=16,H=7,W=6,K=16,R=1,S=1,cb=8,kb=8,bias=1,hswish=1",
      "depthwise_conv2d:C=5,H=9,W=8,R=3,S=3,pad=1,hsigmoid=1",
      "conv2d:C=3,H=9,W=11,K=5,R=3,S=3,pad=1,relu6=1",
      "max_pool2d:C=3,H=9,W=10,R=3,S=3,stride=2,pad=1",
      "avg_pool2d:C=3,H=9,W=10,R=3,S=3,stride=2,pad=1",
      "softmax:M=5,N=37",
      "layer_norm:M=4,N=29",
      "elemwise:M=7,N=35",
  };
  for (const std::string& w : workloads) {
    for (const std::vector<int64_t>& at : {std::vector<int64_t>{0}, std::vector<int64_t>{37, 1000000}}) {
      INFO(w << " NaN at " << at[0]);
      CHECK(run_with_nans(w, at) == "");
    }
  }
}

// ---- select evaluates only the chosen branch (compute/expr.h)

#include "compute/tensor.h"
#include "schedule/schedule.h"
#include "test_codegen_util.h"

namespace {

// C's one loop split by `lanes` and vectorized (left alone for lanes 1), lowered.
LoweredFunc lower_vectorized(const Tensor& C, const std::vector<Tensor>& args, int lanes, const std::string& name) {
  Schedule s({C});
  if (lanes > 1) {
    IterVar io, ii;
    s[C].split(s[C].axis()[0], lanes, &io, &ii);
    s[C].vectorize(ii);
  }
  return lower(s, args, name);
}

}  // namespace

TEST_CASE("a select's load that would fault is not evaluated when the other branch is chosen") {
  const int64_t n = 61;
  BufferArg A = test::buffer("A", DType::f32(), {n}), D = test::buffer("D", DType::i64(), {n}),
            C = test::buffer("C", DType::f32(), {n});
  Var i("i");
  // A[i + D[i]] with D[i] = 2^40 lies far outside A: reading it faults (an
  // offset the compiler cannot see). A[i] is in [-1, 1), so the condition
  // never chooses that branch.
  Expr far = cast(DType::i64(), i) + test::ld(D, i);
  Expr never = test::ld(A, i) > make_const(DType::f32(), 100.0);
  // (+ 1: a bare load under a select, LLVM itself would move into a branch.)
  Stmt body = test::loop(i, n, test::st(C, select(never, test::ld(A, far) + 1.0f, test::ld(A, i) * 2.0f), i));
  rt::NDArray a = test::array(A), d = test::array(D), c = test::array(C);
  a.fill_random(3);
  for (int64_t k = 0; k < n; ++k) d.data_as<int64_t>()[k] = int64_t{1} << 40;
  REQUIRE(test::run(test::func("lazy_load", {A, D, C}, body), {a, d, c}) == 0);
  for (int64_t k = 0; k < n; ++k) CHECK(c.data_as<float>()[k] == a.data_as<float>()[k] * 2.0f);
}

TEST_CASE("a select's integer division by zero is not evaluated when the other branch is chosen") {
  const int64_t n = 40;
  BufferArg A = test::buffer("A", DType::i32(), {n}), B = test::buffer("B", DType::i32(), {n}),
            C = test::buffer("C", DType::i32(), {n});
  Var i("i");
  Expr b = test::ld(B, i);
  Stmt body = test::loop(i, n, test::st(C, select(b != 0, test::ld(A, i) / b, make_const(DType::i32(), int64_t{-7})), i));
  rt::NDArray a = test::array(A), bb = test::array(B), c = test::array(C);
  for (int64_t k = 0; k < n; ++k) {
    a.data_as<int32_t>()[k] = static_cast<int32_t>(100 + k);
    bb.data_as<int32_t>()[k] = static_cast<int32_t>(k % 3);  // every third divisor is zero
  }
  REQUIRE(test::run(test::func("lazy_div", {A, B, C}, body), {a, bb, c}) == 0);
  for (int64_t k = 0; k < n; ++k) CHECK(c.data_as<int32_t>()[k] == (k % 3 ? (100 + k) / (k % 3) : -7));
}

TEST_CASE("a vectorized select never reads the unchosen branch's elements either") {
  const int64_t n = 77;
  Tensor A = placeholder({n}, DType::f32(), "A");
  // A(i + 2^29) is far outside A; the interpreter never evaluates it.
  Tensor C = compute(
      {n},
      [&](Var i) {
        return select(A(i) > make_const(DType::f32(), 100.0), A(i + (1 << 29)), A(i) + make_const(DType::f32(), 1.0));
      },
      "C");
  for (int lanes : {1, 16}) {
    LoweredFunc f = lower_vectorized(C, {A, C}, lanes, "lazy_vec");
    BufferArg a_arg = f.args[0], c_arg = f.args[1];
    rt::NDArray a = test::array(a_arg), c = test::array(c_arg);
    a.fill_random(5);
    INFO("lanes " << lanes << "\n" << to_string(f));
    REQUIRE(test::run(f, {a, c}) == 0);
    for (int64_t k = 0; k < n; ++k) CHECK(c.data_as<float>()[k] == a.data_as<float>()[k] + 1.0f);
  }
}

TEST_CASE("integer arithmetic on data wraps the same in kernels and the interpreter, over the whole range") {
  // Full-range inputs (NDArray::fill_random) make the products overflow.
  for (DType t : {DType::i32(), DType::i8()}) {
    const int64_t n = 67;
    Tensor A = placeholder({n}, t, "A"), B = placeholder({n}, t, "B");
    Tensor C = compute({n}, [&](Var i) { return A(i) * B(i) + A(i) - B(i) * make_const(t, int64_t{3}); }, "C");
    for (int lanes : {1, 16}) {
      LoweredFunc f = lower_vectorized(C, {A, B, C}, lanes, "wrap");
      rt::NDArray a = test::array(f.args[0]), b = test::array(f.args[1]), c = test::array(f.args[2]);
      a.fill_random(11);
      b.fill_random(12);
      REQUIRE(test::run(f, {a, b, c}) == 0);
      std::vector<std::pair<Tensor, HostTensor>> in;
      for (auto [tensor, arr] : {std::make_pair(A, a), std::make_pair(B, b)}) {
        HostTensor h(t, {n});
        std::memcpy(h.bytes.data(), arr.data(), arr.nbytes());
        in.emplace_back(tensor, h);
      }
      HostTensor want = interpret({C}, in)[0];
      HostTensor got(t, {n});
      std::memcpy(got.bytes.data(), c.data(), c.nbytes());
      INFO(t.str() << " lanes " << lanes);
      CHECK(compare_tensors(want, got, 0, 0) == "");
      int64_t big = 0;  // the inputs really span the range
      for (int64_t k = 0; k < n; ++k) big += std::abs(a.get(k)) > (t.bits == 8 ? 64 : 1 << 20);
      CHECK(big > n / 4);
    }
  }
}

TEST_CASE("min and max against a constant keep NaN and the first operand on ties in kernels, either order") {
  // The LLVM backend emits one select against a constant that is not NaN
  // (codegen_expr.cpp): NaN, signed zeros and infinities against 0, -0 and
  // 1 on either side, bit for bit as the interpreter (float_min, float_max).
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> values = {kNaN, 0.0, -0.0, 1.0, -1.0, 5.0, inf, -inf, 0.5, -kNaN};
  const int64_t n = 40;
  for (DType t : {DType::f32(), DType::f64()}) {
    for (double c : {0.0, -0.0, 1.0}) {
      for (int form = 0; form < 4; ++form) {
        Tensor A = placeholder({n}, t, "A");
        Tensor C = compute(
            {n},
            [&](Var i) {
              Expr x = A(i), k = make_const(t, c);
              switch (form) {
                case 0:
                  return MinNode::make(x, k);
                case 1:
                  return MinNode::make(k, x);
                case 2:
                  return MaxNode::make(x, k);
                default:
                  return MaxNode::make(k, x);
              }
            },
            "C");
        for (int lanes : {1, 8}) {
          LoweredFunc f = lower_vectorized(C, {A, C}, lanes, "clamp");
          rt::NDArray a = test::array(f.args[0]), out = test::array(f.args[1]);
          HostTensor h(t, {n});
          for (int64_t k = 0; k < n; ++k) h.set_float(k, values[static_cast<size_t>(k) % values.size()]);
          std::memcpy(a.data(), h.bytes.data(), a.nbytes());
          REQUIRE(test::run(f, {a, out}) == 0);
          HostTensor want = interpret({C}, {{A, h}})[0];
          INFO(t.str() << " constant " << c << " form " << form << " lanes " << lanes << "\n" << to_string(f));
          for (int64_t k = 0; k < n; ++k) {
            const double w = want.get_float(k);
            const double g =
                t == DType::f32() ? static_cast<double>(out.data_as<float>()[k]) : out.data_as<double>()[k];
            INFO("element " << k << ": input " << h.get_float(k) << ", interpreter " << w << ", kernel " << g);
            CHECK(std::isnan(w) == std::isnan(g));
            if (!std::isnan(w)) CHECK((w == g && std::signbit(w) == std::signbit(g)));
          }
        }
      }
    }
  }
}
