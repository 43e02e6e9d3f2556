// `kiln report --db F --html out.html [--bench results.json]`: the tuning
// database (and a `kiln bench --json` result) as an HTML page (report_html.h).
#pragma once

#include "cli/commands.h"

namespace kiln::cli {

Handler add_report_command(CLI::App& app);

}  // namespace kiln::cli
