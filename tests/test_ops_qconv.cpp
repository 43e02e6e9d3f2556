// qconv2d_nchwc: the int8 convolution on the blocked layout with VNNI's
// weight blocks. Random configs of its template on random small shapes
// (1, primes, odd sizes; strides, padding, dilation, groups, bias and
// relu), tensorized with VNNI or not, equal the interpreter exactly over
// the whole u8 / i8 range; the knob is offered only with the instruction
// and 16-channel blocks; bad workloads are user errors.
#include <catch2/catch.hpp>
#include <random>

#include "base/error.h"
#include "compute/printer.h"
#include "kernels/op_registry.h"
#include "kernels/tensor_intrinsics.h"
#include "schedule/lower.h"
#include "support/quantized_check.h"
#include "support/skip.h"
#include "support/test_seed.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Contains;

namespace {

// A random small layer: C in blocks of cb (a multiple of 4), K in blocks of
// kb (16 when `vnni`, so that the intrinsic applies).
std::string random_layer(std::mt19937_64& rng, bool vnni) {
  const int64_t sizes[] = {1, 2, 3, 5, 7, 9};
  const int64_t cb = rng() % 2 ? 4 : 8, kb = vnni ? 16 : (rng() % 2 ? 4 : 16);
  const int64_t groups = rng() % 4 == 0 ? 2 : 1;
  const int64_t C = cb * groups * static_cast<int64_t>(1 + rng() % 2), K = kb * groups * static_cast<int64_t>(1 + rng() % 2);
  const int64_t R = rng() % 2 ? 3 : 1, S = rng() % 3 == 0 ? 1 : R;
  const int64_t stride = 1 + static_cast<int64_t>(rng() % 2), pad = R > 1 ? static_cast<int64_t>(rng() % 2) : 0;
  const int64_t dilation = R > 1 && rng() % 4 == 0 ? 2 : 1;
  // At least the dilated window in each direction.
  const int64_t H = sizes[rng() % 6] + dilation * (R - 1), W = sizes[rng() % 6] + dilation * (S - 1);
  const char* outs[] = {"u8", "i8", "i32", "f32"};
  return "qconv2d_nchwc:N=" + std::to_string(1 + rng() % 2) + ",C=" + std::to_string(C) + ",H=" + std::to_string(H) +
         ",W=" + std::to_string(W) + ",K=" + std::to_string(K) + ",R=" + std::to_string(R) +
         ",S=" + std::to_string(S) + ",stride=" + std::to_string(stride) + ",pad=" + std::to_string(pad) +
         ",dilation=" + std::to_string(dilation) + ",cb=" + std::to_string(cb) + ",kb=" + std::to_string(kb) +
         ",groups=" + std::to_string(groups) + ",bias=" + std::to_string(rng() % 2) +
         ",relu=" + std::to_string(rng() % 2) + ",out=" + outs[rng() % 4];
}

// A random small layer for AMX: C in blocks of 64 (one k tile), K in
// blocks of 32 or 64, no groups; odd and prime sizes, strides, padding,
// dilation.
std::string random_amx_layer(std::mt19937_64& rng) {
  const int64_t sizes[] = {1, 2, 3, 5, 7, 9, 17, 33};
  const int64_t kb = rng() % 2 ? 32 : 64;
  const int64_t C = 64 * static_cast<int64_t>(1 + rng() % 3), K = kb * static_cast<int64_t>(1 + rng() % 2);
  const int64_t R = rng() % 2 ? 3 : 1, S = rng() % 3 == 0 ? 1 : R;
  const int64_t stride = 1 + static_cast<int64_t>(rng() % 2), pad = R > 1 ? static_cast<int64_t>(rng() % 2) : 0;
  const int64_t dilation = R > 1 && rng() % 4 == 0 ? 2 : 1;
  const int64_t H = sizes[rng() % 6] + dilation * (R - 1), W = sizes[rng() % 8] + dilation * (S - 1);
  const char* outs[] = {"u8", "i8", "i32", "f32"};
  return "qconv2d_nchwc:N=" + std::to_string(1 + rng() % 2) + ",C=" + std::to_string(C) + ",H=" + std::to_string(H) +
         ",W=" + std::to_string(W) + ",K=" + std::to_string(K) + ",R=" + std::to_string(R) + ",S=" + std::to_string(S) +
         ",stride=" + std::to_string(stride) + ",pad=" + std::to_string(pad) + ",dilation=" + std::to_string(dilation) +
         ",cb=64,kb=" + std::to_string(kb) + ",bias=" + std::to_string(rng() % 2) +
         ",relu=" + std::to_string(rng() % 2) + ",out=" + outs[rng() % 4];
}

CpuInfo amx_int8_cpu() {
  CpuInfo cpu = cpu_with(true, false);
  cpu.amx_int8 = true;
  return cpu;
}

std::vector<std::string> tensorize_options(const std::string& w, const CpuInfo& cpu) {
  OpInstance op = build_workload(w);
  const auto space = find_op(op.op).define_space(op, cpu);
  for (const Knob& k : space->knobs())
    if (k.name == "tensorize") return k.labels;
  return std::vector<std::string>{};
}

}  // namespace

TEST_CASE("qconv2d_nchwc: AMX-tensorized configs equal the interpreter exactly", "[ops][qconv][amx]") {
  if (!host_has("amx-int8")) KILN_SKIP("this CPU has no AMX-INT8");
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed + 2);
  for (int layer = 0; layer < 6; ++layer) check_random_configs(random_amx_layer(rng), amx_int8_cpu(), "amx", 3, rng);
  // Two output rows of up to 16 pixels per call, and one row of more than
  // 16 (two tile rows of 16 and 12), each over a 3x3 kernel.
  const std::string base = "qconv2d_nchwc:C=128,K=64,R=3,S=3,pad=1,cb=64,kb=64,bias=1,relu=1,out=u8";
  check_random_configs(base + ",H=6,W=14", amx_int8_cpu(), "amx", 2, rng);
  check_random_configs(base + ",H=3,W=28", amx_int8_cpu(), "amx", 2, rng);
  // Narrow blocks with a kernel row's taps folded into one product: the
  // stem's 4 channels x 7 taps (28 bytes of a tile row), 3 and 5 taps,
  // 8 channels, strides 1 and 2, odd sizes.
  check_random_configs("qconv2d_nchwc:C=4,H=23,W=37,K=64,R=7,S=7,stride=2,pad=3,cb=4,kb=64,bias=1,relu=1,out=u8",
                       amx_int8_cpu(), "amx", 3, rng);
  for (int layer = 0; layer < 3; ++layer) {
    const int64_t cb = rng() % 2 ? 4 : 8,
                  R = cb == 8 ? 3 + 2 * static_cast<int64_t>(rng() % 2) : 3 + 2 * static_cast<int64_t>(rng() % 3);
    const char* outs[] = {"u8", "i8", "i32", "f32"};
    const std::string w = "qconv2d_nchwc:N=1,C=" + std::to_string(cb) + ",H=" + std::to_string(R + 2 * (rng() % 9)) +
                          ",W=" + std::to_string(R + 1 + 2 * (rng() % 9)) + ",K=32,R=" + std::to_string(R) +
                          ",S=" + std::to_string(R) + ",stride=" + std::to_string(1 + rng() % 2) +
                          ",pad=" + std::to_string(R / 2) + ",cb=" + std::to_string(cb) +
                          ",kb=32,bias=1,out=" + outs[rng() % 4];
    check_random_configs(w, amx_int8_cpu(), "amx", 2, rng);
  }
}

TEST_CASE(
    "qconv2d_nchwc: the AMX option needs AMX-INT8, 64-channel input blocks, 32-channel output blocks and no groups",
    "[ops][qconv]") {
  const std::string ok = "qconv2d_nchwc:C=128,H=8,W=8,K=64,R=3,S=3,pad=1,cb=64,kb=32";
  CHECK(tensorize_options(ok, amx_int8_cpu()) == std::vector<std::string>{"none", "vnni", "amx"});
  CHECK(tensorize_options(ok, cpu_with(true, false)) == std::vector<std::string>{"none", "vnni"});
  CHECK(tensorize_options("qconv2d_nchwc:C=128,H=8,W=8,K=64,R=3,S=3,pad=1,cb=32,kb=32", amx_int8_cpu()).size() == 2);
  CHECK(tensorize_options("qconv2d_nchwc:C=128,H=8,W=8,K=48,R=3,S=3,pad=1,cb=64,kb=16", amx_int8_cpu()).size() == 2);
  CHECK(
      tensorize_options("qconv2d_nchwc:C=128,H=8,W=8,K=64,R=3,S=3,pad=1,cb=64,kb=32,groups=2", amx_int8_cpu()).size() ==
      2);
  // A stem's 4-channel blocks fold a kernel row of 7 taps (28 bytes) into
  // a product; not with dilation, nor 16 channels x 7 taps (112 bytes).
  CHECK(
      tensorize_options("qconv2d_nchwc:C=4,H=30,W=30,K=64,R=7,S=7,stride=2,pad=3,cb=4,kb=64", amx_int8_cpu()).size() ==
      3);
  CHECK(tensorize_options("qconv2d_nchwc:C=4,H=30,W=30,K=64,R=7,S=7,pad=3,dilation=2,cb=4,kb=64", amx_int8_cpu())
            .size() == 2);
  CHECK(tensorize_options("qconv2d_nchwc:C=16,H=30,W=30,K=64,R=7,S=7,pad=3,cb=16,kb=64", amx_int8_cpu()).size() == 2);
  // The default config takes AMX where it is offered.
  const OpInstance op = build_workload(ok);
  const OpDef& def = find_op(op.op);
  auto space = def.define_space(op, amx_int8_cpu());
  const Config cfg = def.default_config(op, amx_int8_cpu(), *space);
  CHECK(cfg.annotate("tensorize") == "amx");
  // A stored AMX config applied to a layer without the blocks says why.
  const OpInstance vnni_only = build_workload("qconv2d_nchwc:C=128,H=8,W=8,K=64,R=3,S=3,pad=1,cb=32,kb=32");
  CHECK_THROWS_WITH(def.apply_config(vnni_only, cfg),
                    Contains("tensorize=amx needs input channel blocks of 64 (one AMX k tile; or narrower blocks "
                             "whose kernel row of taps fits one, dilation 1), output channel blocks of a multiple of "
                             "32 and no groups; got cb=32, kb=32, groups=1"));
}

TEST_CASE("qconv2d_nchwc: one AMX call covers a tile's whole reduction, from zeroed tiles", "[ops][qconv]") {
  auto lowered_ir = [](const std::string& w) {
    const OpInstance op = build_workload(w);
    const OpDef& def = find_op(op.op);
    auto space = def.define_space(op, amx_int8_cpu());
    ScheduledOp so = def.apply_config(op, def.default_config(op, amx_int8_cpu(), *space));
    return to_string(lower(*so.schedule, so.args, "f"));
  };
  // 1x1 (its kernel loops of one iteration outside the call) and 3x3 (the
  // kernel rows and columns inside it): no reset, every call tilezero-based.
  for (const char* w : {"qconv2d_nchwc:C=128,H=4,W=8,K=32,R=1,S=1,cb=64,kb=32",
                        "qconv2d_nchwc:C=128,H=4,W=8,K=32,R=3,S=3,pad=1,cb=64,kb=32"}) {
    const std::string ir = lowered_ir(w);
    INFO(w);
    CHECK_THAT(ir, Contains("x86.amx.dpbusd.tiles.set("));
    CHECK(ir.find("x86.amx.dpbusd.tiles(") == std::string::npos);
  }
}

TEST_CASE("qconv2d_nchwc: amx_cin outside sums one input block per call into kept tiles", "[ops][qconv]") {
  const std::string w = "qconv2d_nchwc:C=192,H=5,W=7,K=64,R=3,S=3,pad=1,cb=64,kb=32,bias=1,relu=1,out=u8";
  const OpInstance op = build_workload(w);
  const OpDef& def = find_op(op.op);
  auto space = def.define_space(op, amx_int8_cpu());
  auto labels = [&](const ConfigSpace& s) {
    for (const Knob& k : s.knobs())
      if (k.name == "amx_cin") return k.labels;
    return std::vector<std::string>{};
  };
  CHECK(labels(*space) == std::vector<std::string>{"inside", "outside"});
  // One input block, or no AMX: nothing to choose.
  const OpInstance one_block = build_workload("qconv2d_nchwc:C=64,H=5,W=7,K=64,R=3,S=3,pad=1,cb=64,kb=32");
  CHECK(labels(*def.define_space(one_block, amx_int8_cpu())) == std::vector<std::string>{"inside"});
  CHECK(labels(*def.define_space(op, cpu_with(true, false))) == std::vector<std::string>{"inside"});

  nlohmann::json j = def.default_config(op, amx_int8_cpu(), *space).to_json();
  j["amx_cin"] = "outside";
  j["amx_rows"] = "tile";  // a flat run of 43 tile rows would overlap its calls: the blocks stay inside
  const Config cfg = space->from_json(j);
  ScheduledOp so = def.apply_config(op, cfg);
  const std::string ir = to_string(lower(*so.schedule, so.args, "f"));
  INFO(ir);
  // The block loop around calls that update the zeroed sums (3x3 taps each).
  CHECK_THAT(ir, Contains("for (rco, 0, 3)"));
  CHECK_THAT(ir, Contains("x86.amx.dpbusd.tiles("));
  CHECK(ir.find("x86.amx.dpbusd.tiles.set(") == std::string::npos);
  if (!host_has("amx-int8")) KILN_SKIP("this CPU has no AMX-INT8 to run the kernel");
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed + 5);
  for (int c = 0; c < 3; ++c) {
    nlohmann::json r = (c == 0 ? cfg : space->random(rng)).to_json();
    r["tensorize"] = "amx";
    r["amx_cin"] = "outside";
    r["amx_rows"] = "tile";
    const Config pinned = space->from_json(r);
    INFO("config " << pinned.str());
    CHECK(check_config(op, pinned, rng(), 0) == "");
  }
}

TEST_CASE("qconv2d_nchwc: flat AMX rows run a tile's rows as one run of tile rows", "[ops][qconv]") {
  auto labels = [](const std::string& w, const CpuInfo& cpu) {
    const OpInstance op = build_workload(w);
    const auto space = find_op(op.op).define_space(op, cpu);
    for (const Knob& k : space->knobs())
      if (k.name == "amx_rows") return k.labels;
    return std::vector<std::string>{};
  };
  const std::string seven = "qconv2d_nchwc:C=128,H=7,W=7,K=64,R=3,S=3,pad=1,cb=64,kb=32,bias=1,relu=1,out=u8";
  CHECK(labels(seven, amx_int8_cpu()) == std::vector<std::string>{"tile", "flat"});
  CHECK(labels("qconv2d_nchwc:C=128,H=14,W=14,K=64,R=3,S=3,stride=2,pad=1,cb=64,kb=32", amx_int8_cpu()) ==
        std::vector<std::string>{"tile"});
  CHECK(labels(seven, cpu_with(true, false)) == std::vector<std::string>{"tile"});
  // The 7x7 default: its 7 rows of 7 pixels, 9 apart in the padded input and
  // in the sums (padded to the input's pitch), are 61 tile rows: two calls
  // of 16 + 16 rows, the second from row 29 (overlapping, from zero).
  const OpInstance op = build_workload(seven);
  const OpDef& def = find_op(op.op);
  auto space = def.define_space(op, amx_int8_cpu());
  const Config cfg = def.default_config(op, amx_int8_cpu(), *space);
  CHECK(cfg.annotate("amx_rows") == "flat");
  ScheduledOp so = def.apply_config(op, cfg);
  const std::string ir = to_string(lower(*so.schedule, so.args, "f"));
  INFO(ir);
  // Per 32-channel block: the sums' 7 rows of 9 pixels (2016 = 7 x 9 x 32),
  // the second call from tile row 29 of both the sums and the input.
  CHECK_THAT(ir, Contains("x86.amx.dpbusd.tiles.set(conv_acc.local[(conv_acc.j.inner*2016), extent=1568"));
  CHECK_THAT(ir, Contains("x86.amx.dpbusd.tiles.set(conv_acc.local[((conv_acc.j.inner*2016) + 928), extent=1568, "
                          "stride=1], data_pad[1856,"));
  CHECK_THAT(ir, Contains(", 16, 16, 2, 3, 3, 32, 512, 64, 1024, "));
  CHECK_THROWS_WITH(
      x86_amx_conv(AmxConvTile{1, 7, 1, 1, 1, 1, 1, 0, false, true}),
      Contains("flat AMX convolution tiles cover 2 to 64 output rows of 1 to 64 pixels, got 1 rows of 7"));
  if (!host_has("amx-int8")) KILN_SKIP("this CPU has no AMX-INT8 to run the kernels");
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed + 7);
  // Overlapping runs (3x3 at 7x7, 1x1 at 7x7: 61 and 49 rows), one call
  // (3 rows of 5 with a pitch of 7: 19 rows; its blocks may stay outside),
  // and random odd layers.
  std::vector<std::string> layers = {seven, "qconv2d_nchwc:C=128,H=7,W=7,K=64,R=1,S=1,cb=64,kb=64,out=i32",
                                     "qconv2d_nchwc:C=192,H=3,W=5,K=32,R=3,S=3,pad=1,cb=64,kb=32,bias=1,out=i8"};
  for (int l = 0; l < 3; ++l) {
    const int64_t R = rng() % 2 ? 3 : 1, dil = R > 1 && rng() % 3 == 0 ? 2 : 1;
    layers.push_back("qconv2d_nchwc:C=" + std::to_string(64 * (1 + rng() % 2)) +
                     ",H=" + std::to_string(2 + rng() % 8 + dil * (R - 1)) +
                     ",W=" + std::to_string(2 + rng() % 8 + dil * (R - 1)) + ",K=32,R=" + std::to_string(R) +
                     ",S=" + std::to_string(R) + ",pad=" + std::to_string(R > 1 ? rng() % 2 : 0) +
                     ",dilation=" + std::to_string(dil) + ",cb=64,kb=32,bias=1,relu=1,out=u8");
  }
  for (const std::string& w : layers) {
    const OpInstance o = build_workload(w);
    auto sp = def.define_space(o, amx_int8_cpu());
    for (int c = 0; c < 3; ++c) {
      nlohmann::json r = (c == 0 ? def.default_config(o, amx_int8_cpu(), *sp) : sp->random(rng)).to_json();
      r["tensorize"] = "amx";
      r["amx_rows"] = "flat";
      const Config pinned = sp->from_json(r);
      INFO(w << " config " << pinned.str());
      CHECK(check_config(o, pinned, rng(), 0) == "");
    }
  }
}

TEST_CASE("qconv2d_nchwc: random configs of random layers equal the interpreter exactly", "[ops][qconv]") {
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed);
  for (int layer = 0; layer < 6; ++layer) check_random_configs(random_layer(rng, false), cpu_with(false, false), "", 3, rng);
}

TEST_CASE("qconv2d_nchwc: VNNI-tensorized configs equal the interpreter exactly", "[ops][qconv][vnni]") {
  if (!host_has("avx512vnni")) KILN_SKIP("this CPU has no AVX512-VNNI");
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed + 1);
  for (int layer = 0; layer < 8; ++layer) check_random_configs(random_layer(rng, true), cpu_with(true, false), "vnni", 3, rng);
  // A 1x1 layer's flat alternative computes the same op over the same buffers.
  const OpInstance op = build_workload("qconv2d_nchwc:C=16,H=3,W=5,K=32,R=1,S=1,bias=1,out=i8");
  const auto alts = find_op(op.op).alternatives(op);
  REQUIRE(alts.size() == 1);
  CHECK(alts[0].kernel.workload.find("H=1") != std::string::npos);
  CHECK(alts[0].kernel.workload.find("out=i8") != std::string::npos);
  CHECK(alts[0].kernel.inputs == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("qconv2d_nchwc: the clip border skips the padding taps, VNNI calls included", "[ops][qconv][vnni]") {
  if (!host_has("avx512vnni")) KILN_SKIP("this CPU has no AVX512-VNNI");
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed + 2);
  const CpuInfo cpu = cpu_with(true, false);
  // Padded layers: a 7x7 stride-2 stem on 4 channels, 3x3 on odd and prime
  // sizes, stride 2, dilation 2.
  for (const std::string w : {"qconv2d_nchwc:C=4,H=11,W=13,K=16,R=7,S=7,stride=2,pad=3,cb=4,kb=16,bias=1,relu=1",
                              "qconv2d_nchwc:C=16,H=7,W=5,K=32,R=3,S=3,pad=1,cb=8,kb=16,out=i32",
                              "qconv2d_nchwc:C=8,H=9,W=9,K=16,R=3,S=3,stride=2,pad=1,cb=8,kb=16,out=i8",
                              "qconv2d_nchwc:C=8,H=6,W=7,K=16,R=3,S=3,pad=2,dilation=2,cb=4,kb=16,out=f32"}) {
    const OpInstance op = build_workload(w);
    const OpDef& def = find_op(op.op);
    const auto space = def.define_space(op, cpu);
    for (int c = 0; c < 4; ++c) {
      nlohmann::json j = (c == 0 ? def.default_config(op, cpu, *space) : space->random(rng)).to_json();
      j["tensorize"] = "vnni";
      j["border"] = "clip";
      const Config cfg = space->from_json(j);
      INFO(w << " config " << cfg.str());
      CHECK(check_config(op, cfg, rng(), 0) == "");
      if (c == 0) {
        ScheduledOp so = def.apply_config(op, cfg);
        const std::string ir = to_string(lower(*so.schedule, so.args, "f"));
        CHECK(ir.find("data_pad") == std::string::npos);  // no padded copy
        CHECK_THAT(ir, Contains("x86.vpdpbusd"));
      }
    }
  }
}

TEST_CASE("qconv2d_nchwc: the tensorize knob needs VNNI and 16-channel output blocks", "[ops][qconv]") {
  auto has_knob = [](const std::string& w, const CpuInfo& cpu) {
    OpInstance op = build_workload(w);
    const auto space = find_op(op.op).define_space(op, cpu);
    for (const Knob& k : space->knobs())
      if (k.name == "tensorize") return true;
    return false;
  };
  CHECK(has_knob("qconv2d_nchwc:C=16,H=8,W=8,K=32,R=3,S=3,pad=1", cpu_with(true, false)));
  CHECK_FALSE(has_knob("qconv2d_nchwc:C=16,H=8,W=8,K=32,R=3,S=3,pad=1", cpu_with(false, true)));
  CHECK_FALSE(has_knob("qconv2d_nchwc:C=16,H=8,W=8,K=32,R=3,S=3,pad=1,kb=8", cpu_with(true, false)));
}

TEST_CASE("qconv2d_nchwc: bad workloads are user errors", "[ops][qconv][errors]") {
  CHECK_THROWS_WITH(build_workload("qconv2d_nchwc:C=12,H=8,W=8,K=16,R=3,S=3,cb=6"),
                    Contains("the input channel block cb=6 must be a multiple of 4"));
  CHECK_THROWS_WITH(build_workload("qconv2d_nchwc:C=16,H=8,W=8,K=24,R=3,S=3,kb=16"),
                    Contains("the output channel block kb=16 must divide the output channels per group (24)"));
  CHECK_THROWS_WITH(build_workload("qconv2d_nchwc:C=16,H=8,W=8,K=16,R=3,S=3,out=bf16"),
                    Contains("qconv2d_nchwc: the output is u8 or i8 (requantized), i32 (the sums) or f32"));
  const OpInstance op = build_workload("qconv2d_nchwc:C=16,H=8,W=8,K=16,R=3,S=3,pad=1,bias=1,relu=1");
  CHECK(op.inputs.size() == 4);
  CHECK(op.inputs[1].dtype() == DType::i8());
  CHECK(*as_const_int(op.inputs[1].shape()[4]) == 4);
  CHECK(op.outputs[0].dtype() == DType::u8());
}
