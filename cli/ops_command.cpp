// `kiln ops`: every operator with its parameters and their meaning.
#include <iomanip>
#include <iostream>

#include "cli/commands.h"
#include "kernels/op_registry.h"

namespace kiln::cli {

Handler add_ops_command(CLI::App& app) {
  app.add_subcommand("ops", "list the operators and their workload parameters");
  return []() {
    for (auto& op : op_registry()) {
      std::cout << op.name << ": " << op.summary << "\n";
      for (auto& p : op.params) {
        std::cout << "  " << std::left << std::setw(10) << p.name << p.meaning;
        if (!p.default_value.empty()) std::cout << " (default " << p.default_value << ")";
        std::cout << "\n";
      }
    }
    return 0;
  };
}

}  // namespace kiln::cli
