#include "codegen/gpu_build.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "codegen/cuda_codegen.h"
#include "codegen/cuda_emulation.h"
#include "runtime/gpu_artifact.h"
#include "schedule/gpu_limits.h"

namespace kiln {

namespace {

std::string unique_path(const std::string& dir, const std::string& function) {
  static std::atomic<uint64_t> counter{0};
  return dir + "/" + function + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) +
         kGpuArtifactSuffix;
}

}  // namespace

bool gpu_images_emulated() {
  const char* v = std::getenv("KILN_GPU_IMAGE");
  if (!v || !*v || std::string(v) == "cubin") return false;
  user_check(std::string(v) == "emulated") << "KILN_GPU_IMAGE must be 'cubin' or 'emulated', got '" << v << "'";
  return true;
}

std::vector<char> emulated_gpu_image(const CudaSource& src, const std::string& dir) {
  const std::string text = kEmulatedImagePrefix + build_emulated_module(src, dir).path;
  std::vector<char> image(text.begin(), text.end());
  image.push_back('\0');
  return image;
}

std::vector<char> gpu_image(const CudaSource& src, const std::string& arch, const std::string& dir,
                            std::vector<CudaKernelResources>* resources) {
  if (gpu_images_emulated()) return emulated_gpu_image(src, dir);
  NvrtcOutput out = nvrtc_compile(src.code, src.function + ".cu", arch);
  if (resources) *resources = std::move(out.resources);
  return std::move(out.cubin);
}

std::vector<std::vector<char>> gpu_images(const std::vector<CudaSource>& srcs, const std::string& arch,
                                          const std::string& dir) {
  std::vector<std::vector<char>> out(srcs.size());
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex m;
  auto work = [&] {
    for (size_t i; (i = next++) < out.size();) {
      try {
        out[i] = gpu_image(srcs[i], arch, dir);
      } catch (...) {
        std::lock_guard<std::mutex> lock(m);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  const size_t workers = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), srcs.size());
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  return out;
}

std::vector<GpuArtifactKernel> artifact_kernels(const CudaSource& src) {
  std::vector<GpuArtifactKernel> out;
  for (const CudaKernelLaunch& l : src.launches) {
    GpuArtifactKernel k;
    k.name = l.kernel;
    for (int d = 0; d < 3; ++d) {
      k.grid[d] = static_cast<unsigned>(l.grid[d]);
      k.block[d] = static_cast<unsigned>(l.block[d]);
    }
    k.shared_bytes = static_cast<unsigned>(l.shared_bytes);
    k.dynamic_shared_bytes = static_cast<unsigned>(l.dynamic_shared_bytes);
    bool maps = false;
    for (auto& p : l.params) {
      maps |= p.tensor_map.rank > 0;
      internal_assert(p.tensor_map.rank > 0 || (!p.c_type.empty() && p.c_type.back() == '*'))
          << "kernel " << l.kernel << " takes a scalar";
      k.arg_indices.push_back(p.arg_index);
    }
    if (maps)
      for (auto& p : l.params) k.tensor_maps.push_back(p.tensor_map);
    out.push_back(k);
  }
  return out;
}

GpuBuild build_gpu_artifact(const LoweredFunc& f, const Target& target, const std::string& out_dir) {
  internal_assert(target.is_cuda()) << "build_gpu_artifact for " << target.str();
  const GpuLimits limits = gpu_limits_for_arch(target.arch);
  const CudaSource src = emit_cuda(f, limits);
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  user_check(!ec) << "cannot create directory '" << out_dir << "': " << ec.message();

  GpuBuild b;
  GpuArtifact a;
  a.arch = target.arch;
  a.image = gpu_image(src, target.arch, out_dir, &b.resources);
  a.kernels = artifact_kernels(src);
  b.path = unique_path(out_dir, src.function);
  write_gpu_artifact(a, b.path);
  return b;
}

}  // namespace kiln
