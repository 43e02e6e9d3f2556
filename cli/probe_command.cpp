// `kiln probe [--db F]`: measures this machine's fp32 peak and memory
// bandwidth with kiln's own kernels (bench/machine_probe.h), prints them,
// and stores them in the database (replacing earlier figures of the target)
// for kiln report's roofline and percentages of peak.
#include <iomanip>
#include <iostream>

#include "bench/machine_probe.h"
#include "cli/commands.h"

namespace kiln::cli {

Handler add_probe_command(CLI::App& app) {
  auto* sub = app.add_subcommand("probe", "measure this machine's fp32 peak and memory bandwidth (kiln report's roof)");
  auto db = std::make_shared<std::string>();
  sub->add_option("--db", *db, "store the figures in this tuning database");
  return [db]() {
    Target target = Target::host();
    MachineFigures m = probe_machine(target);
    std::cout << m.cpu << ", " << m.threads << " threads\n  fp32 peak " << std::fixed << std::setprecision(1)
              << m.peak_gflops << " GFLOP/s\n  bandwidth " << m.bandwidth_gbs << " GB/s\n  (" << std::setprecision(2)
              << m.seconds << " s, target " << target.str() << ")\n";
    if (!db->empty()) {
      Database::open(*db)->put_machine(machine_record(target, m));
      std::cout << "stored in " << *db << "\n";
    }
    return 0;
  };
}

}  // namespace kiln::cli
