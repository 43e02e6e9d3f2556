// Helpers of the cuda library tests (test_lib_cuda*.cpp): cuda records
// written straight into a tuning database, a library of one of them, and
// KILN_GPU_IMAGE for a scope.
#pragma once

#include <stdlib.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "codegen/cuda_emulation.h"
#include "codegen/target.h"
#include "kernels/op_registry.h"
#include "library/library_builder.h"
#include "schedule/gpu_limits.h"
#include "tests/lib_test_util.h"
#include "tuner/database.h"

namespace kiln::test {

// Whether this machine has what a test of an emulated cuda library needs:
// a host C++ compiler for the emulated kernels, cc for the C test program
// and clang for the library's C; false, with *why, when not.
inline bool have_library_tools(std::string* why) {
  if (host_cxx_compiler().empty())
    *why = "no host C++ compiler for the emulated kernels";
  else if (shell("command -v cc").status != 0)
    *why = "no cc to compile the C test program";
  else if (shell("command -v clang-14 || command -v clang").status != 0)
    *why = "no clang for the library's C code";
  else
    return true;
  return false;
}

// One measured record of `workload` on a cuda target: the template's
// default config, a random one (seed >= 0), or the knobs of `config_json`
// over the default.
inline void add_cuda_record(Database& db, const std::string& workload, const std::string& target, double median_ms,
                            int seed = -1, const std::string& config_json = "") {
  const Target t = Target::parse(target);
  OpInstance op = build_workload(workload);
  const OpDef& def = find_op(op.op);
  const GpuLimits limits = gpu_limits_for_arch(t.arch);
  auto space = def.gpu.define_space(op, limits);
  Task task;
  task.workload = op.canonical;
  task.op = op.op;
  task.target = t.str();
  task.flops = op.flops;
  task.space = space;
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  Config cfg = seed >= 0 ? space->random(rng) : def.gpu.default_config(op, limits, *space);
  if (!config_json.empty()) {
    nlohmann::json j = cfg.to_json();
    j.update(nlohmann::json::parse(config_json));
    cfg = space->from_json(j);
  }
  MeasureResult res;
  res.device = "kiln fake H100";
  res.samples_ms = {median_ms, median_ms};
  db.add_records(task, {cfg}, {res});
}

// Compiles the C program `source` (written to dir/name.c) against the
// static library lib<lib>.a in `out` and, when that worked, runs it on the
// stand-in driver (KILN_FAKE_LIBCUDA, which the test defines). `built`
// holds the compiler's result, `ran` the program's.
struct CProgramRun {
  ShellResult built, ran;
};
inline CProgramRun run_c_program(const std::string& dir, const std::string& name, const std::string& source,
                                 const std::string& out, const std::string& lib, const std::string& fake_libcuda) {
  const std::string exe = dir + "/" + name;
  { std::ofstream(exe + ".c") << source; }
  CProgramRun r;
  r.built = shell("cc -std=c11 -O1 -Wall -Wextra -Werror -I" + out + " " + exe + ".c " + out + "/lib" + lib +
                  ".a -lpthread -ldl -lm -o " + exe);
  if (r.built.status == 0) r.ran = shell("KILN_LIBCUDA=" + fake_libcuda + " " + exe);
  return r;
}

// The options of a library "kt" for `target` in dir/out, from a database
// dir/cuda.db that holds one record of `workload` with the knobs of
// `config_json`.
inline LibraryOptions one_record_library(const TempDir& dir, const std::string& workload, const std::string& target,
                                         const std::string& config_json) {
  LibraryOptions o;
  o.db_path = dir / "cuda.db";
  {
    auto db = Database::open(o.db_path);
    add_cuda_record(*db, workload, target, 0.01, -1, config_json);
  }
  o.out_dir = dir / "out";
  o.name = "kt";
  o.target = target;
  return o;
}

// KILN_GPU_IMAGE for one scope.
struct ImageKind {
  explicit ImageKind(const char* kind) {
    if (kind)
      setenv("KILN_GPU_IMAGE", kind, 1);
    else
      unsetenv("KILN_GPU_IMAGE");
  }
  ~ImageKind() { unsetenv("KILN_GPU_IMAGE"); }
  ImageKind(const ImageKind&) = delete;
  ImageKind& operator=(const ImageKind&) = delete;
};

}  // namespace kiln::test
