// `kiln bench --target cuda`: a suite's workloads on GPU 0, kiln's kernel
// (each workload's best record for the cuda target in --db, else its
// template's default config, compiled by NVRTC for the GPU's architecture)
// against the GPU baselines (cuBLAS, cuDNN: plug-ins, contender.h), on the
// same device buffers, interleaved round by round.
//
// Context: kiln's driver runtime (runtime/cuda_driver.h) retains GPU 0's
// primary context and makes it current before any plug-in is opened; the
// libraries' CUDA runtime binds to that same primary context, so one set of
// device buffers serves every contender.
//
// Timing: every contender is timed by the same code, rt::cuda::time_enqueued
// (time_launches for kiln): CUDA events on the default stream around
// `number` back-to-back calls, `number` grown until a measurement lasts
// --min-repeat-ms, --repeat measurements each after a write of twice the
// L2 cache, 2 warm-up calls; a round's figure is the median measurement, a
// contender's the best of --rounds rounds, and each round starts with a
// different contender.
//
// Checks: every contender's output is copied back and checked against
// kiln's reference interpreter (bench_runner.h); the output buffer of a
// baseline starts filled with NaN bytes, so an output it did not write fails.
//
// The result is bench_runner.h's JSON with "target" ("cuda -arch=sm_90"),
// "machine" (the GPU's name) and "gpu": {"name", "arch", "sm_count",
// "memory_gib", "l2_bytes", "driver"}; `kiln report --bench` takes it.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>

#include "bench/bench_runner.h"

namespace kiln {

// UserError (before anything runs) for a suite workload whose op has no cuda
// template (naming the suite line), --tune-trials (tune with `kiln tune
// --target cuda` first), no GPU or driver, a target whose architecture is not
// GPU 0's, or a requested baseline that cannot run (no plug-in, library
// missing, the CUDA runtime cannot use the GPU).
nlohmann::json run_gpu_bench(const BenchOptions& options, std::ostream& log);

}  // namespace kiln
