// Property tests: random schedules on random small shapes (1, primes, odd
// sizes) for matmul, conv2d and the element-wise chain; every kernel is
// compiled and checked against the reference interpreter.
#include <catch2/catch.hpp>
#include <random>

#include "kernels/conv2d.h"
#include "kernels/elemwise.h"
#include "kernels/matmul.h"
#include "support/kernel_check.h"
#include "support/random_schedule.h"
#include "support/test_seed.h"

using namespace kiln;
using kiln::testing::check_schedule;
using kiln::testing::RandomScheduler;

namespace {

int64_t small_extent(std::mt19937_64& rng) {
  static const int64_t kExtents[] = {1, 2, 3, 5, 7, 8, 11, 13, 16, 17};
  return kExtents[std::uniform_int_distribution<int>(0, 9)(rng)];
}

// Random schedules of the plain definition, checked against the
// interpreter: `cases` fixed regression seeds, then `cases / 2` seeds drawn
// from this run's seed (support/test_seed.h: fresh each run, KILN_SEED=<n>
// reproduces a run).
void check_random_schedules(const char* what, int cases, const std::function<OpInstance(std::mt19937_64&)>& make) {
  const uint64_t run = kiln::testing::run_seed();
  const int fresh = cases / 2;
  for (int c = 0; c < cases + fresh; ++c) {
    bool fixed = c < cases;
    // Fresh seeds: the run seed mixed with the test's name, plus the case.
    uint64_t mix = run;
    for (const char* p = what; *p; ++p) mix = mix * 1099511628211ULL + static_cast<unsigned char>(*p);
    uint64_t seed = fixed ? 1000 + static_cast<uint64_t>(c) : mix + static_cast<uint64_t>(c - cases);
    std::mt19937_64 rng(seed);
    OpInstance op = make(rng);
    Schedule s(op.outputs);
    RandomScheduler scheduler(seed);
    std::string ir, err;
    try {
      scheduler.apply(s);
      err = check_schedule(s, op.inputs, op.args(), op.outputs, seed, &ir);
    } catch (const std::exception& e) {
      err = std::string("exception: ") + e.what();
    }
    std::string log = scheduler.log();
    INFO(what << " case " << c << " (" << (fixed ? "fixed" : "fresh") << " seed " << seed << "; "
              << kiln::testing::seed_note(run) << ")\nschedule: " << log << "\n"
              << ir);
    CHECK(err == "");
  }
}

}  // namespace

TEST_CASE("random schedules of matmul are correct", "[property]") {
  check_random_schedules("matmul", 60, [](std::mt19937_64& rng) {
    DType types[] = {DType::f32(), DType::f32(), DType::f64(), DType::i32(), DType::i8(), DType::u8()};
    DType t = types[std::uniform_int_distribution<int>(0, 5)(rng)];
    bool epilogue = rng() % 3 == 0;
    return matmul_define(small_extent(rng), small_extent(rng), small_extent(rng), t, epilogue, epilogue);
  });
}

TEST_CASE("random schedules of conv2d are correct", "[property]") {
  check_random_schedules("conv2d", 40, [](std::mt19937_64& rng) {
    auto pick = [&](int lo, int hi) { return static_cast<int64_t>(std::uniform_int_distribution<int>(lo, hi)(rng)); };
    int64_t R = pick(1, 3), S = pick(1, 3), stride = pick(1, 2), pad = pick(0, 2), dil = pick(1, 2);
    int64_t H = pick(dil * (R - 1) + 1, 9), W = pick(dil * (S - 1) + 1, 9);
    DType t = rng() % 4 == 0 ? DType::i32() : DType::f32();
    return conv2d_define(pick(1, 2), pick(1, 5), H, W, pick(1, 6), R, S, stride, pad, dil, t);
  });
}

TEST_CASE("random schedules of the element-wise chain are correct", "[property]") {
  check_random_schedules("elemwise", 40, [](std::mt19937_64& rng) {
    DType types[] = {DType::f32(), DType::f64(), DType::i32(), DType::i8(), DType::u8()};
    return elemwise_define(small_extent(rng), small_extent(rng), types[std::uniform_int_distribution<int>(0, 4)(rng)]);
  });
}

namespace {

// `n_matmul` matmul and `n_conv` conv2d cases of the fixed-parameter templates.
void check_template_params(uint64_t seed, int n_matmul, int n_conv) {
  INFO("template parameters from seed " << seed << " (" << kiln::testing::seed_note(kiln::testing::run_seed()) << ")");
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return static_cast<int64_t>(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  for (int c = 0; c < n_matmul; ++c) {
    OpInstance mm = matmul_define(small_extent(rng), small_extent(rng) * 3, small_extent(rng), DType::f32(), c % 2 == 0,
                                  c % 3 == 0);
    MatmulSchedule mc;
    mc.mb = pick(1, 7);
    mc.nb = pick(1, 4) * 8;
    mc.kb = pick(0, 6);
    mc.k_unroll = pick(1, 4);
    mc.parallel = c % 2 == 1;
    ScheduledOp so = matmul_schedule(mm, mc);
    INFO("matmul case " << c << " " << mm.ints.at("M") << "x" << mm.ints.at("N") << "x" << mm.ints.at("K") << " mb "
                        << mc.mb << " nb " << mc.nb << " kb " << mc.kb << " ku " << mc.k_unroll);
    CHECK(check_schedule(*so.schedule, mm.inputs, so.args, mm.outputs, c) == "");
  }
  for (int c = 0; c < n_conv; ++c) {
    int64_t stride = pick(1, 2), pad = pick(0, 1);
    OpInstance cv =
        conv2d_define(1, pick(1, 6), pick(3, 11), pick(3, 11), pick(1, 20), 3, 3, stride, pad, 1, DType::f32());
    Conv2dSchedule cc;
    cc.kb = pick(1, 3) * 8;
    cc.owb = pick(1, 6);
    cc.parallel = c % 2 == 0;
    ScheduledOp so = conv2d_schedule(cv, cc);
    INFO("conv2d case " << c << " kb " << cc.kb << " owb " << cc.owb);
    CHECK(check_schedule(*so.schedule, cv.inputs, so.args, cv.outputs, c) == "");
  }
}

}  // namespace

TEST_CASE("random configs of the hand-written templates are correct", "[property]") {
  check_template_params(7, 25, 20);                          // the fixed regression seed
  check_template_params(kiln::testing::run_seed(), 12, 10);  // this run's
}
