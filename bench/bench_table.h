// Formats a `kiln bench` result (bench_runner.h) as a text table for the
// terminal or a Markdown section (for README tables): GFLOP/s of kiln and
// each baseline, kiln's ratio to the best baseline, the output checks and
// the geometric means of kiln/baseline.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln {

// "oneDNN", "OpenBLAS", "Halide", "cuBLAS", "cuDNN", "kiln" for the result keys.
std::string baseline_display_name(const std::string& key);

// The baselines of a result in display order (oneDNN, OpenBLAS, Halide, cuBLAS, cuDNN).
std::vector<std::string> result_baselines(const nlohmann::json& result);
// "kiln", "kiln_unfused" when present, then the baselines: a result's columns.
std::vector<std::string> bench_columns(const nlohmann::json& result);
// Where it ran: "AMD EPYC ..., 2 threads", or for a GPU result "GPU NVIDIA
// H100 80GB HBM3 (sm_90, 132 SMs)".
std::string bench_machine_text(const nlohmann::json& result);
// Memory-bound: under one FLOP per byte that must move (pooling, ...).
bool memory_bound(const nlohmann::json& workload);
// "geomean kiln/oneDNN: 1.07x over 23 workloads", one per baseline.
std::vector<std::string> geomean_lines(const nlohmann::json& result);

std::string format_bench_text(const nlohmann::json& result);
std::string format_bench_markdown(const nlohmann::json& result);

}  // namespace kiln
