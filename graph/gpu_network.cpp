#include "graph/gpu_network.h"

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "codegen/cuda_codegen.h"
#include "codegen/gpu_build.h"
#include "runtime/gpu_artifact.h"
#include "tasks/gpu_runner.h"

namespace kiln::graph {

namespace {

struct BuiltImage {
  CudaSource source;
  std::vector<char> image;
};

// Every kernel's image, built on all cores (NVRTC, or the host compiler for
// emulated images, takes a second or so per kernel); the first failure is
// rethrown.
std::vector<BuiltImage> build_images(const std::vector<LoweredFunc>& funcs, const GpuLimits& limits,
                                     const std::string& dir) {
  std::vector<BuiltImage> out(funcs.size());
  for (size_t i = 0; i < funcs.size(); ++i) out[i].source = emit_cuda(funcs[i], limits);
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex m;
  auto work = [&] {
    for (size_t i; (i = next++) < out.size();) {
      try {
        out[i].image = gpu_image(out[i].source, limits.arch, dir);
      } catch (...) {
        std::lock_guard<std::mutex> lock(m);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  const size_t workers = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), funcs.size());
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  return out;
}

}  // namespace

GpuNetwork::GpuNetwork(const Target& target) {
  std::string why;
  user_check(rt::cuda::available(&why)) << "--target cuda runs the network on a GPU, and " << why;
  ctx_ = std::make_unique<rt::cuda::Context>(0);
  check_target_runs_on(ctx_->device(), target);
}

void GpuNetwork::load(const GpuLimits& limits, const std::vector<LoweredFunc>& funcs) {
  image_dir_.emplace("kiln-network", "the network's kernels");
  for (BuiltImage& b : build_images(funcs, limits, image_dir_->path())) {
    modules_.push_back(std::make_unique<rt::cuda::CudaModule>(b.image));
    launches_[b.source.function] = kernel_launches(*modules_.back(), artifact_kernels(b.source));
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
