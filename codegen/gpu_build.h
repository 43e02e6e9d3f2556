// Building a cuda candidate for measurement: a lowered GPU function printed
// as CUDA C, compiled to an image, and written as a GPU artifact
// (runtime/gpu_artifact.h) that a measuring worker runs through the driver.
//
// The image is NVRTC's cubin for the target's architecture. With
// KILN_GPU_IMAGE=emulated it is instead the CUDA C compiled against the
// emulation header, for the stand-in CUDA driver kiln's tests use
// (tests/support/fake_libcuda.cpp): timings are then the CPU's.
#pragma once

#include <string>
#include <vector>

#include "codegen/nvrtc.h"
#include "codegen/target.h"
#include "codegen/cuda_module.h"
#include "compute/function.h"
#include "runtime/gpu_artifact.h"

namespace kiln {

struct GpuBuild {
  std::string path;                             // the .kgpu file
  std::vector<CudaKernelResources> resources;   // per kernel, from ptxas (empty for emulated images)
};

// Whether KILN_GPU_IMAGE asks for emulated images; user_error for a value
// other than "cubin" or "emulated".
bool gpu_images_emulated();

// The image of `src` for the stand-in driver (KILN_GPU_IMAGE=emulated): the
// emulated module built in `dir`, named after kEmulatedImagePrefix.
std::vector<char> emulated_gpu_image(const CudaSource& src, const std::string& dir);

// The image of `src` for the GPUs of architecture `arch`: NVRTC's cubin
// (with each kernel's resources in `resources` when given), or under
// KILN_GPU_IMAGE=emulated the stand-in's image built in `dir`.
std::vector<char> gpu_image(const CudaSource& src, const std::string& arch, const std::string& dir,
                            std::vector<CudaKernelResources>* resources = nullptr);

// gpu_image of each source, built on all cores (NVRTC, or the host compiler
// for emulated images, takes a second or so per kernel); the first failure
// is rethrown.
std::vector<std::vector<char>> gpu_images(const std::vector<CudaSource>& srcs, const std::string& arch,
                                          const std::string& dir);

// How to launch each kernel of `src` (its launch dimensions and arguments).
std::vector<GpuArtifactKernel> artifact_kernels(const CudaSource& src);

// user_error when the source does not compile or the artifact cannot be written.
GpuBuild build_gpu_artifact(const LoweredFunc& f, const Target& target, const std::string& out_dir);

}  // namespace kiln
