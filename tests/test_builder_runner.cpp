// LocalBuilder and LocalRunner on a small real task (a plain 32x32x32 TE
// matmul) whose config space plants failures: configs the template rejects or
// chokes on, a compile that never ends or crashes the compiler, kernels that
// segfault, hang or compute the wrong thing. Every one must become its error
// record, good candidates must still measure afterwards, time limits must
// hold, and no child process or temporary file may be left behind.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <stdexcept>
#include <thread>

#include "codegen/runtime_dtype.h"
#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/interpreter.h"
#include "runtime/ndarray.h"
#include "schedule/lower.h"
#include "schedule/schedule.h"
#include "support/planted_matmul.h"
#include "tuner/local_builder.h"
#include "tuner/local_runner.h"
#include "runtime/process_util.h"

namespace kiln {
namespace {

constexpr int kN = testing::PlantedMatmul::kN;

// What the "plant" knob makes instantiate() do.
enum Plant : int64_t {
  kGood = 0,
  kCrash,          // kernel stores 2^40 elements past its output: SIGSEGV
  kHang,           // kernel runs a 2^40-iteration loop
  kWrong,          // kernel drops the reduction: C = A[:, 0] * B[0, :]
  kTailWrong,      // kernel is right but for C's last element
  kReject,         // instantiate throws UserError
  kThrow,          // instantiate throws something else
  kCompileHang,    // instantiate never returns
  kCompilerCrash,  // instantiate aborts the process
  kNumPlants
};


// A plain matmul task with the plants above; the reference is every element
// of C computed by the interpreter from the inputs the runner generates.
std::shared_ptr<Task> make_task(const std::string& target = "llvm") {
  const testing::PlantedMatmul mm;
  auto space = std::make_shared<ConfigSpace>();
  space->define_split("tile_j", kN, 2);
  std::vector<int64_t> plants;
  for (int64_t p = 0; p < kNumPlants; ++p) plants.push_back(p);
  space->define_choice("plant", plants);

  auto task = std::make_shared<Task>();
  task->workload = "test_matmul:N=32";
  task->op = "test_matmul";
  task->target = target;
  task->flops = 2.0 * kN * kN * kN;
  task->space = space;
  task->instantiate = [mm](const Config& cfg, LowerDepth depth) -> LoweredFunc {
    const int64_t tile = cfg.split("tile_j")[1];
    switch (cfg.choice("plant")) {
      case kReject:
        user_error() << "tile_j " << tile << " is rejected by the plant";
      case kThrow:
        throw std::runtime_error("the plant broke lowering");
      case kCompileHang:
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      case kCompilerCrash:
        std::abort();
      case kWrong:
        return mm.wrong(depth);
      case kTailWrong:
        return mm.tail_wrong(tile, depth);
      case kCrash:
        return mm.crashing(tile, depth);
      case kHang:
        return mm.hanging(tile, depth);
      default:
        return mm.lower_plain(tile, depth);
    }
  };
  // The instantiated function's argument list (shapes, dtypes) is the task's.
  task->args = mm.lower_plain(4, LowerDepth::kAnnotatedLoops).args;
  task->num_inputs = 2;
  task->input_seed = 7;
  task->reference = {mm.whole_reference(task->input_seed)};
  return task;
}

Config config(const Task& task, Plant plant, int64_t tile = 4) {
  return task.space->make({{"tile_j", {kN / tile, tile}}, {"plant", static_cast<int64_t>(plant)}});
}

// No child process is left, running or zombie.
bool no_children() {
  int status = 0;
  return ::waitpid(-1, &status, WNOHANG) == -1 && errno == ECHILD;
}

uint16_t elf_machine(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char header[20] = {};
  in.read(header, sizeof header);
  uint16_t machine = 0;
  std::memcpy(&machine, header + 18, 2);
  return machine;
}

}  // namespace

TEST_CASE("LocalBuilder turns every planted config into its result and cleans up", "[tuner][builder]") {
  auto task = make_task();
  std::vector<Config> configs = {config(*task, kGood, 4),     config(*task, kReject),        config(*task, kThrow),
                                 config(*task, kCompileHang), config(*task, kCompilerCrash), config(*task, kGood, 8),
                                 config(*task, kCrash),       config(*task, kHang),          config(*task, kWrong)};
  std::string dir;
  {
    LocalBuilder builder(LocalBuilderOptions{2, 1.0, ""});
    dir = builder.directory();
    REQUIRE(std::filesystem::is_directory(dir));
    std::vector<BuildResult> r = builder.build(*task, configs);
    REQUIRE(r.size() == configs.size());

    for (size_t i : {size_t{0}, size_t{5}, size_t{6}, size_t{7}, size_t{8}}) {
      INFO("config " << configs[i].str() << ": " << r[i].message);
      CHECK(r[i].error == ErrorKind::kNone);
      CHECK(r[i].entry == "mm");
      CHECK(r[i].compile_ms > 0);
      CHECK(std::filesystem::path(r[i].artifact).parent_path() == dir);
      CHECK(std::filesystem::is_regular_file(r[i].artifact));
    }
    CHECK(r[1].error == ErrorKind::kInvalidConfig);
    CHECK_THAT(r[1].message, Catch::Contains("rejected by the plant"));
    CHECK(r[2].error == ErrorKind::kCompileError);
    CHECK_THAT(r[2].message, Catch::Contains("the plant broke lowering"));
    CHECK(r[3].error == ErrorKind::kCompileTimeout);
    CHECK(r[3].compile_ms >= 1000);
    CHECK(r[4].error == ErrorKind::kCompileError);
    CHECK_THAT(r[4].message, Catch::Contains("signal 6"));
    // The hung compile is cut at its 1 s limit while the others proceed.

    // The next batch replaces the previous batch's artifacts.
    std::vector<BuildResult> again = builder.build(*task, {config(*task, kGood, 2)});
    REQUIRE(again[0].error == ErrorKind::kNone);
    CHECK_FALSE(std::filesystem::exists(r[0].artifact));
    CHECK(std::filesystem::exists(again[0].artifact));
  }
  CHECK_FALSE(std::filesystem::exists(dir));
  CHECK(no_children());
}

TEST_CASE("LocalRunner measures good kernels and survives crashes, hangs and wrong results", "[tuner][runner]") {
  auto task = make_task();
  std::vector<Config> configs = {config(*task, kGood, 4),  config(*task, kCrash),   config(*task, kGood, 8),
                                 config(*task, kHang),     config(*task, kGood, 2), config(*task, kWrong),
                                 config(*task, kGood, 16), config(*task, kReject)};
  {
    LocalBuilder builder(LocalBuilderOptions{2, 30, ""});
    std::vector<BuildResult> builds = builder.build(*task, configs);
    for (size_t i = 0; i + 1 < builds.size(); ++i) REQUIRE(builds[i].error == ErrorKind::kNone);

    MeasureOptions opt;
    opt.repeat = 3;
    opt.min_repeat_ms = 1;
    opt.run_timeout_s = 0.5;
    LocalRunner runner(opt);
    std::vector<MeasureResult> r = runner.run(*task, builds);
    REQUIRE(r.size() == configs.size());

    for (size_t i = 0; i < r.size(); ++i) {
      CHECK(r[i].device == "local");
      CHECK(r[i].timestamp > 1600000000);
      CHECK(r[i].compile_ms == builds[i].compile_ms);
    }
    for (size_t i : {size_t{0}, size_t{2}, size_t{4}, size_t{6}}) {
      INFO("config " << configs[i].str() << ": " << r[i].message);
      CHECK(r[i].ok());
      CHECK(r[i].samples_ms.size() == 3);
      CHECK(r[i].median_ms() > 0);
    }
    CHECK(r[1].error == ErrorKind::kRuntimeCrash);
    CHECK_THAT(r[1].message, Catch::Contains("signal"));
    CHECK(r[3].error == ErrorKind::kRuntimeTimeout);
    CHECK(r[5].error == ErrorKind::kWrongResult);
    CHECK_THAT(r[5].message, Catch::Contains("output C[0, 0]") && Catch::Contains("expected"));
    CHECK(r[7].error == ErrorKind::kInvalidConfig);
    CHECK(r[7].message == builds[7].message);
    // One worker for the task, a fresh one after the crash and after the hang.
    CHECK(runner.workers_started() == 3);

    // The same worker keeps serving later batches.
    std::vector<MeasureResult> more = runner.run(*task, {builds[0]});
    CHECK(more[0].ok());
    CHECK(runner.workers_started() == 3);
    // Asked to measure afresh, the next batch gets a new worker (new buffers).
    const pid_t before = runner.worker_pid();
    runner.measure_afresh();
    CHECK(runner.worker_pid() == -1);
    more = runner.run(*task, {builds[0]});
    CHECK(more[0].ok());
    CHECK(runner.workers_started() == 4);
    CHECK(runner.worker_pid() != before);
  }
  CHECK(no_children());
}

TEST_CASE("LocalRunner screens: a candidate slower than the threshold gets one sample", "[tuner][runner]") {
  auto task = make_task();
  LocalBuilder builder(LocalBuilderOptions{1, 30, ""});
  std::vector<BuildResult> builds = builder.build(*task, {config(*task, kGood, 4)});
  REQUIRE(builds[0].error == ErrorKind::kNone);
  MeasureOptions opt;
  opt.repeat = 3;
  opt.min_repeat_ms = 1;
  LocalRunner runner(opt);
  runner.screen_slower_than(1e-9);  // every kernel is slower than a picosecond
  std::vector<MeasureResult> r = runner.run(*task, builds);
  REQUIRE(r[0].ok());
  CHECK(r[0].samples_ms.size() == 1);
  runner.screen_slower_than(1e9);
  r = runner.run(*task, builds);
  CHECK(r[0].samples_ms.size() == 3);
  runner.screen_slower_than(0);
  r = runner.run(*task, builds);
  CHECK(r[0].samples_ms.size() == 3);
  CHECK(runner.workers_started() == 1);  // the threshold travels with each candidate, the worker stays
}

TEST_CASE("a kernel wrong in its last element only is recorded as wrong", "[tuner][runner]") {
  auto task = make_task();
  REQUIRE(task->reference.at(0).whole());
  LocalBuilder builder(LocalBuilderOptions{1, 30, ""});
  std::vector<BuildResult> builds = builder.build(*task, {config(*task, kTailWrong), config(*task, kGood)});
  MeasureOptions opt;
  opt.repeat = 1;
  opt.min_repeat_ms = 1;
  LocalRunner runner(opt);
  std::vector<MeasureResult> r = runner.run(*task, builds);
  CHECK(r[0].error == ErrorKind::kWrongResult);
  CHECK_THAT(r[0].message, Catch::Contains("output C[31, 31]") && Catch::Contains("1 of 1024 elements differ"));
  CHECK(r[1].ok());
}

TEST_CASE("LocalBuilder compiles for the task's target, LocalRunner runs only the host's", "[tuner][builder]") {
  auto task = make_task("llvm -mtriple=aarch64-linux-gnu");
  LocalBuilder builder(LocalBuilderOptions{1, 30, ""});
  std::vector<BuildResult> builds = builder.build(*task, {config(*task, kGood)});
  REQUIRE(builds[0].error == ErrorKind::kNone);
  CHECK(elf_machine(builds[0].artifact) == 183);  // EM_AARCH64
  LocalRunner runner;
  std::vector<MeasureResult> r = runner.run(*task, builds);
  CHECK(r[0].error == ErrorKind::kDeviceError);
  CHECK_THAT(r[0].message, Catch::Contains("aarch64"));
  CHECK(runner.workers_started() == 0);
}

TEST_CASE("LocalBuilder refuses to fork from a multi-threaded process", "[tuner][builder]") {
  auto task = make_task();
  LocalBuilder builder(LocalBuilderOptions{1, 30, ""});
  std::promise<void> release;
  std::thread other([f = release.get_future()]() mutable { f.wait(); });
  CHECK(proc::count_threads() == 2);
  std::string message;
  try {
    builder.build(*task, {config(*task, kGood)});
  } catch (const InternalError& e) {
    message = e.what();
  }
  release.set_value();
  other.join();
  CHECK_THAT(message, Catch::Contains("single thread") && Catch::Contains("runs 2"));
  CHECK(proc::count_threads() == 1);
  CHECK(builder.build(*task, {config(*task, kGood)})[0].error == ErrorKind::kNone);
}

TEST_CASE("LocalBuilder and LocalRunner reject nonsensical options", "[tuner][builder][runner]") {
  CHECK_THROWS_AS(LocalBuilder(LocalBuilderOptions{-1, 30, ""}), UserError);
  CHECK_THROWS_AS(LocalBuilder(LocalBuilderOptions{1, 0, ""}), UserError);
  CHECK_THROWS_AS(LocalBuilder(LocalBuilderOptions{1, 1, "/nonexistent/kiln"}), UserError);
  MeasureOptions bad;
  bad.repeat = 0;
  CHECK_THROWS_AS(LocalRunner(bad), UserError);
  bad = MeasureOptions();
  bad.run_timeout_s = 0;
  CHECK_THROWS_AS(LocalRunner(bad), UserError);
}

}  // namespace kiln
