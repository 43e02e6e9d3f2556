// The C parts of a cuda kernel library (`kiln lib --target cuda`),
// generated as source text:
//   NAME.h    the public header (plain C, also valid C++);
//   NAME.c    the CUDA driver through dlopen (cuda_library_runtime_c.h), the
//             kernels' images as byte arrays, one named entry point per
//             tuned kernel (its launches, with the dimensions it was tuned
//             with) and one dispatcher per op family: the tuned kernel for
//             an exact shape, else a fallback kernel (cuda_fallback_kernels.h).
//
// The op families and their dispatchers: cuda_library_families.h (f32,
// f16, bf16; device pointers; `stream` is a CUstream, NULL for the default
// stream).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "library/cuda_library_families.h"
#include "runtime/tensor_map.h"

namespace kiln {

struct CudaLibraryLaunch {
  int function = 0;  // index into CudaLibrarySource::functions
  std::array<int64_t, 3> grid{{1, 1, 1}}, block{{1, 1, 1}};
  int64_t shared_bytes = 0;
  int64_t dynamic_shared_bytes = 0;  // of shared_bytes, what the launch asks for dynamically
  std::vector<int> args;             // parameter i is the entry point's buffer args[i]
  // Empty, or per parameter: where it has a rank, that tensor map of the buffer, encoded at launch.
  std::vector<rt::cuda::TensorMapSpec> tensor_maps{};
};

struct CudaLibraryKernel {
  std::string family;
  std::string dtype;                     // f32, f16, bf16
  std::map<std::string, int64_t> shape;  // the op's integer parameters
  std::string entry;                     // NAME_matmul_f32_M32_N48_K40
  std::vector<CudaLibraryLaunch> launches;
  std::string workload;  // for comments
  double gflops = 0;
  std::string tuned_on;
};

struct CudaLibrarySource {
  std::string name;
  std::string arch;  // "sm_90"
  std::string kiln_version;
  bool emulated = false;                  // images for kiln's stand-in driver (tests only)
  std::vector<std::vector<char>> images;  // cubins (or emulated images); the fallback image included
  struct Function {
    int image;
    std::string name;
    int64_t dynamic_shared_bytes = 0;  // what the kernel is opted in to when the library loads
  };
  std::vector<Function> functions;  // every kernel the library launches
  int fallback_functions = 0;       // index of the first fallback kernel (cuda_fallback_kernels() order)
  std::vector<CudaLibraryKernel> kernels;
};

std::string cuda_library_header(const CudaLibrarySource& lib);
// The header declarations of the runtime's device memory helpers
// (NAME_device_alloc ... NAME_synchronize), which every cuda library has.
std::string cuda_device_memory_declarations(const std::string& name);
// The driver part of a library's C source, shared with network libraries
// (graph/model_library.h): the prelude, the images as byte arrays, the
// function table and the runtime (cuda_library_runtime_c.h), for `name`
// (its header NAME.h defines NAME_OK and the NAME_ERROR_* codes) and `arch`
// ("sm_90", "sm_90a").
std::string cuda_driver_c_source(const std::string& name, const std::string& arch, bool emulated,
                                 const std::vector<std::vector<char>>& images,
                                 const std::vector<CudaLibrarySource::Function>& functions);
// One element of a `struct launch` array (cuda_library_runtime_c.h):
// {function, {grid}, {block}, shared, dynamic, count, {args}[, {maps}]}.
std::string launch_initializer(int function, const std::array<int64_t, 3>& grid, const std::array<int64_t, 3>& block,
                               int64_t shared_bytes, int64_t dynamic_shared_bytes, const std::vector<int>& args,
                               const std::vector<rt::cuda::TensorMapSpec>& tensor_maps);
// NAME.c; includes "NAME.h".
std::string cuda_library_c_source(const CudaLibrarySource& lib);

}  // namespace kiln
