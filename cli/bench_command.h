// `kiln bench`: kiln's kernels against oneDNN, OpenBLAS and Halide on a
// suite of workloads (bench_runner.h).
#pragma once

#include "cli/commands.h"

namespace kiln::cli {

Handler add_bench_command(CLI::App& app);

}  // namespace kiln::cli
