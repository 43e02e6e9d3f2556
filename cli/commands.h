// The kiln subcommands. Each registers its options on the CLI11 app and
// returns the handler to run when it was chosen.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace kiln::cli {

using Handler = std::function<int()>;

Handler add_lower_command(CLI::App& app);
Handler add_source_command(CLI::App& app);
Handler add_run_command(CLI::App& app);
Handler add_ops_command(CLI::App& app);
Handler add_tune_command(CLI::App& app);
Handler add_show_command(CLI::App& app);
Handler add_export_command(CLI::App& app);
Handler add_import_command(CLI::App& app);
Handler add_probe_command(CLI::App& app);
Handler add_run_model_command(CLI::App& app);
Handler add_tune_model_command(CLI::App& app);

}  // namespace kiln::cli
