// The C parts of a cuda kernel library (`kiln lib --target cuda`),
// generated as source text:
//   NAME.h    the public header (plain C, also valid C++);
//   NAME.c    the CUDA driver through dlopen (cuda_library_runtime_c.h), the
//             kernels' images as byte arrays, one named entry point per
//             tuned kernel (its launches, with the dimensions it was tuned
//             with) and one dispatcher per op family: the tuned kernel for
//             an exact shape, else a fallback kernel (cuda_fallback_kernels.h).
//
// Op families (f32; device pointers; `stream` is a CUstream, NULL for the
// default stream; the epilogue flags bias, relu and gelu name the family):
//   NAME_matmul[_bias][_relu|_gelu]_f32(M, N, K, A, B, [bias,] C, stream)
//   NAME_dense[_bias][_relu|_gelu]_f32(N, IN, OUT, data, weight, [bias,] out, stream)
//   NAME_batch_matmul_f32(batch, M, N, K, A, B, C, stream)
//   NAME_softmax_f32(M, N, data, out, stream)
//   NAME_layer_norm_f32(M, N, data, gamma, beta, out, stream)
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/op_registry.h"

namespace kiln {

// An op family of cuda libraries, as the header declares it.
struct CudaFamily {
  std::string name;                      // "matmul_bias_gelu": the dispatcher is NAME_<name>_f32
  std::string op;                        // "matmul"
  std::vector<std::string> sizes;        // the dispatcher's size parameters, e.g. {"batch", "M", "N", "K"}
  std::vector<std::string> size_params;  // the op parameter of each, e.g. {"B", "M", "N", "K"}
  std::vector<std::string> buffers;      // inputs then the output, in the kernel's argument order
  std::string summary;                   // what it computes, for the header
};

// The family of a built op, or "" with *why set when cuda libraries do not
// cover it (an op without a fallback, another dtype, transposed operands).
std::string cuda_family_name(const OpInstance& op, std::string* why);
CudaFamily cuda_family(const std::string& name);
// What cuda libraries cover, for messages.
std::string cuda_library_supported_text();

struct CudaLibraryLaunch {
  int function = 0;  // index into CudaLibrarySource::functions
  std::array<int64_t, 3> grid{{1, 1, 1}}, block{{1, 1, 1}};
  int64_t shared_bytes = 0;
  std::vector<int> args;  // parameter i is the entry point's buffer args[i]
};

struct CudaLibraryKernel {
  std::string family;
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
  };
  std::vector<Function> functions;  // every kernel the library launches
  int fallback_functions = 0;       // index of the first fallback kernel (cuda_fallback_kernels() order)
  std::vector<CudaLibraryKernel> kernels;
};

std::string cuda_library_header(const CudaLibrarySource& lib);
// NAME.c; includes "NAME.h".
std::string cuda_library_c_source(const CudaLibrarySource& lib);

}  // namespace kiln
