// The kiln executable: wires the subcommands. Bad input of any kind (a
// workload string, a target, a schedule) exits with code 2 and a message;
// a kiln bug exits with code 3.
#include <iostream>

#include "cli/bench_command.h"
#include "cli/commands.h"
#include "cli/lib_command.h"
#include "cli/pool_commands.h"
#include "cli/report_command.h"
#include "base/error.h"
#include "base/log.h"
#include "runtime/cuda_driver.h"
#include "runtime/module.h"

int main(int argc, char** argv) {
  CLI::App app{"kiln: an autotuning compiler for tensor operators"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kiln ") + KILN_VERSION);
  std::vector<std::pair<CLI::App*, kiln::cli::Handler>> handlers;
  auto add = [&](kiln::cli::Handler h) { handlers.emplace_back(app.get_subcommands({}).back(), std::move(h)); };
  add(kiln::cli::add_lower_command(app));
  add(kiln::cli::add_source_command(app));
  add(kiln::cli::add_run_command(app));
  add(kiln::cli::add_run_model_command(app));
  add(kiln::cli::add_tune_model_command(app));
  add(kiln::cli::add_ops_command(app));
  add(kiln::cli::add_tune_command(app));
  add(kiln::cli::add_show_command(app));
  add(kiln::cli::add_export_command(app));
  add(kiln::cli::add_import_command(app));
  add(kiln::cli::add_bench_command(app));
  add(kiln::cli::add_report_command(app));
  add(kiln::cli::add_probe_command(app));
  add(kiln::cli::add_tracker_command(app));
  add(kiln::cli::add_serve_command(app));
  add(kiln::cli::add_pool_command(app));
  add(kiln::cli::add_lib_command(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    kiln::init_logging_from_env();
    for (auto& [sub, handler] : handlers)
      if (sub->parsed()) return handler();
  } catch (const kiln::UserError& e) {
    std::cerr << "kiln: error: " << e.what() << "\n";
    return 2;
  } catch (const kiln::rt::LoadError& e) {
    std::cerr << "kiln: error: could not load the compiled kernel: " << e.what() << "\n";
    return 1;
  } catch (const kiln::rt::cuda::CudaError& e) {
    std::cerr << "kiln: error: the GPU failed: " << e.what() << "\n";
    return 1;
  } catch (const kiln::InternalError& e) {
    std::cerr << "kiln: " << e.what() << "\n(this is a bug in kiln; please report it)\n";
    return 3;
  }
  return 0;
}
