#include "cli/report_command.h"

#include <iostream>

#include "bench/report_writer.h"

namespace kiln::cli {

Handler add_report_command(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "report",
      "write one self-contained HTML page of a tuning database, bench results and model tuning curves, with charts");
  auto o = std::make_shared<ReportFiles>();
  sub->add_option("--db", o->db, "tuning database (opened read-only)");
  sub->add_option("--html", o->html, "the HTML file to write")->required();
  sub->add_option("--bench", o->benches, "a `kiln bench --json` result to include (repeatable)");
  sub->add_option("--model-curve", o->model_curves,
                  "a `kiln tune-model --curve` file: its estimated latency against trials (repeatable)");
  return [o]() {
    ReportSummary s = write_report(*o, /*running=*/false);
    std::cout << "wrote " << o->html << ": " << s.charts << " charts, " << (s.bytes + 1023) / 1024 << " KiB\n";
    return 0;
  };
}

}  // namespace kiln::cli
