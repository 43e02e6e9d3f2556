// `kiln lower WORKLOAD [--db F] [--config JSON]`: prints the lowered loop IR
// of the schedule: the template's default config, the database's best, with
// the knobs given overriding either.
#include <iostream>

#include "cli/commands.h"
#include "tasks/kernel_build.h"
#include "compute/printer.h"
#include "schedule/lower.h"

namespace kiln::cli {

Handler add_lower_command(CLI::App& app) {
  auto* sub = app.add_subcommand("lower", "print the lowered loop IR of a workload's schedule");
  auto workload = std::make_shared<std::string>();
  auto target = std::make_shared<std::string>();
  auto db = std::make_shared<std::string>();
  auto config = std::make_shared<std::string>();
  auto nest_only = std::make_shared<bool>(false);
  sub->add_option("workload", *workload, "e.g. matmul:M=1024,N=1024,K=1024")->required();
  sub->add_option("--target", *target, "target string (default: this machine)");
  sub->add_option("--db", *db, "use the best tuned config of this database (else the template's default)");
  sub->add_option("--config", *config,
                  "knob values as a JSON object; knobs not named keep the database's or the default's values");
  sub->add_flag("--loop-nest", *nest_only, "print the loop nest before any lowering pass");
  return [=]() {
    BuiltKernel k = build_kernel(*workload, *target, *db, *config);
    if (*nest_only) {
      std::cout << to_string(lower_to_loop_nest(*k.scheduled.schedule, k.scheduled.args, nullptr)) << "\n";
    } else {
      std::cout << to_string(k.func) << "\n";
    }
    return 0;
  };
}

}  // namespace kiln::cli
