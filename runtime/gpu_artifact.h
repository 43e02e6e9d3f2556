// A built GPU candidate, as a file: the image (a cubin) and how to launch
// each of its kernels. A builder writes one for a cuda candidate; a
// measuring worker (locally, or in a device server that received its bytes)
// reads it and runs it through the CUDA driver (runtime/cuda_driver.h).
// Files end in ".kgpu"; other artifacts are host shared objects.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "runtime/cuda_driver.h"

namespace kiln {

struct GpuArtifactKernel {
  std::string name;
  std::array<unsigned, 3> grid{{1, 1, 1}};
  std::array<unsigned, 3> block{{1, 1, 1}};
  unsigned shared_bytes = 0;
  std::vector<int> arg_indices;  // parameter i is the function's argument arg_indices[i]
  unsigned dynamic_shared_bytes = 0;  // of shared_bytes, what the launch asks for dynamically
  // Empty, or per parameter: where it has a rank, the parameter is that
  // tensor map of its argument (runtime/tensor_map.h), encoded at launch.
  std::vector<rt::cuda::TensorMapSpec> tensor_maps{};
};

struct GpuArtifact {
  std::string arch;  // "sm_90"
  std::vector<GpuArtifactKernel> kernels;
  std::vector<char> image;
};

constexpr const char* kGpuArtifactSuffix = ".kgpu";
// By the file name.
bool is_gpu_artifact(const std::string& path);
// By the content (the bytes a device server receives).
bool looks_like_gpu_artifact(const std::string& bytes);

// The launches of `kernels`, their functions looked up in `module` (the
// artifact's image loaded in the current context).
std::vector<rt::cuda::KernelLaunch> kernel_launches(const rt::cuda::CudaModule& module,
                                                    const std::vector<GpuArtifactKernel>& kernels);

// user_error when the file cannot be written, or read back as an artifact.
void write_gpu_artifact(const GpuArtifact& a, const std::string& path);
GpuArtifact read_gpu_artifact(const std::string& path);

}  // namespace kiln
