// Formats a `kiln bench` result (bench_runner.h) as a text table for the
// terminal or a Markdown section (for README tables): GFLOP/s of kiln and
// each baseline, kiln's ratio to the best baseline, the output checks and
// the geometric means of kiln/baseline.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln {

// "oneDNN", "OpenBLAS", "Halide", "kiln" for the result keys.
std::string baseline_display_name(const std::string& key);

// The baselines of a result in display order (oneDNN, OpenBLAS, Halide).
std::vector<std::string> result_baselines(const nlohmann::json& result);

std::string format_bench_text(const nlohmann::json& result);
std::string format_bench_markdown(const nlohmann::json& result);

}  // namespace kiln
