// `kiln lib --db F --out DIR [--name NAME] [--target T] [--workloads W... | --all]`
// `kiln lib --model MODEL [--input NAME=SHAPE] [--db F] --out DIR [--name NAME] [--target cuda]`
// (graph/model_library.h) (a cuda target builds a library of CUDA kernels: library/cuda_library_builder.h)
#include "cli/lib_command.h"

#include <iomanip>
#include <iostream>
#include <memory>

#include "base/error.h"
#include "graph/model_library.h"
#include "graph/onnx_import.h"
#include "library/library_builder.h"

namespace kiln::cli {

Handler add_lib_command(CLI::App& app) {
  auto* sub = app.add_subcommand("lib", "build a static and shared library of tuned kernels from a tuning database");
  auto o = std::make_shared<LibraryOptions>();
  auto all = std::make_shared<bool>(false);
  auto model = std::make_shared<std::string>();
  auto inputs = std::make_shared<std::vector<std::string>>();
  sub->add_option("--db", o->db_path, "tuning database (with --model: optional, the best config of each kernel)");
  sub->add_option("--model", *model,
                  "an ONNX model: one NAME_run(inputs..., outputs...) running the whole network, weights embedded");
  sub->add_option("--input", *inputs, "with --model: NAME=SHAPE for an input with symbolic extents");
  sub->add_option("--out", o->out_dir, "output directory (created when missing)")->required();
  auto* name = sub->add_option("--name", o->name,
                                "library name: symbol prefix, libNAME.a, NAME.h (default kiln_kernels; kiln_model with --model)");
  sub->add_option("--target", o->target,
                  "target string (default: this machine), e.g. \"llvm -mtriple=aarch64-linux-gnu\", or \"cuda "
                  "-arch=sm_80\" for a library of CUDA kernels (with --model: this machine or a cuda target)");
  auto* workloads = sub->add_option("--workloads", o->workloads, "the workloads to include (default: --all)");
  sub->add_flag("--all", *all, "every tuned workload of the database (the default)")->excludes(workloads);
  return [=]() {
    if (!model->empty()) {
      user_check(o->workloads.empty() && !*all) << "--workloads and --all select kernels of a database; --model takes the model's";
      graph::ModelLibraryOptions mo;
      mo.model = *model;
      mo.input_shapes = graph::parse_input_options(*inputs);
      mo.db = o->db_path;
      mo.out_dir = o->out_dir;
      mo.target = o->target;
      if (name->count() > 0) mo.name = o->name;
      const graph::ModelLibraryResult r = graph::build_model_library(mo);
      if (r.emulated)
        std::cerr
            << "kiln: warning: KILN_GPU_IMAGE=emulated: the kernels are emulated modules for kiln's stand-in CUDA "
               "driver; this library is a test build and runs on no GPU\n";
      std::cout << "library " << mo.name << ": " << r.signature << "\n  " << r.steps << " kernel calls (" << r.kernels
                << " distinct kernels, " << r.tuned << " tuned), " << r.weight_bytes << " bytes of weights embedded, "
                << r.workspace_bytes << "-byte " << (r.gpu ? "device " : "") << "workspace per call\n";
      for (const std::string& f : r.files) std::cout << "wrote " << f << "\n";
      return 0;
    }
    user_check(!o->db_path.empty()) << "kiln lib needs --db (tuned kernels) or --model (a network)";
    LibraryResult r = build_library(*o);
    for (const std::string& w : r.warnings) std::cerr << "kiln: warning: " << w << "\n";
    if (r.emulated)
      std::cerr << "kiln: warning: KILN_GPU_IMAGE=emulated: the kernels are emulated modules for kiln's stand-in CUDA "
                   "driver; this library is a test build and runs on no GPU\n";
    std::cout << "library " << o->name << " for " << r.target.str() << "\n";
    for (const LibraryKernel& k : r.kernels) {
      std::cout << "  " << k.entry << "  " << std::fixed << std::setprecision(1) << k.record.gflops << " GFLOP/s tuned";
      if (k.record.target != r.target.str()) std::cout << " on " << k.record.target;
      std::cout << " (record " << k.record.id << ")\n";
    }
    for (const std::string& f : r.files) std::cout << "wrote " << f << "\n";
    return 0;
  };
}

}  // namespace kiln::cli
