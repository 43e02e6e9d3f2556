// The convolution op family: conv2d's existing task keys, ConfigSpace and
// default configs stay as they were for groups = 1 without an epilogue;
// grouped conv2d, its bias / relu epilogue, conv2d_nhwc and
// depthwise_conv2d on random small shapes (1, primes, odd) with random
// configs agree with the reference interpreter; the default schedules are
// run and checked too; bad workloads are user errors.
#include <catch2/catch.hpp>
#include <random>
#include <sstream>

#include "base/error.h"
#include "kernels/conv2d.h"
#include "test_ops_conv_check.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Contains;

namespace {

// A random window (R, S, stride, pad, dilation) and an input extent it fits.
struct Window {
  int64_t R, S, stride, pad, dil, H, W;
};

Window random_window(std::mt19937_64& rng) {
  Window w{};
  w.R = pick(rng, 1, 3);
  w.S = pick(rng, 1, 3);
  w.stride = pick(rng, 1, 2);
  w.dil = pick(rng, 1, 2);
  w.pad = pick(rng, 0, 2);
  int64_t need_h = w.dil * (w.R - 1) + 1 - 2 * w.pad, need_w = w.dil * (w.S - 1) + 1 - 2 * w.pad;
  w.H = odd_extent(rng, std::max<int64_t>(1, need_h));
  w.W = odd_extent(rng, std::max<int64_t>(1, need_w));
  return w;
}

std::string window_params(const Window& w) {
  std::ostringstream os;
  os << "R=" << w.R << ",S=" << w.S << ",stride=" << w.stride << ",pad=" << w.pad << ",dilation=" << w.dil;
  return os.str();
}

}  // namespace

TEST_CASE("conv2d task keys and its space for groups=1 without epilogue are unchanged", "[ops][conv]") {
  // Canonical strings as databases hold them: the new parameters stay out at their defaults.
  CHECK(build_workload("conv2d:C=64,H=56,W=56,K=64,R=3,S=3,pad=1").canonical ==
        "conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1,dilation=1,dtype=f32");
  CHECK(build_workload("conv2d:C=64,H=56,W=56,K=64,R=3,S=3,pad=1,groups=1,bias=0,relu=0").canonical ==
        "conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1,dilation=1,dtype=f32");
  CHECK(build_workload("conv2d:C=64,H=56,W=56,K=64,R=3,S=3,pad=1,groups=2,relu=1").canonical ==
        "conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1,dilation=1,dtype=f32,groups=2,relu=1");
  // Space sizes and default configs as they were before groups and epilogues
  // (issue 3's templates), but for the "border" knob added since: two options
  // on padded windows (twice the size), "pad" in the default (the old kernel),
  // and configs stored without it still load (test_ops_conv_border.cpp).
  struct Known {
    const char* workload;
    uint64_t size;
    const char* default_config;
  };
  const Known known[] = {
      {"conv2d:C=64,H=56,W=56,K=64,R=3,S=3,pad=1", 2 * 799948800ull,
       R"({"acc_at":4,"border":"pad","data_at":-1,"layout":"nchw","order":[0,1,2,3,4],"out_vec":"none","parallel":3,)"
       R"("reduce_order":[0,1,2,3],"tile_c":[4,16],"tile_k":[2,32],"tile_oh":[56,1,1],"tile_ow":[4,14],)"
       R"("unroll_kw":"none","weight_at":-1})"},
      {"conv2d:N=2,C=5,H=7,W=6,K=12,R=3,S=2,pad=1,dilation=2", 2 * 17694720ull,
       R"({"acc_at":4,"border":"pad","data_at":-1,"layout":"nchw","order":[0,1,2,3,4],"out_vec":"none","parallel":3,)"
       R"("reduce_order":[0,1,2,3],"tile_c":[1,5],"tile_k":[1,12],"tile_oh":[5,1,1],"tile_ow":[1,6],)"
       R"("unroll_kw":"none","weight_at":-1})"},
      {"conv2d:C=3,H=224,W=224,K=64,R=7,S=7,stride=2,pad=3,dtype=i8", 2 * 431308800ull,
       R"({"acc_at":4,"border":"pad","data_at":-1,"layout":"nchw","order":[0,1,2,3,4],"out_vec":"none","parallel":3,)"
       R"("reduce_order":[0,1,2,3],"tile_c":[1,3],"tile_k":[2,32],"tile_oh":[112,1,1],"tile_ow":[8,14],)"
       R"("unroll_kw":"none","weight_at":-1})"},
  };
  CpuInfo cpu = avx512_cpu();
  for (const Known& k : known) {
    OpInstance op = build_workload(k.workload);
    const OpDef& def = find_op("conv2d");
    auto space = def.define_space(op, cpu);
    INFO(k.workload);
    CHECK(space->size() == k.size);
    CHECK(def.default_config(op, cpu, *space).str() == k.default_config);
  }
}

TEST_CASE("grouped conv2d with bias and activations: random shapes and configs", "[ops][conv][property]") {
  std::mt19937_64 rng(41);
  for (int t = 0; t < 6; ++t) {
    Window w = random_window(rng);
    int64_t G = pick(rng, 1, 3), Cg = odd_extent(rng) % 6 + 1, Kg = odd_extent(rng) % 7 + 1;
    std::ostringstream os;
    os << "conv2d:N=" << pick(rng, 1, 2) << ",C=" << G * Cg << ",H=" << w.H << ",W=" << w.W << ",K=" << G * Kg << ","
       << window_params(w) << ",groups=" << G << ",bias=" << pick(rng, 0, 1) << random_activation(rng);
    check_template_configs(os.str(), 3, 100 + static_cast<uint64_t>(t));
  }
  // Channel blocks of several groups (K/groups = 16, 32) in both data layouts; integer types.
  check_template_configs("conv2d:C=8,H=5,W=6,K=64,R=3,S=3,pad=1,groups=2,bias=1,relu=1", 4, 7);
  check_template_configs("conv2d:C=6,H=6,W=5,K=9,R=3,S=1,stride=2,groups=3,dtype=i32,bias=1", 2, 8);
}

TEST_CASE("grouped conv2d keeps channel blocks inside a group", "[ops][conv]") {
  CpuInfo cpu = avx512_cpu();
  OpInstance op = build_workload("conv2d:C=32,H=8,W=8,K=48,R=3,S=3,pad=1,groups=2");
  auto space = find_op("conv2d").define_space(op, cpu);
  for (auto& o : space->knob("tile_k").options) CHECK(24 % o[1] == 0);
  for (auto& o : space->knob("tile_c").options) CHECK(o[1] <= 16);
  CHECK(op.flops == 2.0 * 48 * 8 * 8 * 16 * 9);
  // The packed NCHW[x]c layout with every channel block of a group.
  OpInstance small = build_workload("conv2d:C=6,H=4,W=5,K=4,R=3,S=3,pad=1,groups=2,bias=1");
  auto ss = find_op("conv2d").define_space(small, cpu);
  nlohmann::json js = find_op("conv2d").default_config(small, cpu, *ss).to_json();
  js["layout"] = "nchwc";
  js["data_at"] = 0;
  for (auto& cb : ss->knob("tile_c").options) {
    js["tile_c"] = cb;
    ScheduledOp so = find_op("conv2d").apply_config(small, ss->from_json(js));
    INFO("tile_c " << nlohmann::json(cb).dump());
    CHECK(check_schedule(*so.schedule, small.inputs, so.args, small.outputs, 9) == "");
  }
}

TEST_CASE("conv2d_nhwc: random shapes, groups, epilogues and configs", "[ops][conv][property]") {
  std::mt19937_64 rng(43);
  for (int t = 0; t < 6; ++t) {
    Window w = random_window(rng);
    int64_t G = pick(rng, 1, 2), Cg = odd_extent(rng) % 6 + 1, Kg = odd_extent(rng) % 19 + 1;
    std::ostringstream os;
    os << "conv2d_nhwc:N=" << pick(rng, 1, 2) << ",H=" << w.H << ",W=" << w.W << ",C=" << G * Cg << ",K=" << G * Kg
       << "," << window_params(w) << ",groups=" << G << ",bias=" << pick(rng, 0, 1) << random_activation(rng);
    check_template_configs(os.str(), 3, 200 + static_cast<uint64_t>(t));
  }
  check_template_configs("conv2d_nhwc:H=7,W=9,C=5,K=40,R=3,S=3,pad=1,dtype=u8", 2, 9);
}

TEST_CASE("depthwise_conv2d: random shapes, epilogues and configs", "[ops][conv][property]") {
  std::mt19937_64 rng(47);
  for (int t = 0; t < 6; ++t) {
    Window w = random_window(rng);
    std::ostringstream os;
    os << "depthwise_conv2d:N=" << pick(rng, 1, 2) << ",C=" << odd_extent(rng) + pick(rng, 0, 20) << ",H=" << w.H
       << ",W=" << w.W << "," << window_params(w) << ",bias=" << pick(rng, 0, 1) << random_activation(rng);
    check_template_configs(os.str(), 3, 300 + static_cast<uint64_t>(t));
  }
  check_template_configs("depthwise_conv2d:C=32,H=9,W=9,R=3,S=3,stride=2,pad=1,dtype=i8", 2, 10);
}

TEST_CASE("depthwise_conv2d with a stride in W of its own: random shapes and configs", "[ops][conv][property]") {
  // PP-OCR's and MobileNet's (2, 1) downsampling, and the other way round.
  std::mt19937_64 rng(53);
  for (int t = 0; t < 4; ++t) {
    Window w = random_window(rng);
    const int64_t stride_w = w.stride == 1 ? 2 : 1;
    std::ostringstream os;
    os << "depthwise_conv2d:N=" << pick(rng, 1, 2) << ",C=" << odd_extent(rng) + pick(rng, 0, 20) << ",H=" << w.H
       << ",W=" << w.W << "," << window_params(w) << ",stride_w=" << stride_w << ",bias=" << pick(rng, 0, 1)
       << random_activation(rng);
    INFO(os.str());
    const OpInstance op = build_workload(os.str());
    CHECK(op.canonical.find(",stride_w=" + std::to_string(stride_w)) != std::string::npos);
    check_template_configs(os.str(), 3, 400 + static_cast<uint64_t>(t));
  }
  // Without stride_w the canonical string (the task key) is as before.
  CHECK(build_workload("depthwise_conv2d:C=8,H=9,W=9,R=3,S=3,stride=2").canonical ==
        "depthwise_conv2d:N=1,C=8,H=9,W=9,R=3,S=3,stride=2,pad=0,dilation=1,dtype=f32");
  CHECK_THROWS_WITH(build_workload("depthwise_conv2d:C=8,H=9,W=9,R=3,S=3,stride=2,stride_w=2"),
                    Contains("stride_w=2 is the stride already"));
}

TEST_CASE("depthwise_conv2d: the nchw layout packs nothing and agrees with the reference", "[ops][conv]") {
  CpuInfo cpu = avx512_cpu();
  const OpDef& def = find_op("depthwise_conv2d");
  for (const char* w : {"depthwise_conv2d:N=2,C=5,H=11,W=13,R=3,S=3,pad=1,bias=1,relu6=1",
                        "depthwise_conv2d:C=3,H=9,W=17,R=5,S=5,stride=2,pad=2,dilation=2,hswish=1",
                        "depthwise_conv2d:C=4,H=7,W=7,R=3,S=3,dtype=i8"}) {
    OpInstance op = build_workload(w);
    auto space = def.define_space(op, cpu);
    nlohmann::json j = def.default_config(op, cpu, *space).to_json();
    CHECK(j["layout"] == "blocked");
    // A config stored before the layout knob existed still parses: blocked.
    j.erase("layout");
    CHECK(space->from_json(j).annotate("layout") == "blocked");
    j["layout"] = "nchw";
    ScheduledOp so = def.apply_config(op, space->from_json(j));
    std::string ir;
    std::string err = check_schedule(*so.schedule, op.inputs, so.args, op.outputs, 3, &ir);
    INFO(w << "\n" << ir);
    CHECK(err == "");
    CHECK(ir.find("data_pack") == std::string::npos);
    CHECK(ir.find("weight_pack") == std::string::npos);
  }
}

TEST_CASE("conv default schedules and other configs agree with the reference", "[ops][conv]") {
  for (const char* w : {"conv2d:C=8,H=9,W=9,K=16,R=3,S=3,pad=1,groups=4,bias=1,relu=1",
                        "conv2d_nhwc:H=56,W=56,C=64,K=64,R=3,S=3,pad=1", "conv2d_nhwc:H=9,W=9,C=8,K=6,R=1,S=1,groups=2",
                        "depthwise_conv2d:C=32,H=112,W=112,R=3,S=3,pad=1", "depthwise_conv2d:C=5,H=7,W=7,R=3,S=3"})
    check_default_schedule(w);
  // Spaces of real layers are large enough to tune.
  CpuInfo cpu = avx512_cpu();
  for (const char* w :
       {"conv2d:C=64,H=56,W=56,K=64,R=3,S=3,pad=1,groups=4,bias=1", "conv2d_nhwc:H=56,W=56,C=64,K=64,R=3,S=3,pad=1",
        "depthwise_conv2d:C=96,H=56,W=56,R=3,S=3,pad=1"}) {
    OpInstance op = build_workload(w);
    INFO(w);
    CHECK(find_op(op.op).define_space(op, cpu)->size() >= 10000);
  }
}

TEST_CASE("16-bit float convolutions sum in f32 and round once: deep reductions agree with the reference",
          "[ops][conv]") {
  // 2304- and 4608-term sums: a 16-bit accumulator (rounding after every
  // step, or native f16 FMAs on CPUs that have them) drifts past the
  // tolerance here, as the default schedules of these layers once did.
  for (const char* w : {"conv2d:C=256,H=6,W=6,K=16,R=3,S=3,pad=1,dtype=bf16",
                        "conv2d_nhwc:H=5,W=6,C=256,K=24,R=3,S=3,pad=1,dtype=f16,bias=1,hswish=1",
                        "conv2d_nhwc:H=4,W=4,C=512,K=16,R=3,S=3,pad=1,dtype=bf16",
                        "conv2d_nchwc:C=256,H=6,W=6,K=32,R=3,S=3,pad=1,dtype=bf16,bias=1,relu=1",
                        "depthwise_conv2d:C=32,H=9,W=9,R=7,S=7,pad=3,dtype=f16,bias=1",
                        "depthwise_conv2d_nchwc:C=32,H=9,W=9,R=7,S=7,pad=3,dtype=bf16"}) {
    INFO(w);
    OpInstance op = build_workload(w);
    // The sums are f32 stages; the output keeps the 16-bit type.
    REQUIRE(op.parts.count(op.op));
    CHECK(op.parts.at(op.op).dtype() == DType::f32());
    CHECK(op.outputs[0].dtype() == op.dtype);
    check_default_schedule(w);
    check_template_configs(w, 2, 16);
  }
}

TEST_CASE("conv workload errors are user errors", "[ops][conv][user_error]") {
  CHECK_THROWS_WITH(build_workload("conv2d:C=6,H=5,W=5,K=8,R=3,S=3,groups=4"),
                    Contains("groups=4 must divide both the input channels (6) and the output channels (8)"));
  CHECK_THROWS_WITH(build_workload("conv2d_nhwc:H=5,W=5,C=6,K=9,R=3,S=3,groups=2"), Contains("groups=2 must divide"));
  CHECK_THROWS_WITH(build_workload("conv2d_nhwc:H=2,W=5,C=6,K=9,R=3,S=3"),
                    Contains("conv2d_nhwc: the window (3x3, dilation 1) does not fit the padded input (2x5)"));
  CHECK_THROWS_WITH(build_workload("depthwise_conv2d:C=4,H=5,W=5,R=3,S=3,dilation=3"), Contains("does not fit"));
  CHECK_THROWS_WITH(build_workload("depthwise_conv2d:C=4,H=5,W=5,R=3,S=3,groups=2"),
                    Contains("depthwise_conv2d has no parameter 'groups'"));
  CHECK_THROWS_WITH(build_workload("conv2d:C=4,H=5,W=5,K=4,R=3,S=3,bias=2"), Contains("bias is a flag"));
  // At most one activation, and the hard ones only on floats.
  CHECK_THROWS_WITH(build_workload("conv2d:C=4,H=5,W=5,K=4,R=3,S=3,relu=1,relu6=1"),
                    Contains("conv2d: relu and relu6 are exclusive activations: set at most one of them"));
  CHECK_THROWS_WITH(build_workload("conv2d_nchwc:C=16,H=5,W=5,K=16,R=1,S=1,hswish=1,hsigmoid=1"),
                    Contains("conv2d_nchwc: hswish and hsigmoid are exclusive activations"));
  CHECK_THROWS_WITH(build_workload("depthwise_conv2d_nchwc:C=16,H=5,W=5,R=3,S=3,hswish=1,dtype=i8"),
                    Contains("depthwise_conv2d_nchwc: hswish needs a floating-point dtype, not i8"));
  CHECK_THROWS_WITH(build_workload("conv2d_nhwc:H=5,W=5,C=4,K=4,R=3,S=3,hsigmoid=1,dtype=u8"),
                    Contains("conv2d_nhwc: hsigmoid needs a floating-point dtype, not u8"));
  CHECK_NOTHROW(build_workload("depthwise_conv2d:C=4,H=5,W=5,R=3,S=3,relu6=1,dtype=i8"));
  // Each flag keeps its own meaning in `kiln ops`: the depthwise bias is per channel.
  for (const char* name : {"depthwise_conv2d", "depthwise_conv2d_nchwc"}) {
    for (const OpParam& p : find_op(name).params) {
      INFO(name << " " << p.name << ": " << p.meaning);
      if (p.name == "bias") CHECK(p.meaning == "1: add bias[C] (one value per channel)");
      if (p.name == "hswish") CHECK(p.meaning.find("hard-swish") != std::string::npos);
    }
  }
  // Activations stay out of canonical strings unless set.
  CHECK(build_workload("depthwise_conv2d:C=4,H=5,W=5,R=3,S=3,hswish=1").canonical ==
        "depthwise_conv2d:N=1,C=4,H=5,W=5,R=3,S=3,stride=1,pad=0,dilation=1,dtype=f32,hswish=1");
  // A config of another op's template.
  CpuInfo cpu = avx512_cpu();
  OpInstance nhwc = build_workload("conv2d_nhwc:H=5,W=5,C=4,K=4,R=3,S=3");
  OpInstance dw = build_workload("depthwise_conv2d:C=4,H=5,W=5,R=3,S=3");
  auto space = find_op("conv2d_nhwc").define_space(nhwc, cpu);
  CHECK_THROWS_WITH(find_op("conv2d_nhwc").apply_config(dw, space->get(0)),
                    Contains("cannot schedule op 'depthwise_conv2d'"));
}

TEST_CASE("depthwise_conv2d is conv2d with one group per channel", "[ops][conv]") {
  // Same inputs (data [N,C,H,W], weight [C,1,R,S], bias [C]): the definitions agree.
  OpInstance dw = build_workload("depthwise_conv2d:N=2,C=5,H=7,W=6,R=3,S=2,stride=2,pad=1,dilation=2,bias=1,relu=1");
  OpInstance cv = build_workload("conv2d:N=2,C=5,H=7,W=6,K=5,R=3,S=2,stride=2,pad=1,dilation=2,groups=5,bias=1,relu=1");
  REQUIRE(dw.inputs.size() == cv.inputs.size());
  std::vector<std::pair<Tensor, HostTensor>> a, b;
  for (size_t i = 0; i < dw.inputs.size(); ++i) {
    std::vector<int64_t> shape;
    for (auto& e : dw.inputs[i].shape()) shape.push_back(*as_const_int(e));
    HostTensor h(dw.inputs[i].dtype(), shape);
    h.fill_random(60 + i, -2.0, 2.0);
    a.emplace_back(dw.inputs[i], h);
    b.emplace_back(cv.inputs[i], h);
  }
  HostTensor x = interpret(dw.outputs, a)[0], y = interpret(cv.outputs, b)[0];
  CHECK(compare_tensors(x, y, 1e-6, 1e-6) == "");
  CHECK(dw.flops == cv.flops);
}
