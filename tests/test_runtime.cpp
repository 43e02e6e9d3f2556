// Tests of runtime/: NDArray, data types and f16/bf16 conversion, compare(),
// the thread pool, the time evaluator and Module loading.
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "runtime/data_type.h"
#include "runtime/float16.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "runtime/thread_pool.h"
#include "runtime/time_evaluator.h"
#include "runtime/workspace.h"
#include "support/skip.h"

using namespace kiln::rt;

namespace {

// Adapts a C++ callable to the C task signature.
template <class F>
int32_t run_parallel(ThreadPool& pool, int64_t num_tasks, F& f) {
  return pool.parallel_for([](int64_t t, int64_t n, void* c) -> int32_t { return (*static_cast<F*>(c))(t, n); }, &f,
                           num_tasks);
}

}  // namespace

TEST_CASE("data type names round-trip", "[runtime]") {
  CHECK(DataType::f32().str() == "f32");
  CHECK(DataType::bf16().str() == "bf16");
  CHECK(DataType::boolean().str() == "u1");
  CHECK(DataType::boolean().bytes() == 1);
  for (const char* name : {"f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64", "u1", "u8", "u32"}) {
    CHECK(parse_data_type(name).str() == name);
  }
  CHECK_THROWS_AS(parse_data_type("f8"), std::invalid_argument);
  CHECK_THROWS_AS(parse_data_type("bf32"), std::invalid_argument);
  CHECK_THROWS_AS(parse_data_type("x"), std::invalid_argument);
  // Codes match compute/dtype.h's DType::Code numbering.
  CHECK(DataType::kInt == 0);
  CHECK(DataType::kUInt == 1);
  CHECK(DataType::kFloat == 2);
  CHECK(DataType::kBFloat == 3);
}

TEST_CASE("f16 and bf16 conversions", "[runtime]") {
  CHECK(float_to_half(1.0f) == 0x3c00);
  CHECK(float_to_half(-2.0f) == 0xc000);
  CHECK(float_to_half(65504.0f) == 0x7bff);
  CHECK(float_to_half(65520.0f) == 0x7c00);  // ties to even -> overflow to inf
  CHECK(float_to_half(1e-8f) == 0);
  CHECK(float_to_half(std::ldexp(1.0f, -24)) == 0x0001);             // smallest subnormal
  CHECK(float_to_half(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);      // tie -> even
  CHECK(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // tie -> even (up)
  CHECK(std::isnan(half_to_float(float_to_half(std::nanf("")))));
  CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(half_to_float(0x7bff) == 65504.0f);
  // Every finite half survives half -> float -> half.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;
    float f = half_to_float(static_cast<uint16_t>(h));
    if (float_to_half(f) != h) FAIL("half 0x" << std::hex << h << " does not round-trip");
  }
  CHECK(float_to_bfloat16(1.0f) == 0x3f80);
  CHECK(bfloat16_to_float(0x3f80) == 1.0f);
  CHECK(bfloat16_to_float(float_to_bfloat16(3.140625f)) == 3.140625f);
  CHECK(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nanf("")))));
}

TEST_CASE("NDArray storage is aligned and shared by handle copies", "[runtime]") {
  NDArray a = NDArray::empty({3, 5, 7}, DataType::f32());
  CHECK(reinterpret_cast<uintptr_t>(a.data()) % 64 == 0);
  CHECK(a.num_elements() == 105);
  CHECK(a.nbytes() == 420);
  NDArray e = NDArray::empty({0, 4}, DataType::i8());
  CHECK(e.num_elements() == 0);
  CHECK(e.data() != nullptr);
  CHECK(NDArray::empty({}, DataType::f64()).num_elements() == 1);  // a scalar

  a.fill_zero();
  NDArray shared = a;
  NDArray deep = a.copy();
  a.set(10, 2.5);
  CHECK(shared.get(10) == 2.5);
  CHECK(deep.get(10) == 0.0);
  CHECK(deep.data() != a.data());
  CHECK(reinterpret_cast<uintptr_t>(deep.data()) % 64 == 0);

  CHECK_THROWS_AS(NDArray::empty({2, -1}, DataType::f32()), std::invalid_argument);
  CHECK_THROWS_AS(NDArray::empty({2}, DataType(DataType::kFloat, 8)), std::invalid_argument);
  CHECK_THROWS_AS(a.get(105), std::out_of_range);
}

TEST_CASE("fill_random is deterministic and in range", "[runtime]") {
  for (DataType t : {DataType::f32(), DataType::f16(), DataType::bf16(), DataType::f64(), DataType::i8(),
                     DataType::i32(), DataType::u8(), DataType::boolean()}) {
    INFO(t.str());
    NDArray a = NDArray::empty({1000}, t), b = NDArray::empty({1000}, t), c = NDArray::empty({1000}, t);
    a.fill_random(42);
    b.fill_random(42);
    c.fill_random(43);
    CHECK(compare(a, b, 0, 0).ok);
    CHECK(!compare(a, c, 0, 0).ok);
    double lo = 1e300, hi = -1e300;
    for (int64_t i = 0; i < 1000; ++i) {
      lo = std::min(lo, a.get(i));
      hi = std::max(hi, a.get(i));
    }
    if (t.is_float()) {
      CHECK(lo >= -1.0);
      CHECK(hi <= 1.0);
      CHECK(hi - lo > 1.5);  // spread over the range
    } else if (t.bits == 1) {
      CHECK(lo == 0);
      CHECK(hi == 1);
    } else {
      // Integers span their type's whole range.
      const double type_lo = t.is_int() ? -std::ldexp(1.0, t.bits - 1) : 0.0;
      const double type_hi = t.is_int() ? std::ldexp(1.0, t.bits - 1) - 1 : std::ldexp(1.0, t.bits) - 1;
      const double span = type_hi - type_lo;
      CHECK(lo >= type_lo);
      CHECK(hi <= type_hi);
      CHECK(lo < type_lo + span / 16);
      CHECK(hi > type_hi - span / 16);
    }
  }
}

TEST_CASE("compare finds planted mismatches and NaN", "[runtime]") {
  NDArray expected = NDArray::empty({4, 8}, DataType::f32());
  expected.fill_random(1);
  NDArray actual = expected.copy();
  CompareResult same = compare(actual, expected, 1e-5, 1e-6);
  CHECK(same.ok);
  CHECK(same.first_bad_index == -1);
  CHECK(same.message.empty());

  actual.set(13, expected.get(13) + 0.5);
  CompareResult bad = compare(actual, expected, 1e-5, 1e-6);
  CHECK(!bad.ok);
  CHECK(bad.first_bad_index == 13);
  CHECK(bad.num_bad == 1);
  CHECK(bad.max_abs_err == Approx(0.5).epsilon(1e-6));
  CHECK(bad.message.find("[1, 5]") != std::string::npos);
  CHECK(compare(actual, expected, 0, 0.6).ok);  // within a loose atol

  NDArray with_nan = expected.copy();
  with_nan.set(3, std::nan(""));
  CompareResult nan = compare(with_nan, expected, 1e-3, 1e-3);
  CHECK(!nan.ok);
  CHECK(nan.first_bad_index == 3);
  CHECK(compare(with_nan, with_nan, 0, 0).ok);  // NaN matches NaN

  // Integer arrays compare exactly; shape and dtype must agree.
  NDArray i = NDArray::empty({16}, DataType::i32());
  i.fill_random(5);
  NDArray j = i.copy();
  j.set(15, i.get(15) + 1);
  CHECK(compare(j, i, 0, 0).first_bad_index == 15);
  CHECK(!compare(i, NDArray::empty({4, 4}, DataType::i32()), 0, 0).ok);
  CHECK(!compare(i, NDArray::empty({16}, DataType::u32()), 0, 0).ok);

  // Half-precision types compare through float.
  NDArray h = NDArray::empty({8}, DataType::bf16());
  h.fill_random(9);
  NDArray h2 = h.copy();
  h2.set(2, h.get(2) + 0.25);
  CHECK(compare(h2, h, 0, 0).first_bad_index == 2);
}

TEST_CASE("thread pool runs every task exactly once", "[runtime]") {
  ThreadPool pool(3);
  for (int64_t n : {1, 2, 3, 7, 100, 1000}) {
    std::vector<std::atomic<int>> hits(n);
    std::mutex mu;
    std::set<std::thread::id> ids;
    auto task = [&](int64_t t, int64_t num) -> int32_t {
      if (num != n) return 99;
      hits[t].fetch_add(1);
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
      return 0;
    };
    REQUIRE(run_parallel(pool, n, task) == 0);
    for (int64_t t = 0; t < n; ++t) CHECK(hits[t].load() == 1);
    CHECK(ids.size() >= 1);
    CHECK(ids.size() <= 3);
  }
  // num_tasks <= 0: one task per thread.
  std::atomic<int64_t> seen{-1};
  auto per_thread = [&](int64_t, int64_t num) -> int32_t {
    seen = num;
    return 0;
  };
  CHECK(run_parallel(pool, 0, per_thread) == 0);
  CHECK(seen.load() == 3);
  // The global pool and the C entry points.
  CHECK(kiln_num_threads() == ThreadPool::global().num_threads());
  CHECK(kiln_num_threads() == default_num_threads());
  CHECK_THROWS_AS(ThreadPool(0), std::invalid_argument);
}

TEST_CASE("thread pool runs tasks on several threads at once", "[runtime]") {
  // Two tasks that each wait (bounded) until both are running: this passes
  // only if a worker took task 1 while the caller ran task 0.
  ThreadPool pool(2);
  std::atomic<int> arrived{0};
  std::set<std::thread::id> ids;
  std::mutex mu;
  auto task = [&](int64_t, int64_t) -> int32_t {
    {
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    }
    arrived.fetch_add(1);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (arrived.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    return arrived.load() >= 2 ? 0 : 1;
  };
  CHECK(run_parallel(pool, 2, task) == 0);
  CHECK(ids.size() == 2);

  // The same through the global pool (on a 1-core box it has no workers).
  std::set<std::thread::id> gids;
  std::vector<int> out(64, 0);
  auto square = [&](int64_t t, int64_t) -> int32_t {
    out[t] = static_cast<int>(t * t);
    std::lock_guard<std::mutex> lock(mu);
    gids.insert(std::this_thread::get_id());
    return 0;
  };
  CHECK(run_parallel(ThreadPool::global(), 64, square) == 0);
  for (int t = 0; t < 64; ++t) CHECK(out[t] == t * t);
  CHECK(gids.size() >= 1);
}

TEST_CASE("nested parallel loops run serially without deadlock", "[runtime]") {
  ThreadPool pool(2);
  std::atomic<int> inner_runs{0};
  auto inner = [&](int64_t, int64_t) -> int32_t {
    inner_runs.fetch_add(1);
    return 0;
  };
  auto outer = [&](int64_t, int64_t) -> int32_t { return run_parallel(pool, 5, inner); };
  for (int round = 0; round < 20; ++round) REQUIRE(run_parallel(pool, 4, outer) == 0);
  CHECK(inner_runs.load() == 20 * 4 * 5);

  // Nested through the C entry point too.
  inner_runs = 0;
  auto c_outer = [&](int64_t, int64_t) -> int32_t {
    return kiln_parallel_for(
        [](int64_t, int64_t, void* c) -> int32_t { return static_cast<std::atomic<int>*>(c)->fetch_add(1) * 0; },
        &inner_runs, 3);
  };
  CHECK(run_parallel(ThreadPool::global(), 4, c_outer) == 0);
  CHECK(inner_runs.load() == 12);
}

TEST_CASE("thread pool returns a failing task's result", "[runtime]") {
  ThreadPool pool(2);
  auto fail_at_5 = [](int64_t t, int64_t) -> int32_t { return t == 5 ? 7 : 0; };
  auto fail_at_0 = [](int64_t t, int64_t) -> int32_t { return t == 0 ? -3 : 0; };
  for (int round = 0; round < 20; ++round) {
    CHECK(run_parallel(pool, 16, fail_at_5) == 7);
    CHECK(run_parallel(pool, 16, fail_at_0) == -3);
  }
  // The pool stays usable after failures.
  std::atomic<int> count{0};
  auto ok = [&](int64_t, int64_t) -> int32_t {
    count.fetch_add(1);
    return 0;
  };
  CHECK(run_parallel(pool, 10, ok) == 0);
  CHECK(count.load() == 10);
}

TEST_CASE("time evaluator grows number and reports every sample", "[runtime]") {
  std::atomic<int64_t> calls{0};
  auto tiny = [&] { calls.fetch_add(1); };
  TimeOptions opt;
  opt.repeat = 4;
  opt.warmup = 2;
  opt.min_repeat_ms = 2;
  TimeResult r = time_function(tiny, opt);
  CHECK(r.number > 1000);
  CHECK(r.samples_ms.size() == 4);
  for (double s : r.samples_ms) CHECK(s * r.number >= 0.5 * opt.min_repeat_ms);  // noise margin
  CHECK(r.min_ms <= r.median_ms);
  CHECK(r.median_ms <= *std::max_element(r.samples_ms.begin(), r.samples_ms.end()));
  CHECK(calls.load() >= 2 + 4 * r.number);

  // Without min_repeat_ms, exactly warmup + repeat * number calls (cache
  // flushes and cooldowns are not calls).
  calls = 0;
  TimeOptions fixed;
  fixed.number = 3;
  fixed.repeat = 5;
  fixed.warmup = 1;
  fixed.flush_cache = true;
  fixed.flush_bytes = 1 << 20;
  fixed.cooldown_ms = 0.1;
  TimeResult f = time_function(tiny, fixed);
  CHECK(calls.load() == 1 + 5 * 3);
  CHECK(f.number == 3);
  CHECK(f.samples_ms.size() == 5);

  CHECK_THROWS_AS(time_function(tiny, TimeOptions{0, 1, 0, 1, 0, false, 0}), std::invalid_argument);
  CHECK_THROWS_AS(time_function(tiny, TimeOptions{1, 0, 0, 1, 0, false, 0}), std::invalid_argument);
}

TEST_CASE("time evaluator keeps the calibration measurement as the first sample", "[runtime]") {
  // Each call sleeps 1 ms; measurements must last 2.5 ms. Calibration runs
  // 1 call, then (unless that already took 2.5 ms) a few more: the run that
  // first lasts 2.5 ms is sample 1, so the calls are warmup + the short runs
  // (fewer calls together than one sample) + repeat * number. Throwing that
  // run away, as kiln did, costs a whole extra sample: repeat + 1.
  int calls = 0;
  auto nap = [&] {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  TimeOptions opt;
  opt.repeat = 3;
  opt.warmup = 1;
  opt.min_repeat_ms = 2.5;
  TimeResult r = time_function(nap, opt);
  REQUIRE(r.samples_ms.size() == 3);
  for (double s : r.samples_ms) CHECK(s >= 0.9);
  CHECK(calls >= 1 + 3 * r.number);
  CHECK(calls < 1 + 4 * r.number);
}

TEST_CASE("the time protocol calibrates and screens on any clock", "[runtime]") {
  // A synthetic clock: every call takes 0.3 ms. The protocol never calls
  // anything itself, so a GPU timer (CUDA events) gets the same samples.
  std::vector<int> numbers;
  auto measure = [&](int number) {
    numbers.push_back(number);
    return 0.3 * number;
  };
  TimeOptions opt;
  opt.repeat = 3;
  opt.min_repeat_ms = 2;
  TimeResult r = run_time_protocol(measure, opt, "test clock");
  // 1 call (0.3 ms) is short: the estimate 1.1 * 2 / 0.3 + 1 = 8.33 calls,
  // then that run (2.4 ms) is the first sample and two more follow.
  CHECK(numbers == std::vector<int>{1, 8, 8, 8});
  CHECK(r.number == 8);
  REQUIRE(r.samples_ms.size() == 3);
  CHECK(r.median_ms == Approx(0.3));

  numbers.clear();
  opt.screen_ms = 0.2;  // slower than that: the calibrated sample only
  CHECK(run_time_protocol(measure, opt, "test clock").samples_ms.size() == 1);
  CHECK(numbers == std::vector<int>{1, 8});

  numbers.clear();
  opt.screen_ms = 0;
  opt.min_repeat_ms = 0;
  opt.number = 4;  // fixed: repeat measurements of `number` calls
  CHECK(run_time_protocol(measure, opt, "test clock").number == 4);
  CHECK(numbers == std::vector<int>{4, 4, 4});

  opt.repeat = 0;
  CHECK_THROWS_WITH(run_time_protocol(measure, opt, "test clock"), "test clock: repeat must be >= 1");
  opt.repeat = 1;
  opt.screen_ms = -1;
  CHECK_THROWS_WITH(run_time_protocol(measure, opt, "test clock"),
                    "test clock: min_repeat_ms, cooldown_ms and screen_ms must be >= 0");
}

TEST_CASE("time evaluator screens a candidate whose first sample is slower than screen_ms", "[runtime]") {
  auto nap = [] { std::this_thread::sleep_for(std::chrono::milliseconds(1)); };
  TimeOptions opt;
  opt.repeat = 3;
  opt.warmup = 0;
  opt.screen_ms = 0.5;  // a 1 ms call is slower: one sample
  TimeResult slow = time_function(nap, opt);
  REQUIRE(slow.samples_ms.size() == 1);
  CHECK(slow.median_ms >= 0.9);
  opt.min_repeat_ms = 2.5;  // also when the sample is the calibration's
  CHECK(time_function(nap, opt).samples_ms.size() == 1);
  opt.screen_ms = 1e6;  // faster than that: every repeat
  CHECK(time_function(nap, opt).samples_ms.size() == 3);
  opt.screen_ms = 0;  // never
  CHECK(time_function(nap, opt).samples_ms.size() == 3);
  opt.screen_ms = -1;
  CHECK_THROWS_AS(time_function(nap, opt), std::invalid_argument);
}

TEST_CASE("time evaluator measures a sleep", "[runtime]") {
  auto nap = [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); };
  TimeOptions opt;
  opt.repeat = 3;
  opt.warmup = 0;
  TimeResult r = time_function(nap, opt);
  CHECK(r.number == 1);
  REQUIRE(r.samples_ms.size() == 3);
  CHECK(r.median_ms >= 1.9);  // a 2 ms sleep takes at least that long (no upper bound: loaded machines)
  CHECK(r.stddev_ms >= 0);
  CHECK(r.mean_ms >= r.min_ms);

  TimeResult s;
  s.samples_ms = {4, 1, 3, 2};
  summarize(s);
  CHECK(s.median_ms == 2.5);
  CHECK(s.min_ms == 1);
  CHECK(s.mean_ms == 2.5);
  CHECK(s.stddev_ms == Approx(std::sqrt(5.0 / 3.0)));
}

TEST_CASE("Module loads a shared object and wires the parallel-for slot", "[runtime]") {
  if (std::system("command -v cc > /dev/null 2>&1") != 0) {
    KILN_SKIP("no C compiler (cc) on PATH");
  }
  char dir_template[] = "/tmp/kiln_test_runtime_XXXXXX";
  REQUIRE(mkdtemp(dir_template) != nullptr);
  std::string dir = dir_template;
  std::string src = dir + "/kernel.c", so = dir + "/kernel.so";
  {
    std::ofstream f(src);
    f << R"(#include <stdint.h>
void* __kiln_parallel_for;
typedef int32_t (*task_fn)(int64_t, int64_t, void*);
typedef int32_t (*parallel_for_fn)(task_fn, void*, int64_t);
static int32_t body(int64_t t, int64_t n, void* closure) {
  float** args = (float**)closure;
  for (int64_t i = t * 64 / n; i < (t + 1) * 64 / n; ++i) args[1][i] = args[0][i] + 1.0f;
  return 0;
}
int32_t add1(void** args) {
  if (!__kiln_parallel_for) return -1;
  return ((parallel_for_fn)__kiln_parallel_for)(body, args, 4);
}
)";
  }
  std::string cmd = "cc -shared -fPIC -O1 -o " + so + " " + src;
  REQUIRE(std::system(cmd.c_str()) == 0);

  {
    std::shared_ptr<Module> m = Module::load(so);
    void* slot = m->get_symbol(KILN_PARALLEL_FOR_SLOT);
    REQUIRE(slot != nullptr);
    kiln_parallel_for_fn expected = &kiln_parallel_for;
    CHECK(*static_cast<void**>(slot) == reinterpret_cast<void*>(expected));
    CHECK(m->get_function("missing") == nullptr);
    kiln_packed_fn add1 = m->get_function("add1");
    REQUIRE(add1 != nullptr);

    NDArray in = NDArray::empty({64}, DataType::f32()), out = NDArray::empty({64}, DataType::f32());
    in.fill_random(3);
    out.fill_zero();
    void* args[] = {in.data(), out.data()};
    CHECK(add1(args) == 0);
    for (int64_t i = 0; i < 64; ++i) CHECK(out.get(i) == static_cast<float>(in.get(i) + 1.0));
  }

  try {
    Module::load(dir + "/does_not_exist.so");
    FAIL("loading a missing file should throw");
  } catch (const LoadError& e) {
    CHECK(std::string(e.what()).find("does_not_exist.so") != std::string::npos);
  }
  std::remove(src.c_str());
  std::remove(so.c_str());
  rmdir(dir.c_str());
}

TEST_CASE("the workspace cache hands a freed block out again for the same size", "[runtime][workspace]") {
  kiln::rt::workspace_release_all();
  void* a = kiln_workspace_alloc(4096);
  REQUIRE(a != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(a) % 64 == 0);
  kiln_workspace_free(a, 4096);
  CHECK(kiln::rt::workspace_cached_bytes() == 4096);
  void* other = kiln_workspace_alloc(8192);  // another size: a fresh block
  CHECK(other != a);
  void* again = kiln_workspace_alloc(4096);
  CHECK(again == a);
  CHECK(kiln::rt::workspace_cached_bytes() == 0);
  kiln_workspace_free(again, 4096);
  kiln_workspace_free(other, 8192);
  // Beyond the cap, freed blocks go back to the C library.
  const uint64_t big = kiln::rt::kWorkspaceCacheBytes;
  void* huge = kiln_workspace_alloc(big);
  REQUIRE(huge != nullptr);
  kiln_workspace_free(huge, big);
  CHECK(kiln::rt::workspace_cached_bytes() == 4096 + 8192);
  kiln::rt::workspace_release_all();
  CHECK(kiln::rt::workspace_cached_bytes() == 0);
}
