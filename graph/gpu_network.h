// A network's kernels on a GPU (`kiln run-model --target cuda`): the
// distinct kernels the executor lowered with lower_gpu, compiled for the
// first GPU (NVRTC's cubins, or under KILN_GPU_IMAGE=emulated the stand-in
// driver's images, as for tuning), its tensors in device memory, and its
// steps launched in order on the default stream.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "compute/function.h"
#include "runtime/cuda_driver.h"
#include "runtime/temp_dir.h"
#include "schedule/gpu_limits.h"

namespace kiln::graph {

class GpuNetwork {
 public:
  // Makes the first GPU's primary context current. user_error when there is
  // no GPU or driver, or when the GPU is not the target's architecture: made
  // before anything is lowered, so that such a machine is told at once.
  explicit GpuNetwork(const Target& target);
  // Builds every kernel of `funcs` (lowered with lower_gpu for `limits`) and
  // loads them; user_error when one does not compile.
  void load(const GpuLimits& limits, const std::vector<LoweredFunc>& funcs);
  ~GpuNetwork();
  GpuNetwork(const GpuNetwork&) = delete;
  GpuNetwork& operator=(const GpuNetwork&) = delete;

  const rt::cuda::DeviceInfo& device() const { return ctx_->device(); }

  // Device memory: a new buffer's index, its address, copies.
  int allocate(size_t bytes);
  uint64_t address(int buffer) const;
  void upload(int buffer, const void* host, size_t bytes);
  void download(int buffer, void* host, size_t bytes) const;

  // The network's steps in order: the function `kernel` (a name of one of
  // `funcs`) on these device addresses (its arguments in order).
  void add_step(const std::string& kernel, std::vector<uint64_t> args);
  // Issues every step on the default stream; does not wait.
  void enqueue() const;
  // Issues every step and waits for them.
  void run();
  // The whole network, or one step alone, timed with CUDA events
  // (rt::cuda::time_enqueued, the L2 flushed when the options say so).
  rt::TimeResult time(const rt::TimeOptions& options) const;
  rt::TimeResult time_step(size_t step, const rt::TimeOptions& options) const;

 private:
  struct Step {
    const std::vector<rt::cuda::KernelLaunch>* launches;
    std::vector<uint64_t> args;
  };
  // Declared first: destroyed after the modules and buffers that live in it.
  std::unique_ptr<rt::cuda::Context> ctx_;
  std::optional<rt::TempDir> image_dir_;  // the emulated images' shared objects (made by load)
  std::vector<std::unique_ptr<rt::cuda::CudaModule>> modules_;
  std::map<std::string, std::vector<rt::cuda::KernelLaunch>> launches_;
  std::vector<rt::cuda::DeviceBuffer> buffers_;
  std::vector<Step> steps_;
};

}  // namespace kiln::graph
