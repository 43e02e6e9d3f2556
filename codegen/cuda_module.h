// What the CUDA backend produces for one lowered function: CUDA C source
// (kiln's device prelude, then one __global__ kernel per launch) and, per
// kernel, how the host launches it. The same source is compiled by NVRTC for
// a GPU (codegen/nvrtc.h) or by the host C++ compiler against the emulation
// header (codegen/cuda_emulation.h), so both run exactly the same code.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tensor_map.h"

namespace kiln {

// One kernel launch of a function, in the order the host issues them.
struct CudaKernelLaunch {
  std::string kernel;                       // the extern "C" __global__ function's name in the source
  std::array<int64_t, 3> grid{{1, 1, 1}};   // blocks per grid (x, y, z)
  std::array<int64_t, 3> block{{1, 1, 1}};  // threads per block (x, y, z)
  int64_t shared_bytes = 0;                 // the block's shared memory
  // How much of it the launch asks for as dynamic shared memory (0, or all
  // of it when it is past the 48 KiB a kernel may declare statically); the
  // kernel must be opted in to that much before it is launched.
  int64_t dynamic_shared_bytes = 0;
  // The kernel's parameters in order: their C type ("float*") and the index
  // of the function argument (packed args, runtime/c_api.h) passed for it:
  // its pointer, or where tensor_map has a rank (c_type "kiln_tensor_map"),
  // that tensor map of it, encoded at launch (runtime/tensor_map.h).
  struct Param {
    std::string c_type;
    int arg_index;
    rt::cuda::TensorMapSpec tensor_map{};
  };
  std::vector<Param> params;
};

struct CudaSource {
  std::string function;  // the lowered function's name (the packed entry point)
  std::string code;      // complete CUDA C: prelude + kernels
  std::vector<CudaKernelLaunch> launches;
};

}  // namespace kiln
