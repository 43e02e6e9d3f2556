// The executor's compiled network against the reference interpreter: the
// same model with its inputs bound as constants folds completely, so the
// interpreter evaluates every node's tensor expression; the executor
// compiles them (operator families with their default configs, the rest
// with the generic schedule). Random shapes (1, primes, odd sizes),
// strides, paddings, groups and axes; one fixed seed plus a fresh one per run.
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <sstream>

#include "codegen/runtime_dtype.h"
#include "graph/executor.h"
#include "graph/onnx_import.h"
#include "support/graph_check.h"
#include "support/onnx_builder.h"
#include "support/test_seed.h"

using namespace kiln;
using kiln::test::OnnxBuilder;
using kiln::test::check_model;

namespace {

using Rng = std::mt19937_64;
int pick(Rng& rng, std::vector<int> options) { return options[rng() % options.size()]; }

void random_conv(uint64_t seed) {
  Rng rng(seed);
  const int64_t N = pick(rng, {1, 2}), C = pick(rng, {1, 3, 4, 6, 8}), H = pick(rng, {1, 5, 7, 12}), W = pick(rng, {1, 6, 11});
  const int64_t R = pick(rng, {1, 2, 3}), S = pick(rng, {1, 3});
  const int64_t sh = pick(rng, {1, 2}), sw = pick(rng, {1, 2}), dh = pick(rng, {1, 1, 2});
  int64_t groups = 1, K = pick(rng, {1, 2, 5, 8});
  const int g = pick(rng, {0, 0, 1, 2});
  if (g == 1) groups = K = C;                // depthwise
  if (g == 2 && C % 2 == 0) { groups = 2; K = 2 * pick(rng, {1, 3}); }
  std::vector<int64_t> pads = {pick(rng, {0, 1}), pick(rng, {0, 1, 2}), pick(rng, {0, 1}), pick(rng, {0, 1, 2})};
  if (pick(rng, {0, 1})) pads = {pads[0], pads[0], pads[0], pads[0]};  // often uniform: kiln's conv2d ops
  if ((H + pads[0] + pads[2] - (R - 1) * dh - 1) < 0 || (W + pads[1] + pads[3] - S) < 0) return;
  const bool bias = pick(rng, {0, 1});
  OnnxBuilder b(11);
  b.input("x", {N, C, H, W}).weight("w", {K, C / groups, R, S}, {}, seed);
  std::vector<std::string> ins = {"x", "w"};
  if (bias) {
    b.weight("b", {K}, {}, seed + 1);
    ins.push_back("b");
  }
  b.node("Conv", ins, {"c"}, {{"group", groups}, {"kernel_shape", std::vector<int64_t>{R, S}}, {"strides", std::vector<int64_t>{sh, sw}},
                              {"pads", pads}, {"dilations", std::vector<int64_t>{dh, 1}}})
      .node("HardSigmoid", {"c"}, {"y"}, {{"alpha", 0.2f}, {"beta", 0.5f}})
      .output("y");
  check_model(b, {{"x", {N, C, H, W}}}, seed,
              "conv N=" + std::to_string(N) + " C=" + std::to_string(C) + " HxW=" + std::to_string(H) + "x" + std::to_string(W) +
                  " K=" + std::to_string(K) + " RxS=" + std::to_string(R) + "x" + std::to_string(S) + " groups=" + std::to_string(groups) +
                  " stride=" + std::to_string(sh) + "," + std::to_string(sw) + " dilation=" + std::to_string(dh));
}

void random_matmul(uint64_t seed) {
  Rng rng(seed);
  const int64_t M = pick(rng, {1, 3, 7, 16}), K = pick(rng, {1, 5, 13}), N = pick(rng, {1, 2, 11});
  const int form = pick(rng, {0, 1, 2, 3});
  std::vector<int64_t> sa, sb;
  if (form == 0) { sa = {M, K}; sb = {K, N}; }                 // matmul op
  if (form == 1) { sa = {2, M, K}; sb = {K, N}; }              // rows flattened into the matmul op
  if (form == 2) { sa = {3, 2, M, K}; sb = {3, 2, K, N}; }     // batch_matmul op
  if (form == 3) { sa = {2, 1, M, K}; sb = {3, K, N}; }        // broadcast batches: generic
  OnnxBuilder b(13);
  b.input("a", sa).input("b", sb).node("MatMul", {"a", "b"}, {"y"}).output("y");
  check_model(b, {{"a", sa}, {"b", sb}}, seed, "matmul form " + std::to_string(form));
}

void random_pool_and_softmax(uint64_t seed) {
  Rng rng(seed);
  const int64_t C = pick(rng, {1, 3, 5}), H = pick(rng, {3, 7, 8}), W = pick(rng, {4, 9});
  const int64_t R = pick(rng, {2, 3}), S = pick(rng, {1, 2, 3}), st = pick(rng, {1, 2});
  const int64_t pad = R > 2 && S > 2 ? pick(rng, {0, 1}) : 0;
  const bool is_max = pick(rng, {0, 1});
  OnnxBuilder b(pick(rng, {11, 13}));
  b.input("x", {1, C, H, W})
      .node(is_max ? "MaxPool" : "AveragePool", {"x"}, {"p"},
            {{"kernel_shape", std::vector<int64_t>{R, S}}, {"strides", std::vector<int64_t>{st, pick(rng, {1, 2})}},
             {"pads", std::vector<int64_t>{pad, pad, pad, pad}}, {"ceil_mode", int64_t{pick(rng, {0, 1})}},
             {"count_include_pad", int64_t{pick(rng, {0, 1})}}})
      .node("Softmax", {"p"}, {"y"}, {{"axis", int64_t{pick(rng, {-1, 1, 2})}}})
      .output("y");
  check_model(b, {{"x", {1, C, H, W}}}, seed, std::string(is_max ? "max" : "average") + " pool then softmax");
}

// ConvTranspose against a direct scatter of every input pixel (an
// independent reference: the interpreter evaluates the same gather
// expression the executor compiles). Kernels shorter than, as long as and
// longer than their strides take different forms of that expression.
void random_conv_transpose(uint64_t seed) {
  Rng rng(seed);
  const int64_t N = pick(rng, {1, 2}), groups = pick(rng, {1, 1, 2}), C = groups * pick(rng, {1, 3}),
                Kg = pick(rng, {1, 2, 5});
  const int64_t H = pick(rng, {1, 4, 7}), W = pick(rng, {2, 5});
  std::vector<int64_t> kernel = {pick(rng, {1, 2, 3}), pick(rng, {1, 2, 3})},
                       stride = {pick(rng, {1, 2, 3}), pick(rng, {1, 2})}, dil = {pick(rng, {1, 1, 2}), 1},
                       pads = {pick(rng, {0, 1}), pick(rng, {0, 1}), pick(rng, {0, 1}), pick(rng, {0, 1})},
                       out_pad = {0, 0};
  for (int k = 0; k < 2; ++k) out_pad[k] = pick(rng, {0, 1}) * (std::max(stride[k], dil[k]) - 1);
  std::vector<int64_t> out = {N, groups * Kg};
  for (int k = 0; k < 2; ++k)
    out.push_back((std::vector<int64_t>{H, W}[k] - 1) * stride[k] + (kernel[k] - 1) * dil[k] + 1 + out_pad[k] -
                  pads[k] - pads[k + 2]);
  if (out[2] <= 0 || out[3] <= 0) return;
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(N * C * H * W)), w(static_cast<size_t>(C * Kg * kernel[0] * kernel[1])),
      bias(static_cast<size_t>(groups * Kg));
  for (float& v : x) v = u(rng);
  for (float& v : w) v = u(rng);
  for (float& v : bias) v = u(rng);
  OnnxBuilder b(11);
  b.input("x", {N, C, H, W}).weight("w", {C, Kg, kernel[0], kernel[1]}, w).weight("b", {groups * Kg}, bias);
  b.node("ConvTranspose", {"x", "w", "b"}, {"y"},
         {{"group", groups},
          {"kernel_shape", kernel},
          {"strides", stride},
          {"dilations", dil},
          {"pads", pads},
          {"output_padding", out_pad}})
      .output("y");
  std::ostringstream what;
  what << "ConvTranspose seed " << seed << ": N=" << N << " C=" << C << " groups=" << groups << " Kg=" << Kg
       << " HxW=" << H << "x" << W << " kernel=" << kernel[0] << "x" << kernel[1] << " stride=" << stride[0] << ","
       << stride[1] << " dilation=" << dil[0] << " pads=" << pads[0] << "," << pads[1] << "," << pads[2] << ","
       << pads[3] << " output_padding=" << out_pad[0] << "," << out_pad[1];
  INFO(what.str());
  std::vector<double> want(static_cast<size_t>(out[0] * out[1] * out[2] * out[3]));
  const int64_t OH = out[2], OW = out[3], K = groups * Kg, Cg = C / groups;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t i = 0; i < OH * OW; ++i)
        want[static_cast<size_t>((n * K + k) * OH * OW + i)] = bias[static_cast<size_t>(k)];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ih = 0; ih < H; ++ih)
        for (int64_t iw = 0; iw < W; ++iw)
          for (int64_t kk = 0; kk < Kg; ++kk)
            for (int64_t r = 0; r < kernel[0]; ++r)
              for (int64_t s = 0; s < kernel[1]; ++s) {
                const int64_t oh = ih * stride[0] + r * dil[0] - pads[0], ow = iw * stride[1] + s * dil[1] - pads[1];
                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                const int64_t k = (c / Cg) * Kg + kk;
                want[static_cast<size_t>(((n * K + k) * OH + oh) * OW + ow)] +=
                    static_cast<double>(x[static_cast<size_t>(((n * C + c) * H + ih) * W + iw)]) *
                    w[static_cast<size_t>(((c * Kg + kk) * kernel[0] + r) * kernel[1] + s)];
              }
  graph::Executor ex(graph::import_onnx_bytes(b.bytes(), "model", {}), {});
  rt::NDArray xa = rt::NDArray::empty({N, C, H, W}, rt::DataType::f32());
  std::memcpy(xa.data(), x.data(), x.size() * sizeof(float));
  const std::vector<rt::NDArray> got = ex.run({xa});
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].shape() == out);
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(got[0].data_as<float>()[i]) - want[i]));
  CHECK(worst <= 1e-4);
}

}  // namespace

TEST_CASE("executor: random convolutions (kiln's conv2d ops and direct expressions) equal the interpreter") {
  for (uint64_t s : {11ull, 12ull, 13ull, 14ull, 15ull, 16ull, 17ull, 18ull}) random_conv(s);
  const uint64_t run = testing::run_seed();
  INFO(testing::seed_note(run));
  for (uint64_t k = 0; k < 6; ++k) random_conv(run * 31 + k);
}

TEST_CASE("executor: random transposed convolutions equal a direct scatter of their input") {
  for (uint64_t s = 1; s <= 24; ++s) random_conv_transpose(s);
  const uint64_t run = testing::run_seed();
  INFO(testing::seed_note(run));
  for (uint64_t k = 0; k < 8; ++k) random_conv_transpose(run * 37 + k);
}

TEST_CASE("executor: random matrix products equal the interpreter") {
  for (uint64_t s = 1; s <= 8; ++s) random_matmul(s);
  const uint64_t run = testing::run_seed();
  INFO(testing::seed_note(run));
  for (uint64_t k = 0; k < 4; ++k) random_matmul(run * 17 + k);
}

TEST_CASE("executor: random pools and softmaxes equal the interpreter") {
  for (uint64_t s = 1; s <= 8; ++s) random_pool_and_softmax(s);
  const uint64_t run = testing::run_seed();
  INFO(testing::seed_note(run));
  for (uint64_t k = 0; k < 4; ++k) random_pool_and_softmax(run * 13 + k);
}

TEST_CASE("executor: glue operators (broadcasting, transpose, concat, slice, reductions, resize, views)") {
  OnnxBuilder b(13);
  b.input("x", {2, 3, 5}).input("y", {5}).ints("starts", {1}).ints("ends", {5}).ints("axes", {2}).ints("shape", {6, -1})
      .weight("s", {4}, {1, 1, 2, 3})
      .weight("e", {3}, {1, 2, 3})
      .node("Add", {"x", "y"}, {"a"})
      .node("Div", {"a", "y"}, {"d"})
      .node("Transpose", {"d"}, {"t"}, {{"perm", std::vector<int64_t>{0, 2, 1}}})
      .node("Slice", {"x", "starts", "ends", "axes"}, {"sl"})
      .node("Transpose", {"sl"}, {"slt"}, {{"perm", std::vector<int64_t>{0, 2, 1}}})
      .node("Concat", {"t", "slt"}, {"cat"}, {{"axis", int64_t{1}}})
      .node("ReduceMean", {"cat"}, {"m"}, {{"axes", std::vector<int64_t>{-1}}})
      .node("Sub", {"cat", "m"}, {"c"})
      .node("Pow", {"c", "e"}, {"p"})  // exponent broadcast over the last axis: a general pow
      .node("Unsqueeze", {"p", "axes"}, {"u"})
      .node("Resize", {"u", "", "s"}, {"r"}, {{"mode", std::string("nearest")}})
      .node("Reshape", {"r", "shape"}, {"out"})
      .output("out");
  check_model(b, {{"x", {2, 3, 5}}, {"y", {5}}}, 7, "glue");
}

TEST_CASE("executor: intermediate tensors share buffers by lifetime") {
  OnnxBuilder b(13);
  b.input("x", {64, 64});
  std::string prev = "x";
  for (int i = 0; i < 10; ++i) {
    const std::string next = "t" + std::to_string(i);
    b.node(i % 2 ? "Sigmoid" : "Relu", {prev}, {next});
    prev = next;
  }
  b.output(prev);
  graph::ExecutorOptions unfused;
  unfused.fuse = false;
  auto ex = check_model(b, {{"x", {64, 64}}}, 3, "chain", unfused);
  // Ten 16 KiB tensors, each live for two steps: two buffers suffice.
  CHECK(ex->memory().intermediate_bytes == 10 * 64 * 64 * 4);
  CHECK(ex->memory().buffers == 2);
  CHECK(ex->memory().peak_bytes == 2 * 64 * 64 * 4);
  // Relu and Sigmoid each compile once.
  CHECK(ex->distinct_kernels() == 2);
  CHECK(ex->steps().size() == 10);
  // Fused, the chain is one kernel writing only the output.
  auto fused = check_model(b, {{"x", {64, 64}}}, 3, "fused chain");
  REQUIRE(fused->steps().size() == 1);
  CHECK(fused->steps()[0].fused_nodes == 10);
  CHECK(fused->memory().intermediate_bytes == 64 * 64 * 4);
}

TEST_CASE("executor: element-wise fusion across branches, broadcasts and reductions") {
  // Both branches fuse into the Add; the broadcast Mul reads the small Tanh,
  // which stays a kernel of its own (fused, it would be recomputed per use);
  // the reduction reads each element once, so the chain before it fuses
  // into it, and its consumer too.
  OnnxBuilder b(13);
  b.input("a", {3, 5, 7}).input("c", {3, 5, 7}).input("s", {3, 1, 7})
      .node("Relu", {"a"}, {"ra"}).node("Sigmoid", {"ra"}, {"sa"})
      .node("Relu", {"c"}, {"rc"}).node("Sigmoid", {"rc"}, {"sc"})
      .node("Add", {"sa", "sc"}, {"sum"})
      .node("Tanh", {"s"}, {"ts"})
      .node("Mul", {"sum", "ts"}, {"m"})
      .node("ReduceMean", {"m"}, {"mean"}, {{"axes", std::vector<int64_t>{1}}})
      .node("Neg", {"mean"}, {"out"})
      .output("out");
  auto ex = check_model(b, {{"a", {3, 5, 7}}, {"c", {3, 5, 7}}, {"s", {3, 1, 7}}}, 5, "branches");
  int fused_nodes = 0;
  for (const auto& st : ex->steps()) fused_nodes += st.fused_nodes;
  CHECK(fused_nodes == 9);
  CHECK(ex->steps().size() == 2);  // Tanh; Relu, Sigmoid x2, Add, Mul, ReduceMean, Neg
}
