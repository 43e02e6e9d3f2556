// A stand-in for libcuda.so.1, for testing kiln's driver-API runtime
// (runtime/cuda_driver.h) on a machine without a GPU: tests point
// KILN_LIBCUDA at it. It implements the entry points kiln uses on the host:
// device memory is host memory, events read the host clock, and a "cubin"
// is the text "kiln-fake-cubin:<path>" naming an emulated CUDA module
// (codegen/cuda_emulation.h) whose per-kernel launchers run the kernels.
//
// Knobs (read at every call):
//   KILN_FAKE_CUDA_DEVICES=n     devices reported (default 1)
//   KILN_FAKE_CUDA_CC=XY         compute capability X.Y reported (default 90)
//   KILN_FAKE_CUDA_FAIL_LAUNCH=c launches fail with CUresult c; a sticky code
//                                (700, 702, 714-719) then fails every call
//                                until kiln_fake_cuda_reset()
// Test hooks: kiln_fake_cuda_stat(name) ("launches", "memset_bytes", "mem_allocs",
// "live_buffers", "tensor_maps", "tensor_maps_swizzled"), kiln_fake_cuda_reset().
//
// Tensor maps (cuTensorMapEncodeTiled) are written in the emulation
// header's layout (kiln_emu::TensorMap, codegen/cuda_emulation_mbarrier.cpp),
// after the driver's own checks of the arguments kiln passes.
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;
using Launcher = int (*)(const unsigned*, const unsigned*, unsigned, unsigned, void**);

std::mutex mu;
std::map<std::string, long long> stats;
std::map<CUdeviceptr, void*> buffers;
std::map<void*, int> max_dynamic_shared;  // per function: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
int sticky_error = 0;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

bool is_sticky(int c) { return c == 700 || c == 702 || (c >= 714 && c <= 719); }

struct Event {
  double ms = 0;
};

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

#define FAKE_CHECK_STICKY() \
  if (sticky_error) return sticky_error

FAKE_API CUresult cuInit(unsigned) { return 0; }

FAKE_API CUresult cuGetErrorName(CUresult r, const char** out) {
  switch (r) {
    case 0:
      *out = "CUDA_SUCCESS";
      break;
    case 1:
      *out = "CUDA_ERROR_INVALID_VALUE";
      break;
    case 200:
      *out = "CUDA_ERROR_INVALID_IMAGE";
      break;
    case 500:
      *out = "CUDA_ERROR_NOT_FOUND";
      break;
    case 700:
      *out = "CUDA_ERROR_ILLEGAL_ADDRESS";
      break;
    case 719:
      *out = "CUDA_ERROR_LAUNCH_FAILED";
      break;
    default:
      *out = "CUDA_ERROR_UNKNOWN";
  }
  return 0;
}

FAKE_API CUresult cuGetErrorString(CUresult r, const char** out) {
  *out = r == 700 ? "an illegal memory access was encountered" : "a fake CUDA error";
  return 0;
}

FAKE_API CUresult cuDeviceGetCount(int* n) {
  *n = env_int("KILN_FAKE_CUDA_DEVICES", 1);
  return 0;
}

FAKE_API CUresult cuDeviceGet(int* dev, int ordinal) {
  if (ordinal < 0 || ordinal >= env_int("KILN_FAKE_CUDA_DEVICES", 1)) return 101;  // CUDA_ERROR_INVALID_DEVICE
  *dev = ordinal;
  return 0;
}

FAKE_API CUresult cuDeviceGetName(char* name, int len, int) {
  std::strncpy(name, "kiln fake H100", static_cast<size_t>(len));
  return 0;
}

FAKE_API CUresult cuDeviceTotalMem_v2(size_t* bytes, int) {
  *bytes = size_t{80} << 30;
  return 0;
}

FAKE_API CUresult cuDeviceGetAttribute(int* v, int attr, int) {
  static const std::map<int, int> values = {
      {1, 1024},      {2, 1024},  {3, 1024},   {4, 64},     {5, 2147483647}, {6, 65535},     {7, 65535},
      {8, 49152},     {10, 32},   {12, 65536}, {16, 132},   {38, 52428800},  {39, 2048},     {75, 9},
      {76, 0},        {81, 233472}, {82, 65536}, {97, 232448}, {106, 32}};
  auto it = values.find(attr);
  *v = it == values.end() ? 0 : it->second;
  const int cc = env_int("KILN_FAKE_CUDA_CC", 90);
  if (attr == 75) *v = cc / 10;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
  if (attr == 76) *v = cc % 10;  // ..._MINOR
  return it == values.end() ? 1 : 0;  // CUDA_ERROR_INVALID_VALUE
}

FAKE_API CUresult cuDevicePrimaryCtxRetain(void** ctx, int) {
  static int token;
  *ctx = &token;
  return 0;
}
FAKE_API CUresult cuDevicePrimaryCtxRelease_v2(int) { return 0; }
FAKE_API CUresult cuCtxSetCurrent(void*) { return 0; }
FAKE_API CUresult cuCtxSynchronize() {
  FAKE_CHECK_STICKY();
  return 0;
}

FAKE_API CUresult cuStreamSynchronize(void*) {
  FAKE_CHECK_STICKY();
  return 0;
}

FAKE_API CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) {
  FAKE_CHECK_STICKY();
  void* mem = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!mem) return 2;  // CUDA_ERROR_OUT_OF_MEMORY
  std::lock_guard<std::mutex> lock(mu);
  *p = reinterpret_cast<CUdeviceptr>(mem);
  buffers[*p] = mem;
  ++stats["mem_allocs"];
  return 0;
}

FAKE_API CUresult cuMemFree_v2(CUdeviceptr p) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = buffers.find(p);
  if (it == buffers.end()) return 1;
  std::free(it->second);
  buffers.erase(it);
  return 0;
}

FAKE_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
  FAKE_CHECK_STICKY();
  std::memcpy(reinterpret_cast<void*>(dst), src, n);
  return 0;
}

FAKE_API CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
  FAKE_CHECK_STICKY();
  std::memcpy(dst, reinterpret_cast<const void*>(src), n);
  return 0;
}

FAKE_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void*) {
  FAKE_CHECK_STICKY();
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  return 0;
}

FAKE_API CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n) {
  FAKE_CHECK_STICKY();
  std::memset(reinterpret_cast<void*>(dst), v, n);
  std::lock_guard<std::mutex> lock(mu);
  stats["memset_bytes"] += static_cast<long long>(n);
  return 0;
}

FAKE_API CUresult cuModuleLoadData(void** module, const void* image) {
  FAKE_CHECK_STICKY();
  const char* text = static_cast<const char*>(image);
  const char* prefix = "kiln-fake-cubin:";
  if (std::strncmp(text, prefix, std::strlen(prefix)) != 0) return 200;
  void* h = dlopen(text + std::strlen(prefix), RTLD_NOW | RTLD_LOCAL);
  if (!h) return 200;
  *module = h;
  return 0;
}

FAKE_API CUresult cuModuleUnload(void* module) { return dlclose(module) == 0 ? 0 : 1; }

FAKE_API CUresult cuModuleGetFunction(void** f, void* module, const char* name) {
  FAKE_CHECK_STICKY();
  void* sym = dlsym(module, (std::string("kiln_emu_kernel_") + name).c_str());
  if (!sym) return 500;
  *f = sym;
  return 0;
}

// Only the attribute kiln sets: the dynamic shared memory a kernel may be
// launched with (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 8), at
// most the device's opt-in limit.
FAKE_API CUresult cuFuncSetAttribute(void* f, int attr, int value) {
  FAKE_CHECK_STICKY();
  if (attr != 8 || value < 0 || value > 232448) return 1;  // CUDA_ERROR_INVALID_VALUE
  std::lock_guard<std::mutex> lock(mu);
  max_dynamic_shared[f] = value;
  return 0;
}

FAKE_API CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                 unsigned shared, void*, void** params, void**) {
  FAKE_CHECK_STICKY();
  if (int fail = env_int("KILN_FAKE_CUDA_FAIL_LAUNCH", 0)) {
    if (is_sticky(fail)) sticky_error = fail;
    return fail;
  }
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  unsigned max_dynamic = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    ++stats["launches"];
    auto it = max_dynamic_shared.find(f);
    if (it != max_dynamic_shared.end()) max_dynamic = static_cast<unsigned>(it->second);
  }
  const int rc = reinterpret_cast<Launcher>(f)(grid, block, shared, max_dynamic, params);
  if (rc == 2) return 1;  // a launch configuration the driver refuses: CUDA_ERROR_INVALID_VALUE, not sticky
  if (rc != 0) {
    sticky_error = 719;  // what a kernel that faults on a GPU gives
    return 719;
  }
  return 0;
}

FAKE_API CUresult cuTensorMapEncodeTiled(void* map, int data_type, unsigned rank, void* address, const uint64_t* dims,
                                         const uint64_t* strides, const unsigned* box, const unsigned* element_strides,
                                         int interleave, int swizzle, int l2_promotion, int oob_fill) {
  FAKE_CHECK_STICKY();
  constexpr CUresult kInvalidValue = 1;
  static const int kBytes[] = {1, 2, 4, 4, 8, 8};  // UINT8, UINT16, UINT32, INT32, UINT64, INT64
  if (reinterpret_cast<uintptr_t>(map) % 64 != 0 || data_type < 0 || data_type > 5 || rank < 1 || rank > 5 ||
      reinterpret_cast<uintptr_t>(address) % 16 != 0 || interleave != 0 || (swizzle != 0 && swizzle != 3) ||
      l2_promotion < 0 || l2_promotion > 3 || oob_fill != 0)
    return kInvalidValue;
  const int bytes = kBytes[data_type];
  for (unsigned d = 0; d < rank; ++d) {
    if (dims[d] < 1 || dims[d] > (uint64_t{1} << 32) || box[d] < 1 || box[d] > 256 || element_strides[d] != 1)
      return kInvalidValue;
    if (d > 0 && (strides[d - 1] % 16 != 0 || strides[d - 1] >= (uint64_t{1} << 40))) return kInvalidValue;
  }
  if (box[0] * bytes % 16 != 0) return kInvalidValue;
  if (swizzle == 3 && box[0] * bytes > 128) return kInvalidValue;  // CU_TENSOR_MAP_SWIZZLE_128B: rows of at most 128
  uint64_t* o = static_cast<uint64_t*>(map);
  std::memset(o, 0, 128);
  o[0] = 0x70616d746e6c696bull;  // "kilntmap"
  o[1] = reinterpret_cast<uintptr_t>(address);
  o[2] = static_cast<uint64_t>(bytes);
  o[3] = rank;
  for (unsigned d = 0; d < rank; ++d) {
    o[4 + d] = dims[d];
    if (d > 0) o[9 + d - 1] = strides[d - 1];
    o[13 + d / 4] |= static_cast<uint64_t>(box[d]) << (16 * (d % 4));
  }
  o[15] = swizzle == 3 ? 128 : 0;
  std::lock_guard<std::mutex> lock(mu);
  ++stats["tensor_maps"];
  if (swizzle == 3) ++stats["tensor_maps_swizzled"];
  return 0;
}

FAKE_API CUresult cuEventCreate(void** e, unsigned) {
  *e = new Event;
  return 0;
}
FAKE_API CUresult cuEventDestroy_v2(void* e) {
  delete static_cast<Event*>(e);
  return 0;
}
FAKE_API CUresult cuEventRecord(void* e, void*) {
  FAKE_CHECK_STICKY();
  static_cast<Event*>(e)->ms = now_ms();
  return 0;
}
FAKE_API CUresult cuEventSynchronize(void*) {
  FAKE_CHECK_STICKY();
  return 0;
}
FAKE_API CUresult cuEventElapsedTime(float* ms, void* start, void* stop) {
  FAKE_CHECK_STICKY();
  *ms = static_cast<float>(static_cast<Event*>(stop)->ms - static_cast<Event*>(start)->ms);
  return 0;
}

FAKE_API long long kiln_fake_cuda_stat(const char* name) {
  std::lock_guard<std::mutex> lock(mu);
  if (std::string(name) == "live_buffers") return static_cast<long long>(buffers.size());
  auto it = stats.find(name);
  return it == stats.end() ? 0 : it->second;
}

FAKE_API void kiln_fake_cuda_reset() {
  std::lock_guard<std::mutex> lock(mu);
  stats.clear();
  max_dynamic_shared.clear();
  sticky_error = 0;
}
