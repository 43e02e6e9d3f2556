// depthwise_conv2d_nchwc, the depthwise convolution on the blocked NCHW[x]c
// layout: its definition agrees with a naive loop nest written here (blocked
// indexing, stride, dilation, padding, bias, relu); its template lowers
// correct kernels for random shapes (1, primes, odd; block sizes that do not
// fill a vector; kernel sizes 1 to 7, strides 1 and 2) and random configs,
// with the border guarded or padded; guarded borders are peeled off the
// interior; bad block sizes are user errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <sstream>

#include "base/error.h"
#include "compute/interpreter.h"
#include "compute/ir_functor.h"
#include "kernels/depthwise_conv2d_nchwc.h"
#include "test_ops_conv_check.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Contains;

namespace {

// out[n][co][oh][ow][ci] by the formula in depthwise_conv2d_nchwc.h, in plain loops.
std::vector<float> naive_depthwise_nchwc(const DepthwiseNchwcShape& s, const float* data, const float* weight,
                                         const float* bias) {
  const int64_t CB = s.C / s.cb;
  std::vector<float> out(static_cast<size_t>(s.N * CB * s.OH * s.OW * s.cb));
  size_t o = 0;
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t co = 0; co < CB; ++co)
      for (int64_t oh = 0; oh < s.OH; ++oh)
        for (int64_t ow = 0; ow < s.OW; ++ow)
          for (int64_t ci = 0; ci < s.cb; ++ci) {
            double acc = bias ? bias[co * s.cb + ci] : 0.0;
            for (int64_t r = 0; r < s.R; ++r)
              for (int64_t q = 0; q < s.S; ++q) {
                const int64_t h = oh * s.stride + r * s.dil - s.pad, w = ow * s.stride_w + q * s.dil - s.pad;
                if (h < 0 || h >= s.H || w < 0 || w >= s.W) continue;
                const float x = data[(((n * CB + co) * s.H + h) * s.W + w) * s.cb + ci];
                const float wt = weight[((co * s.R + r) * s.S + q) * s.cb + ci];
                acc += static_cast<double>(x) * wt;
              }
            out[o++] = static_cast<float>(activate(acc, s.act));
          }
  return out;
}

std::string random_workload(std::mt19937_64& rng, const char* dtype = "f32") {
  const int64_t k = std::vector<int64_t>{1, 3, 5, 7}[pick(rng, 0, 3)];
  const int64_t R = k, S = pick(rng, 0, 3) == 0 ? std::max<int64_t>(1, k - 2) : k;
  const int64_t stride = pick(rng, 1, 2), dil = pick(rng, 1, 2), pad = pick(rng, 0, static_cast<int>(k / 2) + 1);
  // A stride in W of its own, some of the time (PP-OCR's (2, 1) strides).
  const int64_t stride_w = pick(rng, 0, 2) == 0 ? 3 - stride : 0;
  // Block sizes that fill a vector, part of one or several.
  const int64_t cb = std::vector<int64_t>{1, 3, 4, 8, 16, 32}[pick(rng, 0, 5)];
  const int64_t C = cb * pick(rng, 1, 3);
  const int64_t H = odd_extent(rng, std::max<int64_t>(1, dil * (R - 1) + 1 - 2 * pad));
  const int64_t W = odd_extent(rng, std::max<int64_t>(1, dil * (S - 1) + 1 - 2 * pad));
  std::ostringstream os;
  os << "depthwise_conv2d_nchwc:N=" << pick(rng, 1, 2) << ",C=" << C << ",H=" << H << ",W=" << W << ",R=" << R
     << ",S=" << S << ",stride=" << stride << ",pad=" << pad << ",dilation=" << dil << ",cb=" << cb
     << (stride_w > 0 ? ",stride_w=" + std::to_string(stride_w) : "") << ",bias=" << pick(rng, 0, 1)
     << (std::string(dtype) == "f32" ? random_activation(rng) : ",relu6=1") << ",dtype=" << dtype;
  return os.str();
}

// How often the kernel updates an accumulator with a tap of the data, and
// how often under a guard: each Store that reads `data` counts the product of
// the constant extents of the loops around it (loop bodies that a branch
// partitions count in full: an over-estimate of the guarded share).
class TapCounter : public IRVisitor {
 public:
  double taps = 0, guarded = 0;

 protected:
  void visit_For(const ForNode* op) override {
    const int64_t* e = as_const_int(op->extent);
    double saved = trips_;
    trips_ *= e ? static_cast<double>(*e) : 1.0;
    IRVisitor::visit_For(op);
    trips_ = saved;
  }
  void visit_IfThenElse(const IfThenElseNode* op) override {
    ++depth_;
    IRVisitor::visit_IfThenElse(op);
    --depth_;
  }
  void visit_Store(const StoreNode* op) override {
    bool reads_data = false;
    post_order_visit(op->value, [&](const Ref<Object>& x) {
      if (auto* l = x.as<LoadNode>()) reads_data |= l->buffer->name == "data";
    });
    if (reads_data) {
      taps += trips_;
      if (depth_ > 0) guarded += trips_;
    }
  }

 private:
  double trips_ = 1;
  int depth_ = 0;
};

// The share of output positions whose window reaches into the padding.
double border_share(const DepthwiseNchwcShape& s) {
  auto inside = [&](int64_t out, int64_t in, int64_t k) {
    int64_t n = 0;
    for (int64_t o = 0; o < out; ++o) n += o * s.stride - s.pad >= 0 && o * s.stride - s.pad + (k - 1) * s.dil < in;
    return n;
  };
  return 1.0 - static_cast<double>(inside(s.OH, s.H, s.R) * inside(s.OW, s.W, s.S)) / static_cast<double>(s.OH * s.OW);
}

}  // namespace

TEST_CASE("depthwise_conv2d_nchwc's definition agrees with a naive loop nest", "[ops][conv][depthwise]") {
  std::mt19937_64 rng(91);
  for (int t = 0; t < 10; ++t) {
    const std::string w = random_workload(rng);
    INFO(w);
    OpInstance op = build_workload(w);
    DepthwiseNchwcShape s = depthwise_conv2d_nchwc_shape(op);
    std::vector<std::pair<Tensor, HostTensor>> in;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      HostTensor h(op.inputs[i].dtype(), shape_of(op.inputs[i]));
      h.fill_random(700 + 10 * t + i, -2.0, 2.0);
      in.emplace_back(op.inputs[i], h);
    }
    HostTensor got = interpret(op.outputs, in)[0];
    std::vector<float> want = naive_depthwise_nchwc(s, in[0].second.data<float>(), in[1].second.data<float>(),
                                                    s.bias ? in[2].second.data<float>() : nullptr);
    REQUIRE(got.num_elements() == static_cast<int64_t>(want.size()));
    HostTensor expected(got.dtype, got.shape);
    std::copy(want.begin(), want.end(), expected.data<float>());
    CHECK(compare_tensors(expected, got, 1e-4, 1e-4) == "");
    CHECK(op.flops == 2.0 * s.N * s.C * s.OH * s.OW * s.R * s.S);
  }
}

TEST_CASE("depthwise_conv2d_nchwc: random shapes, block sizes, kernels, strides, epilogues and configs",
          "[ops][conv][depthwise][property]") {
  std::mt19937_64 rng(93);
  for (int t = 0; t < 10; ++t) check_template_configs(random_workload(rng), 3, 800 + static_cast<uint64_t>(t));
  // Integers accumulate in i32 and wrap like the interpreter.
  for (int t = 0; t < 3; ++t) check_template_configs(random_workload(rng, "i8"), 2, 820 + static_cast<uint64_t>(t));
  // MobileNet-like blocks: 16 channels a block, 3x3 and 5x5, stride 2.
  check_template_configs("depthwise_conv2d_nchwc:C=32,H=9,W=10,R=3,S=3,pad=1,relu=1", 4, 11);
  check_template_configs("depthwise_conv2d_nchwc:C=16,H=11,W=13,R=5,S=5,stride=2,pad=2,bias=1", 3, 12);
  check_template_configs("depthwise_conv2d_nchwc:C=24,H=7,W=7,R=7,S=7,pad=3,cb=8", 3, 13);
  // Rows downsampled only, and columns only.
  check_template_configs("depthwise_conv2d_nchwc:C=32,H=12,W=20,R=5,S=5,stride=2,stride_w=1,pad=2,bias=1,hswish=1", 3,
                         14);
  check_template_configs("depthwise_conv2d_nchwc:C=16,H=7,W=13,R=3,S=3,stride=1,stride_w=2,pad=1", 3, 15);
}

TEST_CASE("depthwise_conv2d_nchwc: every border option is correct", "[ops][conv][depthwise]") {
  const std::string w = "depthwise_conv2d_nchwc:N=2,C=32,H=13,W=11,R=3,S=3,stride=2,pad=1,bias=1,relu=1";
  OpInstance op = build_workload(w);
  const OpDef& def = find_op(op.op);
  CpuInfo cpu = avx512_cpu();
  auto space = def.define_space(op, cpu);
  Config d = def.default_config(op, cpu, *space);
  for (const std::string border : {"guard", "pad_root", "pad_band1", "pad_band2"}) {
    nlohmann::json j = d.to_json();
    j["border"] = border;
    ScheduledOp so = def.apply_config(op, space->from_json(j));
    std::string ir;
    INFO(border << "\n" << ir);
    CHECK(check_schedule(*so.schedule, op.inputs, so.args, op.outputs, 5, &ir) == "");
  }
}

TEST_CASE("depthwise_conv2d_nchwc: guarded borders are peeled off the interior", "[ops][conv][depthwise]") {
  // The default config guards each tap. With the column and row loops left
  // unfused (parallel 2), loop partitioning peels the border rows and
  // columns: no more taps run guarded than the border's share of the output.
  CpuInfo cpu = avx512_cpu();
  for (const char* w : {"depthwise_conv2d_nchwc:C=144,H=56,W=56,R=3,S=3,pad=1",
                        "depthwise_conv2d_nchwc:C=192,H=28,W=28,R=3,S=3,stride=2,pad=1",
                        "depthwise_conv2d_nchwc:C=96,H=14,W=14,R=5,S=5,pad=2"}) {
    OpInstance op = build_workload(w);
    const OpDef& def = find_op(op.op);
    auto space = def.define_space(op, cpu);
    Config d = def.default_config(op, cpu, *space);
    CHECK(d.annotate("border") == "guard");
    nlohmann::json j = d.to_json();
    j["parallel"] = 2;
    ScheduledOp so = def.apply_config(op, space->from_json(j));
    LoweredFunc f = lower(*so.schedule, so.args, "kernel");
    INFO(w << "\n" << to_string(f));
    TapCounter count;
    count.visit(f.body);
    const DepthwiseNchwcShape s = depthwise_conv2d_nchwc_shape(op);
    REQUIRE(count.taps > 0);
    CHECK(count.guarded / count.taps <= border_share(s));
  }
}

TEST_CASE("depthwise_conv2d_nchwc: canonical string, space and default config", "[ops][conv][depthwise]") {
  CHECK(build_workload("depthwise_conv2d_nchwc:C=144,H=56,W=56,R=3,S=3,pad=1").canonical ==
        "depthwise_conv2d_nchwc:N=1,C=144,H=56,W=56,R=3,S=3,stride=1,pad=1,dilation=1,cb=16,dtype=f32");
  // stride_w only where it differs from stride (one task key per layer).
  CHECK(build_workload("depthwise_conv2d_nchwc:C=16,H=9,W=9,R=3,S=3,stride=2,stride_w=1").canonical ==
        "depthwise_conv2d_nchwc:N=1,C=16,H=9,W=9,R=3,S=3,stride=2,pad=0,dilation=1,cb=16,dtype=f32,stride_w=1");
  CpuInfo cpu = avx512_cpu();
  const OpDef& def = find_op("depthwise_conv2d_nchwc");
  OpInstance op = build_workload("depthwise_conv2d_nchwc:C=144,H=56,W=56,R=3,S=3,pad=1");
  auto space = def.define_space(op, cpu);
  CHECK(space->size() >= 10000);
  // 14 columns of one 16-channel vector each in registers.
  Config d = def.default_config(op, cpu, *space);
  CHECK(d.split("tile_ow") == std::vector<int64_t>{4, 14});
  for (const char* w : {"depthwise_conv2d_nchwc:C=144,H=56,W=56,R=3,S=3,pad=1",
                        "depthwise_conv2d_nchwc:C=96,H=113,W=113,R=3,S=3,stride=2,pad=1,cb=32",
                        "depthwise_conv2d_nchwc:C=9,H=9,W=9,R=1,S=1,cb=3,bias=1"})
    check_default_schedule(w);
  // Knobs that do nothing for a shape have one option: no padding, one tap wide.
  OpInstance pointwise = build_workload("depthwise_conv2d_nchwc:C=64,H=14,W=14,R=1,S=1");
  auto ps = def.define_space(pointwise, cpu);
  CHECK(ps->knob("border").size() == 1);
  CHECK(ps->knob("unroll_kw").size() == 1);
}

TEST_CASE("depthwise_conv2d_nchwc workload errors are user errors", "[ops][conv][depthwise][user_error]") {
  CHECK_THROWS_WITH(build_workload("depthwise_conv2d_nchwc:C=24,H=9,W=9,R=3,S=3,pad=1"),
                    Contains("depthwise_conv2d_nchwc: the channel block cb=16 must divide the channels (24)"));
  CHECK_THROWS_WITH(build_workload("depthwise_conv2d_nchwc:C=16,H=2,W=2,R=5,S=5"),
                    Contains("depthwise_conv2d_nchwc"));
  CHECK_THROWS_WITH(build_workload("depthwise_conv2d_nchwc:C=16,H=9,W=9,R=3,S=3,cb=0"), Contains("cb=0"));
  CHECK_THROWS_WITH(build_workload("depthwise_conv2d_nchwc:C=16,H=9,W=9,R=3,S=3,stride=2,stride_w=2"),
                    Contains("depthwise_conv2d_nchwc: stride_w=2 is the stride already; give stride_w only for a "
                             "stride in W that differs from stride"));
}
