// NVIDIA GPUs through the CUDA driver API, opened with dlopen: nothing in
// kiln links CUDA, and on a machine without a driver every entry point here
// says so in a user error instead of failing to load. The library is
// libcuda.so.1 (what the driver installs), or $KILN_LIBCUDA when set.
//
// What a measuring process needs: the devices and their limits, one
// device's primary context, device memory, modules loaded from a cubin,
// kernel launches, and timing with CUDA events under the usual protocol
// (runtime/time_evaluator.h), with the L2 cache flushed before each
// measurement.
//
// Errors: a failed call throws CudaError naming the call and the driver's
// error. Some errors leave the context unusable for the rest of the process
// (an illegal address, a failed or timed-out launch, ...): CudaError::sticky
// is set, and a measuring process must end after reporting it, so that the
// next candidate gets a fresh context.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/tensor_map.h"
#include "runtime/time_evaluator.h"

namespace kiln::rt::cuda {

class CudaError : public std::runtime_error {
 public:
  CudaError(const std::string& what, int code, bool sticky) : std::runtime_error(what), code_(code), sticky_(sticky) {}
  int code() const { return code_; }
  bool sticky() const { return sticky_; }

 private:
  int code_;
  bool sticky_;
};

// Whether `code` (a CUresult) leaves the context unusable.
bool is_sticky_error(int code);

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t total_memory = 0;
  int64_t l2_bytes = 0;
  int warp_size = 32;
  int max_threads_per_block = 0;
  std::array<int64_t, 3> max_block_dim{{0, 0, 0}};
  std::array<int64_t, 3> max_grid_dim{{0, 0, 0}};
  int64_t shared_per_block = 0;        // static limit
  int64_t shared_optin_per_block = 0;  // with the opt-in attribute
  int64_t shared_per_sm = 0;
  int64_t registers_per_block = 0;
  int64_t registers_per_sm = 0;
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;
  // "sm_90" from the compute capability.
  std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
};

// Whether the driver loads and has at least one device; `why` (optional)
// says what is missing otherwise.
bool available(std::string* why = nullptr);
// The path of the driver library that loaded (user_error when none).
std::string driver_path();
// Every device (user_error when the driver or a device is missing).
std::vector<DeviceInfo> devices();

// A buffer in device memory; freed when destroyed.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  uint64_t ptr() const { return ptr_; }  // a CUdeviceptr
  size_t bytes() const { return bytes_; }
  void upload(const void* host, size_t bytes);
  void download(void* host, size_t bytes) const;
  void fill_bytes(unsigned char value);

 private:
  uint64_t ptr_ = 0;
  size_t bytes_ = 0;
};

// One device's primary context, made current on the constructing thread;
// released when destroyed. Create it before any buffer or module.
class Context {
 public:
  explicit Context(int ordinal = 0);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  const DeviceInfo& device() const { return info_; }
  void synchronize();

 private:
  DeviceInfo info_;
  void* ctx_ = nullptr;
};

// A cubin loaded into the current context.
class CudaModule {
 public:
  explicit CudaModule(const std::vector<char>& image);
  ~CudaModule();
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;
  // The kernel's handle (a CUfunction); user_error naming it when absent.
  // A kernel launched with dynamic shared memory is opted in to that many
  // bytes (the driver refuses more than 48 KiB otherwise).
  void* kernel(const std::string& name, unsigned dynamic_shared_bytes = 0) const;

 private:
  void* module_ = nullptr;
};

// One kernel launch of a function: parameter i is the device pointer of
// the function's argument arg_indices[i], or, where tensor_maps[i] has a
// rank, a tensor map of that argument encoded at launch.
struct KernelLaunch {
  void* function = nullptr;  // from CudaModule::kernel
  std::string name;
  std::array<unsigned, 3> grid{{1, 1, 1}};
  std::array<unsigned, 3> block{{1, 1, 1}};
  unsigned shared_bytes = 0;          // the block's shared memory
  unsigned dynamic_shared_bytes = 0;  // how much of it the launch asks for dynamically
  std::vector<int> arg_indices;
  std::vector<TensorMapSpec> tensor_maps{};  // empty (no tensor maps), or one per parameter
};

// The tensor map `s` of the device memory at `address`
// (cuTensorMapEncodeTiled); user_error naming the map when it is invalid or
// the address is not 16-byte aligned, CudaError when the driver refuses it
// (a driver older than CUDA 12 has no tensor maps).
EncodedTensorMap encode_tensor_map(const TensorMapSpec& s, uint64_t address);

// Issues `launches` in order on the default stream with the function's
// arguments `args` (device pointers), their tensor maps encoded (each
// thread keeps its last 16 maps for the next launches); does not wait for
// them.
void launch(const std::vector<KernelLaunch>& launches, const std::vector<uint64_t>& args);

// Times the launches with CUDA events, with the CPU timer's protocol
// (rt::run_time_protocol): options.warmup untimed runs, then the calibrated
// samples, each measurement preceded by a write of twice the L2 cache
// (l2_bytes; untimed) when options.flush_cache is set.
TimeResult time_launches(const std::vector<KernelLaunch>& launches, const std::vector<uint64_t>& args,
                         const TimeOptions& options, int64_t l2_bytes);

// The same protocol for any work that `enqueue` issues on the default
// stream without waiting for it (kernels of a library such as cuBLAS, in
// this context): what time_launches does with the launches, so that kiln's
// kernels and a library's are timed alike.
TimeResult time_enqueued(const std::function<void()>& enqueue, const TimeOptions& options, int64_t l2_bytes);

}  // namespace kiln::rt::cuda
