// Tuning-database commands: `kiln show [--db F] [WORKLOAD]` prints the best
// record per workload; `kiln export --db D --jsonl F` and
// `kiln import --db D F` move records as JSON lines.
#include <iomanip>
#include <iostream>

#include "cli/commands.h"
#include "codegen/target.h"
#include "base/error.h"
#include "kernels/op_registry.h"
#include "tuner/database.h"

namespace kiln::cli {

namespace {

// Accepts a workload string in any spelling; matches records by canonical form.
std::string canonical_workload(const std::string& w) { return build_workload(w).canonical; }

}  // namespace

Handler add_show_command(CLI::App& app) {
  auto* sub = app.add_subcommand("show", "print the best tuned config of each workload in a database");
  auto db_path = std::make_shared<std::string>("kiln.db");
  auto workload = std::make_shared<std::string>();
  sub->add_option("--db", *db_path, "tuning database (default kiln.db)");
  sub->add_option("workload", *workload, "only this workload");
  return [=]() {
    auto db = Database::open_for_reading(*db_path);
    std::string only = workload->empty() ? "" : canonical_workload(*workload);
    int shown = 0;
    for (const std::string& key : db->task_keys()) {
      auto recs = db->records(key);
      if (recs.empty()) continue;
      if (!only.empty() && recs[0].workload != only) continue;
      auto best = db->best(key);
      int errors = 0;
      for (auto& r : recs) errors += r.error != ErrorKind::kNone;
      std::cout << recs[0].workload << "\n  target " << recs[0].target << "\n  records " << recs.size() << ", errors "
                << errors << "\n";
      if (best)
        std::cout << "  best " << std::fixed << std::setprecision(1) << best->gflops << " GFLOP/s ("
                  << std::setprecision(4) << best->median_ms << " ms): " << best->config.dump() << "\n";
      if (best)
        for (const KernelResources& k : best->resources)
          std::cout << "  kernel " << k.kernel << ": " << k.registers << " registers, " << k.spill_store_bytes
                    << " bytes spill stores, " << k.spill_load_bytes << " bytes spill loads, " << k.shared_bytes
                    << " bytes shared memory\n";
      if (!best)
        std::cout << "  best: none ran correctly\n";
      ++shown;
    }
    user_check(shown > 0 || only.empty()) << "no records of '" << only << "' in " << *db_path;
    if (shown == 0) std::cout << "no records in " << *db_path << "\n";
    return 0;
  };
}

Handler add_export_command(CLI::App& app) {
  auto* sub = app.add_subcommand("export", "write every record of a database as JSON lines");
  auto db_path = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  sub->add_option("--db", *db_path, "tuning database")->required();
  sub->add_option("--jsonl", *out, "output file")->required();
  return [=]() {
    auto db = Database::open_for_reading(*db_path);
    int64_t n = db->export_jsonl(*out);
    std::cerr << "exported " << n << " records to " << *out << "\n";
    return 0;
  };
}

Handler add_import_command(CLI::App& app) {
  auto* sub = app.add_subcommand("import", "read JSON-lines records into a database");
  auto db_path = std::make_shared<std::string>();
  auto in = std::make_shared<std::string>();
  sub->add_option("--db", *db_path, "tuning database (created when missing)")->required();
  sub->add_option("file", *in, "JSON-lines file written by kiln export")->required();
  return [=]() {
    auto db = Database::open(*db_path);
    auto stats = db->import_jsonl(*in);
    std::cerr << "imported " << stats.imported << " records, skipped " << stats.duplicates << " duplicates\n";
    return 0;
  };
}

}  // namespace kiln::cli
