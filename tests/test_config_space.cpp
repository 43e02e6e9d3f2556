// ConfigSpace: split options, index and JSON round trips, neighbours, errors.
#include <catch2/catch.hpp>

#include "base/error.h"
#include "schedule/config_space.h"

using namespace kiln;
using Catch::Contains;

namespace {
ConfigSpace sample_space() {
  ConfigSpace s;
  s.define_split("tile_m", 100, 3);
  s.define_split("tile_k", 64, 2, 16);
  s.define_reorder("order", {{0, 1, 2}, {1, 0, 2}, {2, 1, 0}});
  s.define_annotate("unroll", {"none", "unroll"});
  s.define_choice("vec", {4, 8, 16});
  return s;
}
}  // namespace

TEST_CASE("split options cover the extent with a ceil outer factor", "[config]") {
  auto opts = split_options(10, 2, {1, 2, 4, 5, 8, 10}, 0);
  CHECK(opts.size() == 6);
  for (auto& o : opts) CHECK(o[0] * o[1] >= 10);
  CHECK(std::find(opts.begin(), opts.end(), std::vector<int64_t>{3, 4}) != opts.end());  // non-divisible
  for (auto& o : split_options(64, 2, {1, 2, 4, 8, 16, 32, 64}, 16)) CHECK(o[1] <= 16);
}

TEST_CASE("config index and JSON round trips over the whole space", "[config]") {
  ConfigSpace s = sample_space();
  uint64_t n = s.size();
  CHECK(n == s.knob("tile_m").size() * s.knob("tile_k").size() * 3 * 2 * 3);
  for (uint64_t i = 0; i < n; i += 7) {
    Config c = s.get(i);
    CHECK(c.index() == i);
    CHECK(s.from_json(c.to_json()) == c);
    CHECK(s.from_json_string(c.str()).index() == i);
  }
  Config c = s.get(n - 1);
  CHECK(c.annotate("unroll") == "unroll");
  CHECK(c.choice("vec") == 16);
  CHECK(c.reorder("order") == std::vector<int64_t>{2, 1, 0});
}

TEST_CASE("random neighbours differ in exactly one knob", "[config]") {
  ConfigSpace s = sample_space();
  std::mt19937_64 rng(3);
  for (int t = 0; t < 200; ++t) {
    Config a = s.random(rng), b = s.random_neighbor(a, rng);
    int diff = 0;
    for (size_t k = 0; k < a.choices().size(); ++k) diff += a.choices()[k] != b.choices()[k];
    CHECK(diff == 1);
  }
}

TEST_CASE("config errors are user errors", "[config][user_error]") {
  ConfigSpace s = sample_space();
  CHECK_THROWS_WITH(s.get(s.size()), Contains("outside the space"));
  CHECK_THROWS_WITH(s.from_json_string("{"), Contains("not valid JSON"));
  CHECK_THROWS_WITH(s.from_json_string("[1]"), Contains("must be a JSON object"));
  auto j = s.get(0).to_json();
  j.erase("vec");
  CHECK_THROWS_WITH(s.from_json(j), Contains("lacks knob 'vec'"));
  j = s.get(0).to_json();
  j["vec"] = 5;
  CHECK_THROWS_WITH(s.from_json(j), Contains("is not an option of knob 'vec'"));
  j = s.get(0).to_json();
  j["bogus"] = 1;
  CHECK_THROWS_WITH(s.from_json(j), Contains("no knob named 'bogus'"));
  CHECK_THROWS_WITH(s.get(0).choice("order"), Contains("not of the requested kind"));
  ConfigSpace d;
  d.define_choice("a", {1});
  CHECK_THROWS_WITH(d.define_choice("a", {2}), Contains("defined twice"));
}

TEST_CASE("a knob added to a template later defaults to its first option in stored configs", "[config]") {
  ConfigSpace s = sample_space();
  auto stored = s.get(s.size() - 1).to_json();  // a config stored before the new knob existed
  s.define_annotate("layout", {"old", "new"}, true);
  Config c = s.from_json(stored);
  CHECK(c.annotate("layout") == "old");
  stored["layout"] = "new";
  CHECK(s.from_json(stored).annotate("layout") == "new");
  // Knobs not marked so are still required.
  stored.erase("vec");
  CHECK_THROWS_WITH(s.from_json(stored), Contains("lacks knob 'vec'"));
}

TEST_CASE("nearest: a config of another shape maps to the closest options of this space", "[config]") {
  ConfigSpace small, big;
  for (ConfigSpace* s : {&small, &big}) {
    s->define_reorder("order", {{0, 1, 2}, {2, 1, 0}, {1, 0, 2}});
    s->define_annotate("unroll", {"none", "unroll"});
  }
  small.define_split("tile", 12, 2);
  small.define_choice("vec", {4, 8});
  big.define_split("tile", 64, 2);
  big.define_choice("vec", {4, 8, 16});
  // Every config of a space is its own nearest.
  for (uint64_t i = 0; i < big.size(); ++i) CHECK(big.nearest(big.get(i).to_json()).index() == i);
  // tile [2, 32] of 64 has no inner 32 in 12: the nearest inner factor is 12.
  Config c = small.nearest({{"order", {2, 1, 0}}, {"unroll", "unroll"}, {"tile", {2, 32}}, {"vec", 16}});
  CHECK(c.reorder("order") == std::vector<int64_t>{2, 1, 0});
  CHECK(c.annotate("unroll") == "unroll");
  CHECK(c.split("tile") == std::vector<int64_t>{1, 12});
  CHECK(c.choice("vec") == 8);
  // The nearest permutation keeps the most axes in place.
  CHECK(small.nearest({{"order", {0, 2, 1}}}).reorder("order") == std::vector<int64_t>{0, 1, 2});
  // Missing, mistyped or unknown values take the first option; never throws.
  CHECK(small.nearest({{"tile", "x"}, {"zzz", 1}}).index() == 0);
  CHECK(small.nearest(nlohmann::json(3)).index() == 0);
}

TEST_CASE("exact split levels keep only inner factors that divide the extent", "[config]") {
  ConfigSpace loose, exact;
  loose.define_split_levels("t", 12, {{1, 2, 4}, {1, 2, 4}});
  exact.define_exact_split_levels("t", 12, {{1, 2, 4}, {1, 2, 4}}, /*added_later=*/true);
  const auto has = [](const ConfigSpace& s, std::vector<int64_t> f) {
    const auto& o = s.knob("t").options;
    return std::find(o.begin(), o.end(), f) != o.end();
  };
  CHECK(has(loose, {2, 2, 4}));  // 8 rows of 12: a partial outer block
  CHECK_FALSE(has(exact, {2, 2, 4}));
  CHECK(has(exact, {3, 2, 2}));
  for (const auto& f : exact.knob("t").options) CHECK(f[0] * f[1] * f[2] == 12);
  CHECK(exact.knob("t").added_later);
  // A stored config without the knob takes its first option.
  CHECK(exact.from_json(nlohmann::json::object()).split("t") == std::vector<int64_t>{12, 1, 1});
}

TEST_CASE("pin keeps one option of a knob, and says what the options are", "[config]") {
  ConfigSpace s;
  s.define_split("tile", 16, 2);
  s.define_annotate("mode", {"a", "b", "c"});
  s.define_choice("prefetch", {0, 4, 8}, /*added_later=*/true);
  const uint64_t before = s.size();
  s.pin("mode", "c");
  s.pin("prefetch", 8);
  CHECK(s.size() == before / 9);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 20; ++i) {
    const Config c = s.random(rng);
    CHECK(c.annotate("mode") == "c");
    CHECK(c.choice("prefetch") == 8);
  }
  // A stored config without the later knob meant its first option, 0: no
  // longer in the space.
  CHECK_THROWS_WITH(s.from_json(nlohmann::json::parse(R"({"tile":[2,8],"mode":"c"})")),
                    Contains("lacks knob 'prefetch', which means its first option, and the space leaves that out"));
  CHECK_THROWS_WITH(s.from_json(nlohmann::json::parse(R"({"tile":[2,8],"mode":"a","prefetch":8})")),
                    Contains("is not an option of knob 'mode'"));
  CHECK(s.from_json(nlohmann::json::parse(R"({"tile":[2,8],"mode":"c","prefetch":8})")).annotate("mode") == "c");
  // Pinned to its first option, an absent later knob still reads as it.
  ConfigSpace t;
  t.define_split("tile", 16, 2);
  t.define_choice("prefetch", {0, 4}, /*added_later=*/true);
  t.pin("prefetch", 0);
  CHECK(t.from_json(nlohmann::json::parse(R"({"tile":[2,8]})")).choice("prefetch") == 0);
  t.pin("tile", nlohmann::json::parse("[4,4]"));
  CHECK(t.size() == 1);
}

TEST_CASE("pin errors name the knob and its options", "[config][errors]") {
  ConfigSpace s;
  s.define_choice("prefetch", {0, 4, 8});
  s.define_annotate("mode", {"a", "b"});
  CHECK_THROWS_WITH(s.pin("prefech", 0), Contains("cannot fix knob 'prefech': the template has no such knob (its "
                                                  "knobs: prefetch, mode)"));
  CHECK_THROWS_WITH(s.pin("prefetch", 3), Contains("cannot fix knob 'prefetch' to 3: its options are 0, 4, 8"));
  CHECK_THROWS_WITH(s.pin("mode", 1), Contains("cannot fix knob 'mode' to 1: its options are \"a\", \"b\""));
}
