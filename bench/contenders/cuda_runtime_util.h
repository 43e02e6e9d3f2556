// What the GPU plug-ins (cublas_ops.cpp, cudnn_ops.cpp) share: the CUDA
// runtime API checks and device memory of their own (workspaces, reordered
// weights). Only the plug-ins include this header; kiln itself never links
// the CUDA runtime.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "base/error.h"

namespace kiln::baselines {

inline std::string cuda_runtime_error(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

inline void check_cuda(cudaError_t e, const char* call) {
  if (e != cudaSuccess) user_error() << call << " failed (" << cuda_runtime_error(e) << ")";
}

// "" when the CUDA runtime can use GPU 0, the device kiln runs on; else why
// not, for `library`'s message. The runtime binds to GPU 0's primary
// context, which kiln's driver runtime has already made current.
inline std::string cuda_runtime_unavailable(const std::string& library) {
  int n = 0;
  if (cudaError_t e = cudaGetDeviceCount(&n); e != cudaSuccess)
    return library + " needs a GPU that the CUDA runtime can use, and cudaGetDeviceCount says " +
           cuda_runtime_error(e);
  if (n == 0) return library + " needs a GPU, and the CUDA runtime sees none";
  if (cudaError_t e = cudaSetDevice(0); e != cudaSuccess)
    return library + " could not use GPU 0 (cudaSetDevice: " + cuda_runtime_error(e) + ")";
  return "";
}

// user_error unless `ptr` is device memory the CUDA runtime sees: kiln's
// driver runtime and the library must share GPU 0's primary context (they
// do unless KILN_LIBCUDA names a different driver than libcuda.so.1).
inline void check_shared_pointer(uint64_t ptr, const std::string& library) {
  cudaPointerAttributes a{};
  const cudaError_t e = cudaPointerGetAttributes(&a, reinterpret_cast<const void*>(ptr));
  user_check(e == cudaSuccess && a.type == cudaMemoryTypeDevice && a.device == 0)
      << library << " cannot see kiln's device memory (cudaPointerGetAttributes: "
      << (e == cudaSuccess ? "not device memory of GPU 0" : cuda_runtime_error(e))
      << "); is KILN_LIBCUDA a different driver than the CUDA runtime's libcuda.so.1?";
}

// A pair of CUDA events on the default stream that time what a plug-in
// issues between them (destroyed with the object, also when a call throws).
class EventTimer {
 public:
  EventTimer() {
    check_cuda(cudaEventCreate(&start_), "cudaEventCreate");
    if (cudaError_t e = cudaEventCreate(&stop_); e != cudaSuccess) {
      cudaEventDestroy(start_);
      check_cuda(e, "cudaEventCreate");
    }
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  // Milliseconds of the work `issue` enqueues.
  template <typename F>
  float time(F&& issue) {
    check_cuda(cudaEventRecord(start_, nullptr), "cudaEventRecord");
    issue();
    check_cuda(cudaEventRecord(stop_, nullptr), "cudaEventRecord");
    check_cuda(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms;
  }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// Milliseconds per call of `enqueue` in steady state: a few calls to warm
// up, then `calls` back to back. How kiln bench times every contender, so a
// plug-in choosing among a library's variants picks the one that is fastest
// when timed that way.
template <typename F>
double time_calls_ms(F&& enqueue, int calls = 20) {
  for (int i = 0; i < 3; ++i) enqueue();
  EventTimer timer;
  return static_cast<double>(timer.time([&] {
           for (int i = 0; i < calls; ++i) enqueue();
         })) /
         calls;
}

// Device memory of the plug-in's own, freed with the object.
class CudaMemory {
 public:
  CudaMemory() = default;
  explicit CudaMemory(size_t bytes) : bytes_(bytes) {
    if (bytes > 0) check_cuda(cudaMalloc(&ptr_, bytes), "cudaMalloc");
  }
  ~CudaMemory() {
    if (ptr_) cudaFree(ptr_);
  }
  CudaMemory(CudaMemory&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  CudaMemory& operator=(CudaMemory&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  CudaMemory(const CudaMemory&) = delete;
  CudaMemory& operator=(const CudaMemory&) = delete;
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

inline void* device_ptr(uint64_t p) { return reinterpret_cast<void*>(p); }

}  // namespace kiln::baselines
