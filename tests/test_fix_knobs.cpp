// `kiln tune --fix`: a task's knobs held at given values (fix_task_knobs,
// ConfigSpace::pin): every config the search can propose keeps them, and
// bad input says what is wrong in the user's terms.
#include <catch2/catch.hpp>
#include <random>

#include "base/error.h"
#include "codegen/target.h"
#include "tasks/task_factory.h"

using namespace kiln;
using Catch::Contains;

TEST_CASE("kiln tune --fix holds a task's knobs in every config of its space", "[tasks][fix]") {
  Task t = make_task("matmul:M=16,N=32,K=24", Target::host(), /*with_reference=*/false);
  const uint64_t before = t.space->size();
  fix_task_knobs(&t, R"({"prefetch": 4, "unroll_y": "none"})");
  CHECK(t.space->size() == before / 8);
  std::mt19937_64 rng(5);
  for (int i = 0; i < 16; ++i) {
    const Config c = t.space->random(rng);
    CHECK(c.choice("prefetch") == 4);
    CHECK(c.annotate("unroll_y") == "none");
    CHECK(t.instantiate(c, LowerDepth::kAnnotatedLoops).body.defined());
  }
}

TEST_CASE("kiln tune --fix errors name the workload, the knob and its options", "[tasks][fix][errors]") {
  Task t = make_task("matmul:M=16,N=32,K=24", Target::host(), /*with_reference=*/false);
  CHECK_THROWS_WITH(fix_task_knobs(&t, "{prefetch: 4}"), Contains("--fix '{prefetch: 4}' is not valid JSON"));
  CHECK_THROWS_WITH(fix_task_knobs(&t, "[4]"), Contains("--fix takes a JSON object of knob values"));
  CHECK_THROWS_WITH(
      fix_task_knobs(&t, R"({"stages": 2})"),
      Contains("matmul:M=16,N=32,K=24") && Contains("cannot fix knob 'stages': the template has no such knob"));
  CHECK_THROWS_WITH(fix_task_knobs(&t, R"({"prefetch": 3})"),
                    Contains("cannot fix knob 'prefetch' to 3: its options are 0, 4, 8, 16"));
}
