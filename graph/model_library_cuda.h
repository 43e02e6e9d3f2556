// `kiln lib --model MODEL --target cuda` (see model_library.h): the
// executor's GPU kernels compiled into images (NVRTC's cubins, or the
// stand-in driver's emulated modules under KILN_GPU_IMAGE=emulated) and
// embedded in C that opens the CUDA driver with dlopen
// (library/cuda_library_runtime_c.h, as kiln lib --target cuda). The first
// call (or NAME_init) loads the kernels into device 0's primary context and
// copies the weights into device memory, which stays until NAME_unload.
// Each NAME_run allocates its device workspace (inputs and the executor's
// shared buffers), copies the host inputs in, launches the steps on the
// default stream and copies the outputs back.
#pragma once

#include "graph/executor.h"
#include "graph/model_library.h"
#include "graph/node_schedules.h"

namespace kiln::graph {

// user_error when the host C compiler, or NVRTC for cubins, is missing.
void check_cuda_model_library_tools();

ModelLibraryResult build_cuda_model_library(const ModelLibraryOptions& options, const Executor& ex,
                                            const NodeTarget& target);

}  // namespace kiln::graph
