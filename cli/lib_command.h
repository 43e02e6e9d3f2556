// `kiln lib`: builds a linkable library of tuned kernels from a tuning
// database (cli/library_builder.h).
#pragma once

#include "cli/commands.h"

namespace kiln::cli {

Handler add_lib_command(CLI::App& app);

}  // namespace kiln::cli
