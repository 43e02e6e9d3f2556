// `kiln report [--db F] [--bench results.json ...] --html out.html`: a tuning
// database and bench results as one HTML page with charts (bench/report_html.h).
#pragma once

#include "cli/commands.h"

namespace kiln::cli {

Handler add_report_command(CLI::App& app);

}  // namespace kiln::cli
