// What the CPU and GPU halves of `kiln bench` share (bench_runner.cpp,
// gpu_bench.cpp): the contenders of one workload as timed entries, the
// interleaved rounds, and how a workload's results, ratio and the geometric
// means are recorded in the result JSON (bench_runner.h).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/ndarray.h"
#include "runtime/time_evaluator.h"
#include "tasks/kernel_build.h"
#include "tasks/reference_check.h"

namespace kiln {

// The seed of the reference check's sampled points.
inline constexpr uint64_t kBenchCheckSeed = 7;

// Fills input i of a workload with fill_random(i + 1), every contender
// reading the same values. u8 inputs (the activations of the int8 ops) keep
// 7 bits: on CPUs without VNNI, oneDNN's int8 kernels add u8 x s8 pairs in
// 16 bits with saturation (its "Nuances of int8 computations" asks for such
// inputs there), and integer timings do not depend on the values.
void fill_bench_input(const rt::NDArray& input, size_t i);

// One contender of a workload: how to time one round (returns that round's
// median in ms), its rounds, and its result so far ("impl", "check").
struct BenchEntry {
  std::string name;
  std::function<double(const rt::TimeOptions&)> time_round;
  std::vector<double> round_ms;
  nlohmann::json result;
};

nlohmann::json check_json(const CheckResult& c);

// The result JSON of a workload before any contender ran: workload, op,
// flops, the bytes every implementation must move at least (its arguments
// read or written once: for memory-bound ops GB/s says more than GFLOP/s)
// and where kiln's config came from.
nlohmann::json workload_json(const BuiltKernel& k, const std::vector<rt::NDArray>& arguments);

// `rounds` rounds, each timing every entry once, a different one first each round.
void run_rounds(std::vector<BenchEntry>& entries, int rounds, const rt::TimeOptions& options);

// Each entry's figure (its best round's median) into w["results"][name]:
// median_ms, gflops, gbps, round_ms.
void record_results(nlohmann::json& w, std::vector<BenchEntry>& entries, double flops, double bytes);

// w["best_baseline"] and w["ratio"] (kiln / the fastest correct baseline).
void set_best_baseline(nlohmann::json& w);

// The geometric mean of kiln / each baseline over the workloads where both are correct.
nlohmann::json geomeans(const nlohmann::json& workloads, const std::vector<std::string>& names);

}  // namespace kiln
