// `kiln lib --model`: a network compiled into a C library with one entry
// point, NAME_run(inputs..., outputs...). The kernels are the executor's
// (graph/executor.h: each node with its best tuned record, else its default
// config; the generic schedule for the rest), all in one object; the
// weights (every constant a kernel reads) are embedded in the library; the
// C glue copies the inputs into an aligned workspace, runs the kernels in
// order on the workspace's shared buffers (the executor's memory plan) and
// copies the outputs out. The library carries kiln lib's C thread pool.
//
// For a cuda target (graph/model_library_cuda.h) the kernels are the
// executor's GPU kernels as cubins (NVRTC) embedded in the library's C,
// which opens the CUDA driver with dlopen as `kiln lib --target cuda`
// libraries do; NAME_run takes host buffers, keeps the weights in device
// memory from the first call, and runs the steps on the default stream.
// KILN_GPU_IMAGE=emulated makes a test build for kiln's stand-in driver.
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
  std::string target;  // "" this machine, or a cuda target
};

struct ModelLibraryResult {
  std::vector<std::string> files;
  int kernels = 0, tuned = 0, steps = 0;
  int64_t workspace_bytes = 0, weight_bytes = 0;
  std::string signature;  // the C declaration of NAME_run
  bool gpu = false;       // a cuda library
  bool emulated = false;  // a cuda test build (KILN_GPU_IMAGE=emulated)
};

// user_error as kiln run-model and kiln lib report them (bad model, inputs,
// name, target, output directory, database; a missing C compiler, or for
// a cuda target a missing NVRTC).
ModelLibraryResult build_model_library(const ModelLibraryOptions& options);

}  // namespace kiln::graph
