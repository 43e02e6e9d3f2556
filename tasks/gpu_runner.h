// Running a built cuda kernel on a GPU through kiln's driver runtime
// (runtime/cuda_driver.h): the device's limits as GpuLimits, the kernels
// loaded from a cubin, the function's arguments in device memory, launches
// and timing. A Context must be current on the calling thread.
#pragma once

#include <vector>

#include "codegen/cuda_module.h"
#include "codegen/target.h"
#include "compute/function.h"
#include "runtime/cuda_driver.h"
#include "runtime/ndarray.h"
#include "schedule/gpu_limits.h"

namespace kiln {

// The limits of the device, for its architecture `arch` (the target's: the
// device's own when they agree); source "device".
GpuLimits gpu_limits_from_device(const rt::cuda::DeviceInfo& device, const std::string& arch);

// user_error unless kernels built for the cuda `target` run on `device`:
// the same architecture (sm_90a on an sm_90 GPU too). A GPU whose
// architecture kiln does not support is refused as such ("GPU 0 (name) is
// sm_100, an architecture kiln does not support (kiln supports ...)"),
// whatever the target; otherwise a mismatch says "target '...' is not the
// architecture of GPU 0 (name, sm_XX)" and which target to give. What kiln
// run, bench and a local tune check before they build anything.
void check_target_runs_on(const rt::cuda::DeviceInfo& device, const Target& target);

class GpuKernelRunner {
 public:
  // `image`: the kernels of `src` compiled for the current device (a cubin
  // from NVRTC); `args`: the lowered function's arguments.
  GpuKernelRunner(const rt::cuda::Context& ctx, const CudaSource& src, const std::vector<BufferArg>& args,
                  const std::vector<char>& image);

  // Copies `arrays` (host copies of every argument, in order) to the device,
  // runs the kernels, waits for them, and copies the arguments from
  // `first_output` on back into `arrays`.
  void run(std::vector<rt::NDArray>& arrays, size_t first_output);
  // Times the kernels on the data on the device (rt::cuda::time_launches).
  rt::TimeResult time(const rt::TimeOptions& options);
  // Each argument's device memory (a CUdeviceptr), in the function's order.
  const std::vector<uint64_t>& device_pointers() const { return pointers_; }

 private:
  int64_t l2_bytes_;
  rt::cuda::CudaModule module_;
  std::vector<rt::cuda::KernelLaunch> launches_;
  std::vector<rt::cuda::DeviceBuffer> buffers_;
  std::vector<uint64_t> pointers_;
};

}  // namespace kiln
