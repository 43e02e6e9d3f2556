#include "graph/gpu_network.h"

#include "base/error.h"
#include "codegen/cuda_codegen.h"
#include "codegen/gpu_build.h"
#include "runtime/gpu_artifact.h"
#include "tasks/gpu_runner.h"

namespace kiln::graph {

GpuNetwork::GpuNetwork(const Target& target) {
  std::string why;
  user_check(rt::cuda::available(&why)) << "--target cuda runs the network on a GPU, and " << why;
  ctx_ = std::make_unique<rt::cuda::Context>(0);
  check_target_runs_on(ctx_->device(), target);
}

void GpuNetwork::load(const GpuLimits& limits, const std::vector<LoweredFunc>& funcs) {
  image_dir_.emplace("kiln-network", "the network's kernels");
  std::vector<CudaSource> sources;
  for (const LoweredFunc& f : funcs) sources.push_back(emit_cuda(f, limits));
  const std::vector<std::vector<char>> images = gpu_images(sources, limits.arch, image_dir_->path());
  for (size_t i = 0; i < sources.size(); ++i) {
    modules_.push_back(std::make_unique<rt::cuda::CudaModule>(images[i]));
    launches_[sources[i].function] = kernel_launches(*modules_.back(), artifact_kernels(sources[i]));
  }
}

GpuNetwork::~GpuNetwork() {
  // The modules unload before their directory goes, and everything before
  // the context.
  steps_.clear();
  buffers_.clear();
  launches_.clear();
  modules_.clear();
  image_dir_.reset();
}

int GpuNetwork::allocate(size_t bytes) {
  buffers_.emplace_back(std::max<size_t>(bytes, 1));
  return static_cast<int>(buffers_.size()) - 1;
}

uint64_t GpuNetwork::address(int buffer) const { return buffers_.at(static_cast<size_t>(buffer)).ptr(); }

void GpuNetwork::upload(int buffer, const void* host, size_t bytes) {
  if (bytes > 0) buffers_.at(static_cast<size_t>(buffer)).upload(host, bytes);
}

void GpuNetwork::download(int buffer, void* host, size_t bytes) const {
  if (bytes > 0) buffers_.at(static_cast<size_t>(buffer)).download(host, bytes);
}

void GpuNetwork::add_step(const std::string& kernel, std::vector<uint64_t> args) {
  auto it = launches_.find(kernel);
  internal_assert(it != launches_.end()) << "GpuNetwork: no kernel " << kernel;
  steps_.push_back(Step{&it->second, std::move(args)});
}

void GpuNetwork::enqueue() const {
  for (const Step& s : steps_) rt::cuda::launch(*s.launches, s.args);
}

void GpuNetwork::run() {
  enqueue();
  ctx_->synchronize();
}

rt::TimeResult GpuNetwork::time(const rt::TimeOptions& options) const {
  return rt::cuda::time_enqueued([this] { enqueue(); }, options, device().l2_bytes);
}

rt::TimeResult GpuNetwork::time_step(size_t step, const rt::TimeOptions& options) const {
  const Step& s = steps_.at(step);
  return rt::cuda::time_launches(*s.launches, s.args, options, device().l2_bytes);
}

}  // namespace kiln::graph
