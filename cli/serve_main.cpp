// kiln-serve: a device of the pool without the compiler. It links runtime/
// and the server side of rpc/ only (no LLVM, XGBoost or benchmark
// baselines), so that it runs on a farm machine or a GPU machine that has
// none of them; CMake keeps it that way (see docs/ARCHITECTURE.md).
#include <iostream>

#include "base/error.h"
#include "base/log.h"
#include "cli/serve_command.h"

int main(int argc, char** argv) {
  CLI::App app{"kiln-serve: serve this machine as a device of a kiln pool (measures candidates)"};
  app.set_version_flag("--version", std::string("kiln-serve ") + KILN_VERSION);
  kiln::cli::ServeCommandOptions options;
  kiln::cli::add_serve_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    kiln::init_logging_from_env();
    return kiln::cli::run_serve(options, "kiln-serve");
  } catch (const kiln::UserError& e) {
    std::cerr << "kiln-serve: error: " << e.what() << "\n";
    return 2;
  } catch (const kiln::InternalError& e) {
    std::cerr << "kiln-serve: " << e.what() << "\n(this is a bug in kiln; please report it)\n";
    return 3;
  }
}
