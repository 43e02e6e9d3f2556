// `kiln lib --model`: a network compiled into a C library with one entry
// point, NAME_run(inputs..., outputs...). The kernels are the executor's
// (graph/executor.h: each node with its best tuned record, else its default
// config; the generic schedule for the rest), all in one object; the
// weights (every constant a kernel reads) are embedded in the library; the
// C glue copies the inputs into an aligned workspace, runs the kernels in
// order on the workspace's shared buffers (the executor's memory plan) and
// copies the outputs out. The library carries kiln lib's C thread pool.
//
// Files written to the output directory (as kiln lib writes them):
//   libNAME.a, libNAME.so, NAME.h, NAME.json (inputs, outputs, kernels),
//   NAMEConfig.cmake, NAME.pc
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kiln::graph {

struct ModelLibraryOptions {
  std::string model;
  std::map<std::string, std::vector<int64_t>> input_shapes;
  std::string db;       // tuned records ("" for none)
  std::string out_dir;
  std::string name = "kiln_model";
};

struct ModelLibraryResult {
  std::vector<std::string> files;
  int kernels = 0, tuned = 0, steps = 0;
  int64_t workspace_bytes = 0, weight_bytes = 0;
  std::string signature;  // the C declaration of NAME_run
};

// user_error as kiln run-model and kiln lib report them (bad model, inputs,
// name, output directory, database; a missing C compiler).
ModelLibraryResult build_model_library(const ModelLibraryOptions& options);

}  // namespace kiln::graph
