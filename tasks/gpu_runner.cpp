#include "tasks/gpu_runner.h"

#include "base/error.h"
#include "codegen/gpu_build.h"
#include "runtime/gpu_artifact.h"

namespace kiln {

GpuLimits gpu_limits_from_device(const rt::cuda::DeviceInfo& d, const std::string& arch) {
  GpuLimits g = gpu_limits_for_arch(arch);
  g.warp_size = d.warp_size;
  g.max_threads_per_block = d.max_threads_per_block;
  g.max_block_dim = d.max_block_dim;
  g.max_grid_dim = d.max_grid_dim;
  g.max_shared_static_per_block = d.shared_per_block;
  g.max_shared_optin_per_block = d.shared_optin_per_block;
  g.max_shared_per_sm = d.shared_per_sm;
  g.registers_per_sm = d.registers_per_sm;
  g.max_threads_per_sm = d.max_threads_per_sm;
  g.max_blocks_per_sm = d.max_blocks_per_sm;
  g.sm_count = d.sm_count;
  g.source = "device";
  return g;
}

void check_target_runs_on(const rt::cuda::DeviceInfo& d, const Target& target) {
  internal_assert(target.is_cuda()) << "check_target_runs_on(" << target.str() << ")";
  const std::string gpu = "GPU " + std::to_string(d.ordinal) + " (" + d.name;
  user_check(is_known_gpu_arch(d.arch()))
      << gpu << ") is " << d.arch() << ", an architecture kiln does not support (kiln supports " << known_gpu_archs()
      << "), so kiln cannot build kernels that run on it; use a GPU of one of those "
      << "architectures, here or on a device pool (kiln tune --pool), or run a workload's CUDA C on this CPU with "
         "`kiln run WORKLOAD --target cuda --emulate --check`";
  user_check(d.arch() == target.arch || d.arch() + "a" == target.arch)
      << "target '" << target.str() << "' is not the architecture of " << gpu << ", " << d.arch()
      << "); give --target \"cuda -arch=" << d.arch() << "\" or plain cuda (the first GPU's architecture)";
}

GpuKernelRunner::GpuKernelRunner(const rt::cuda::Context& ctx, const CudaSource& src,
                                 const std::vector<BufferArg>& args, const std::vector<char>& image)
    : l2_bytes_(ctx.device().l2_bytes), module_(image), launches_(kernel_launches(module_, artifact_kernels(src))) {
  for (const BufferArg& a : args) {
    size_t n = static_cast<size_t>(a.dtype.bytes());
    for (int64_t e : a.shape) n *= static_cast<size_t>(e);
    buffers_.emplace_back(n);
    pointers_.push_back(buffers_.back().ptr());
  }
}

void GpuKernelRunner::run(std::vector<rt::NDArray>& arrays, size_t first_output) {
  internal_assert(arrays.size() == buffers_.size()) << arrays.size() << " arrays for " << buffers_.size() << " arguments";
  for (size_t i = 0; i < arrays.size(); ++i) buffers_[i].upload(arrays[i].data(), arrays[i].nbytes());
  rt::cuda::launch(launches_, pointers_);
  for (size_t i = first_output; i < arrays.size(); ++i) buffers_[i].download(arrays[i].data(), arrays[i].nbytes());
}

rt::TimeResult GpuKernelRunner::time(const rt::TimeOptions& options) {
  return rt::cuda::time_launches(launches_, pointers_, options, l2_bytes_);
}

}  // namespace kiln
