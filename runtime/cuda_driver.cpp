// The CUDA driver API through dlopen (runtime/cuda_driver.h). The entry
// points kiln uses are declared here as function-pointer types with cuda.h's
// signatures (versioned names where cuda.h maps a name to one), so no CUDA
// header is needed to build kiln. The library is opened once per process.
#include "runtime/cuda_driver.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>

#include "base/error.h"
#include "runtime/process_util.h"

namespace kiln::rt::cuda {

namespace {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;
using CUevent = void*;

constexpr CUresult kSuccess = 0;
constexpr CUresult kErrorStubLibrary = 34;
constexpr CUresult kErrorNoDevice = 100;

// cuda.h's CUdevice_attribute values.
enum Attribute : int {
  kMaxThreadsPerBlock = 1,
  kMaxBlockDimX = 2,
  kMaxGridDimX = 5,
  kMaxSharedPerBlock = 8,
  kWarpSize = 10,
  kMaxRegistersPerBlock = 12,
  kMultiprocessorCount = 16,
  kL2CacheSize = 38,
  kMaxThreadsPerSm = 39,
  kCcMajor = 75,
  kCcMinor = 76,
  kMaxSharedPerSm = 81,
  kMaxRegistersPerSm = 82,
  kMaxSharedOptin = 97,
  kMaxBlocksPerSm = 106,
};

struct Driver {
  void* handle = nullptr;
  std::string path;
  std::string why;  // when unusable
  int device_count = 0;

  CUresult (*init)(unsigned) = nullptr;
  CUresult (*get_error_name)(CUresult, const char**) = nullptr;
  CUresult (*get_error_string)(CUresult, const char**) = nullptr;
  CUresult (*device_get_count)(int*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_name)(char*, int, CUdevice) = nullptr;
  CUresult (*device_get_attribute)(int*, int, CUdevice) = nullptr;
  CUresult (*device_total_mem)(size_t*, CUdevice) = nullptr;
  CUresult (*primary_ctx_retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*primary_ctx_release)(CUdevice) = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
  CUresult (*ctx_synchronize)() = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*memcpy_htod)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*memcpy_dtoh)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*memset_d8)(CUdeviceptr, unsigned char, size_t) = nullptr;
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_unload)(CUmodule) = nullptr;
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*func_set_attribute)(CUfunction, int, int) = nullptr;
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                            void**, void**) = nullptr;
  CUresult (*event_create)(CUevent*, unsigned) = nullptr;
  CUresult (*event_destroy)(CUevent) = nullptr;
  CUresult (*event_record)(CUevent, CUstream) = nullptr;
  CUresult (*event_synchronize)(CUevent) = nullptr;
  CUresult (*event_elapsed_time)(float*, CUevent, CUevent) = nullptr;
  // Optional (CUDA 12 and later): looked up when a launch needs a tensor map.
  CUresult (*tensor_map_encode_tiled)(void*, int, unsigned, void*, const uint64_t*, const uint64_t*, const unsigned*,
                                      const unsigned*, int, int, int, int) = nullptr;
};

std::string resolve(Driver& d) {
  std::string missing;
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::decay_t<decltype(fn)>>(dlsym(d.handle, name));
    if (!fn && missing.empty()) missing = name;
  };
  sym(d.init, "cuInit");
  sym(d.get_error_name, "cuGetErrorName");
  sym(d.get_error_string, "cuGetErrorString");
  sym(d.device_get_count, "cuDeviceGetCount");
  sym(d.device_get, "cuDeviceGet");
  sym(d.device_get_name, "cuDeviceGetName");
  sym(d.device_get_attribute, "cuDeviceGetAttribute");
  sym(d.device_total_mem, "cuDeviceTotalMem_v2");
  sym(d.primary_ctx_retain, "cuDevicePrimaryCtxRetain");
  sym(d.primary_ctx_release, "cuDevicePrimaryCtxRelease_v2");
  sym(d.ctx_set_current, "cuCtxSetCurrent");
  sym(d.ctx_synchronize, "cuCtxSynchronize");
  sym(d.mem_alloc, "cuMemAlloc_v2");
  sym(d.mem_free, "cuMemFree_v2");
  sym(d.memcpy_htod, "cuMemcpyHtoD_v2");
  sym(d.memcpy_dtoh, "cuMemcpyDtoH_v2");
  sym(d.memset_d8, "cuMemsetD8_v2");
  sym(d.module_load_data, "cuModuleLoadData");
  sym(d.module_unload, "cuModuleUnload");
  sym(d.module_get_function, "cuModuleGetFunction");
  sym(d.func_set_attribute, "cuFuncSetAttribute");
  sym(d.launch_kernel, "cuLaunchKernel");
  sym(d.event_create, "cuEventCreate");
  sym(d.event_destroy, "cuEventDestroy_v2");
  sym(d.event_record, "cuEventRecord");
  sym(d.event_synchronize, "cuEventSynchronize");
  sym(d.event_elapsed_time, "cuEventElapsedTime");
  d.tensor_map_encode_tiled =
      reinterpret_cast<decltype(d.tensor_map_encode_tiled)>(dlsym(d.handle, "cuTensorMapEncodeTiled"));
  return missing;
}

std::string error_text(const Driver& d, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.get_error_name) d.get_error_name(r, &name);
  if (d.get_error_string) d.get_error_string(r, &text);
  std::ostringstream os;
  os << (name ? name : "CUDA error") << " (" << r << ")";
  if (text) os << ": " << text;
  return os.str();
}

// Opens and resolves the library; does not initialize CUDA.
Driver open_library() {
  Driver d;
  const char* env = std::getenv("KILN_LIBCUDA");
  d.path = env && *env ? env : "libcuda.so.1";
  d.handle = dlopen(d.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!d.handle) {
    const char* err = dlerror();
    d.why = "the CUDA driver (" + d.path + ") was not found" + (env && *env ? " (KILN_LIBCUDA)" : "") +
            (err ? std::string(": ") + err : "") + "; an NVIDIA GPU and its driver are needed";
    return d;
  }
  const std::string missing = resolve(d);
  if (!missing.empty()) {
    d.why = d.path + " has no " + missing + " (a CUDA 12 or newer driver is needed)";
    d.handle = nullptr;
  }
  return d;
}

// Initializes CUDA in this process and counts the devices; sets d.why (and
// clears d.handle) when that fails.
void initialize(Driver& d) {
  if (CUresult r = d.init(0); r != kSuccess) {
    d.why = r == kErrorStubLibrary || r == kErrorNoDevice
                ? "the CUDA driver (" + d.path + ") reports no usable GPU: " + error_text(d, r)
                : "the CUDA driver (" + d.path + ") failed to initialize: " + error_text(d, r);
    d.handle = nullptr;
    return;
  }
  if (CUresult r = d.device_get_count(&d.device_count); r != kSuccess || d.device_count == 0) {
    d.why = "the CUDA driver (" + d.path + ") reports no GPU" + (r != kSuccess ? ": " + error_text(d, r) : "");
    d.handle = nullptr;
  }
}

Driver& library() {
  static Driver d = open_library();
  return d;
}

bool initialized = false;

// The driver, initialized in this process (after which a forked child can
// no longer use CUDA: only call this where the GPU is used).
const Driver& driver() {
  Driver& d = library();
  if (d.handle && !initialized) {
    initialize(d);
    initialized = true;
  }
  user_check(d.handle) << d.why;
  return d;
}

void check(CUresult r, const std::string& call) {
  if (r == kSuccess) return;
  const Driver& d = driver();
  const bool sticky = is_sticky_error(r);
  throw CudaError(call + " failed: " + error_text(d, r) +
                      (sticky ? " (the GPU context is unusable for the rest of this process)" : ""),
                  r, sticky);
}

int attribute(CUdevice dev, int attr) {
  int v = 0;
  check(driver().device_get_attribute(&v, attr, dev), "cuDeviceGetAttribute(" + std::to_string(attr) + ")");
  return v;
}

DeviceInfo query(int ordinal) {
  const Driver& d = driver();
  CUdevice dev = 0;
  check(d.device_get(&dev, ordinal), "cuDeviceGet(" + std::to_string(ordinal) + ")");
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {0};
  check(d.device_get_name(name, sizeof(name) - 1, dev), "cuDeviceGetName");
  info.name = name;
  size_t mem = 0;
  check(d.device_total_mem(&mem, dev), "cuDeviceTotalMem");
  info.total_memory = static_cast<int64_t>(mem);
  info.cc_major = attribute(dev, kCcMajor);
  info.cc_minor = attribute(dev, kCcMinor);
  info.sm_count = attribute(dev, kMultiprocessorCount);
  info.l2_bytes = attribute(dev, kL2CacheSize);
  info.warp_size = attribute(dev, kWarpSize);
  info.max_threads_per_block = attribute(dev, kMaxThreadsPerBlock);
  for (int i = 0; i < 3; ++i) {
    info.max_block_dim[i] = attribute(dev, kMaxBlockDimX + i);
    info.max_grid_dim[i] = attribute(dev, kMaxGridDimX + i);
  }
  info.shared_per_block = attribute(dev, kMaxSharedPerBlock);
  info.shared_optin_per_block = attribute(dev, kMaxSharedOptin);
  info.shared_per_sm = attribute(dev, kMaxSharedPerSm);
  info.registers_per_block = attribute(dev, kMaxRegistersPerBlock);
  info.registers_per_sm = attribute(dev, kMaxRegistersPerSm);
  info.max_threads_per_sm = attribute(dev, kMaxThreadsPerSm);
  info.max_blocks_per_sm = attribute(dev, kMaxBlocksPerSm);
  return info;
}

// An event pair, destroyed with the scope.
class Events {
 public:
  Events() {
    check(driver().event_create(&start_, 0), "cuEventCreate");
    check(driver().event_create(&stop_, 0), "cuEventCreate");
  }
  ~Events() {
    driver().event_destroy(start_);
    driver().event_destroy(stop_);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  CUevent start() const { return start_; }
  CUevent stop() const { return stop_; }
  double elapsed_ms() const {
    check(driver().event_synchronize(stop_), "cuEventSynchronize");
    float ms = 0;
    check(driver().event_elapsed_time(&ms, start_, stop_), "cuEventElapsedTime");
    return ms;
  }

 private:
  CUevent start_ = nullptr, stop_ = nullptr;
};

// What a probe child found: "" and the devices, or why there are none.
struct Probe {
  std::string why;
  std::vector<DeviceInfo> devices;
};

std::string encode_probe(const Probe& p) {
  proc::Writer w;
  w.str(p.why).i64(static_cast<int64_t>(p.devices.size()));
  for (const DeviceInfo& d : p.devices) {
    w.str(d.name).i64(d.ordinal).i64(d.cc_major).i64(d.cc_minor).i64(d.sm_count).i64(d.total_memory).i64(d.l2_bytes);
    w.i64(d.warp_size).i64(d.max_threads_per_block);
    for (int i = 0; i < 3; ++i) w.i64(d.max_block_dim[i]).i64(d.max_grid_dim[i]);
    w.i64(d.shared_per_block).i64(d.shared_optin_per_block).i64(d.shared_per_sm).i64(d.registers_per_block);
    w.i64(d.registers_per_sm).i64(d.max_threads_per_sm).i64(d.max_blocks_per_sm);
  }
  return w.bytes();
}

Probe decode_probe(const std::string& bytes) {
  proc::Reader in(bytes);
  Probe p;
  p.why = in.str();
  const int64_t n = in.i64();
  for (int64_t k = 0; k < n; ++k) {
    DeviceInfo d;
    d.name = in.str();
    d.ordinal = static_cast<int>(in.i64());
    d.cc_major = static_cast<int>(in.i64());
    d.cc_minor = static_cast<int>(in.i64());
    d.sm_count = static_cast<int>(in.i64());
    d.total_memory = in.i64();
    d.l2_bytes = in.i64();
    d.warp_size = static_cast<int>(in.i64());
    d.max_threads_per_block = static_cast<int>(in.i64());
    for (int i = 0; i < 3; ++i) {
      d.max_block_dim[i] = in.i64();
      d.max_grid_dim[i] = in.i64();
    }
    d.shared_per_block = in.i64();
    d.shared_optin_per_block = in.i64();
    d.shared_per_sm = in.i64();
    d.registers_per_block = in.i64();
    d.registers_per_sm = in.i64();
    d.max_threads_per_sm = static_cast<int>(in.i64());
    d.max_blocks_per_sm = static_cast<int>(in.i64());
    p.devices.push_back(d);
  }
  return p;
}

Probe probe_here() {
  Probe p;
  try {
    for (int i = 0; i < driver().device_count; ++i) p.devices.push_back(query(i));
  } catch (const std::exception& e) {
    p.why = e.what();
  }
  return p;
}

// The devices, found without initializing CUDA in this process (a process
// that has initialized CUDA cannot use it in the children it forks, and
// kiln's builders and measuring workers are forked): a child process
// initializes the driver and reports. Cached for the process.
const Probe& probe() {
  static const Probe p = [] {
    if (initialized || !library().handle) return probe_here();
    std::string error;
    proc::Child child = proc::fork_child([](int fd) { proc::send_frame(fd, encode_probe(probe_here())); }, &error);
    if (child.pid < 0) return Probe{"cannot start a process to look for GPUs: " + error, {}};
    std::string payload;
    const auto deadline = proc::Clock::now() + std::chrono::seconds(60);
    const proc::RecvStatus st = proc::recv_frame(child.fd, deadline, &payload);
    ::close(child.fd);
    const int status = proc::kill_and_reap(child.pid);
    if (st != proc::RecvStatus::kOk)
      return Probe{"the process looking for GPUs " + proc::describe_status(status) + " without an answer", {}};
    return decode_probe(payload);
  }();
  return p;
}

}  // namespace

bool is_sticky_error(int code) {
  // cuda.h: 700 illegal address, 702 launch timeout, 714 hardware stack
  // error, 715 illegal instruction, 716 misaligned address, 717 invalid
  // address space, 718 invalid PC, 719 launch failed; 999 unknown.
  return code == 700 || (code >= 714 && code <= 719) || code == 702 || code == 999;
}

bool available(std::string* why) {
  const Driver& lib = library();
  if (!lib.handle && !initialized) {
    if (why) *why = lib.why;
    return false;
  }
  const Probe& p = probe();
  if (!p.why.empty() || p.devices.empty()) {
    if (why) *why = p.why.empty() ? "the CUDA driver reports no GPU" : p.why;
    return false;
  }
  return true;
}

std::string driver_path() {
  user_check(library().handle || initialized) << library().why;
  return library().path;
}

std::vector<DeviceInfo> devices() {
  std::string why;
  user_check(available(&why)) << why;
  return probe().devices;
}

// ---- DeviceBuffer

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  CUdeviceptr p = 0;
  check(driver().mem_alloc(&p, std::max<size_t>(bytes, 1)), "cuMemAlloc(" + std::to_string(bytes) + " bytes)");
  ptr_ = p;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) driver().mem_free(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
  o.ptr_ = 0;
  o.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) driver().mem_free(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, size_t bytes) {
  internal_assert(bytes <= bytes_) << "upload of " << bytes << " bytes into a buffer of " << bytes_;
  check(driver().memcpy_htod(ptr_, host, bytes), "cuMemcpyHtoD");
}

void DeviceBuffer::download(void* host, size_t bytes) const {
  internal_assert(bytes <= bytes_) << "download of " << bytes << " bytes from a buffer of " << bytes_;
  check(driver().memcpy_dtoh(host, ptr_, bytes), "cuMemcpyDtoH");
}

void DeviceBuffer::fill_bytes(unsigned char value) {
  check(driver().memset_d8(ptr_, value, bytes_), "cuMemsetD8");
}

// ---- Context

Context::Context(int ordinal) {
  const Driver& d = driver();
  user_check(ordinal >= 0 && ordinal < d.device_count)
      << "there is no GPU " << ordinal << " (the driver reports " << d.device_count << ")";
  info_ = query(ordinal);
  CUdevice dev = 0;
  check(d.device_get(&dev, ordinal), "cuDeviceGet");
  check(d.primary_ctx_retain(&ctx_, dev), "cuDevicePrimaryCtxRetain");
  check(d.ctx_set_current(ctx_), "cuCtxSetCurrent");
}

Context::~Context() {
  const Driver& d = driver();
  CUdevice dev = 0;
  if (d.device_get(&dev, info_.ordinal) == kSuccess) d.primary_ctx_release(dev);
}

void Context::synchronize() { check(driver().ctx_synchronize(), "cuCtxSynchronize"); }

// ---- CudaModule

CudaModule::CudaModule(const std::vector<char>& image) {
  user_check(!image.empty()) << "cannot load an empty cubin";
  check(driver().module_load_data(&module_, image.data()), "cuModuleLoadData");
}

CudaModule::~CudaModule() {
  if (module_) driver().module_unload(module_);
}

void* CudaModule::kernel(const std::string& name, unsigned dynamic_shared_bytes) const {
  CUfunction f = nullptr;
  check(driver().module_get_function(&f, module_, name.c_str()), "cuModuleGetFunction('" + name + "')");
  // Past 48 KiB a launch's dynamic shared memory needs the kernel's opt-in.
  constexpr int kMaxDynamicSharedSizeBytes = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  if (dynamic_shared_bytes > 0)
    check(driver().func_set_attribute(f, kMaxDynamicSharedSizeBytes, static_cast<int>(dynamic_shared_bytes)),
          "cuFuncSetAttribute('" + name + "', max dynamic shared memory " + std::to_string(dynamic_shared_bytes) +
              " bytes)");
  return f;
}

// ---- launches and timing

EncodedTensorMap encode_tensor_map(const TensorMapSpec& s, uint64_t address) {
  const std::string problem = tensor_map_problem(s);
  user_check(problem.empty()) << "cannot encode the tensor map (" << describe(s) << "): " << problem;
  user_check(tensor_map_address_ok(address))
      << "cannot encode the tensor map (" << describe(s) << ") of device memory at 0x" << std::hex << address
      << ": a tensor map's memory starts 16-byte aligned";
  const Driver& d = driver();
  if (!d.tensor_map_encode_tiled)
    throw CudaError("the CUDA driver (" + d.path + ") has no cuTensorMapEncodeTiled; tensor maps need CUDA 12 or later",
                    1, false);
  EncodedTensorMap m{};
  std::array<uint32_t, kMaxTensorMapRank> ones;
  ones.fill(1);
  constexpr int kInterleaveNone = 0, kL2Promotion128B = 2, kOobFillZeros = 0;
  check(d.tensor_map_encode_tiled(&m, tensor_map_data_type(s.element_bytes), static_cast<unsigned>(s.rank),
                                  reinterpret_cast<void*>(address), s.dims.data(), s.strides.data(), s.box.data(),
                                  ones.data(), kInterleaveNone, tensor_map_swizzle_mode(s.swizzle), kL2Promotion128B,
                                  kOobFillZeros),
        "cuTensorMapEncodeTiled(" + describe(s) + ")");
  return m;
}

namespace {

// Encoding a map is host work before each launch, and timing loops launch
// the same kernels on the same buffers over and over: the thread keeps the
// last few. A map holds nothing but the spec and the address, so an entry
// is what encoding them again would give.
EncodedTensorMap cached_tensor_map(const TensorMapSpec& s, uint64_t address) {
  struct Entry {
    TensorMapSpec spec;
    uint64_t address;
    EncodedTensorMap map;
  };
  constexpr size_t kEntries = 16;
  thread_local std::vector<Entry> cache;
  for (const Entry& e : cache)
    if (e.address == address && e.spec == s) return e.map;
  const EncodedTensorMap m = encode_tensor_map(s, address);
  if (cache.size() == kEntries) cache.erase(cache.begin());
  cache.push_back({s, address, m});
  return m;
}

}  // namespace

void launch(const std::vector<KernelLaunch>& launches, const std::vector<uint64_t>& args) {
  const Driver& d = driver();
  for (const KernelLaunch& l : launches) {
    internal_assert(l.tensor_maps.empty() || l.tensor_maps.size() == l.arg_indices.size())
        << "kernel " << l.name << ": " << l.tensor_maps.size() << " tensor maps for " << l.arg_indices.size()
        << " parameters";
    std::vector<CUdeviceptr> values;
    std::vector<EncodedTensorMap> maps(l.arg_indices.size());
    std::vector<void*> params;
    values.reserve(l.arg_indices.size());
    for (size_t p = 0; p < l.arg_indices.size(); ++p) {
      const int i = l.arg_indices[p];
      internal_assert(i >= 0 && static_cast<size_t>(i) < args.size()) << "kernel " << l.name << " argument " << i;
      values.push_back(args[i]);
      if (!l.tensor_maps.empty() && l.tensor_maps[p].rank > 0) {
        maps[p] = cached_tensor_map(l.tensor_maps[p], args[i]);
        params.push_back(&maps[p]);
      } else {
        params.push_back(&values.back());
      }
    }
    // Only the dynamic part: the driver adds the kernel's static shared
    // memory itself (passing it again would double it).
    check(d.launch_kernel(l.function, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2],
                          l.dynamic_shared_bytes, nullptr, params.data(), nullptr),
          "cuLaunchKernel('" + l.name + "')");
  }
}

TimeResult time_launches(const std::vector<KernelLaunch>& launches, const std::vector<uint64_t>& args,
                         const TimeOptions& o, int64_t l2_bytes) {
  return time_enqueued([&] { launch(launches, args); }, o, l2_bytes);
}

TimeResult time_enqueued(const std::function<void()>& enqueue, const TimeOptions& o, int64_t l2_bytes) {
  check_time_options(o, "cuda timing");
  const Driver& d = driver();
  // Writing twice the L2 evicts everything the kernels left there.
  DeviceBuffer flush;
  if (o.flush_cache) flush = DeviceBuffer(static_cast<size_t>(std::max<int64_t>(l2_bytes, 1 << 20)) * 2);
  for (int i = 0; i < o.warmup; ++i) enqueue();
  check(d.ctx_synchronize(), "cuCtxSynchronize");
  Events ev;
  // CUDA events around the launches: the GPU's own clock, so the host's
  // enqueueing does not count. The protocol is the CPU timer's
  // (rt::run_time_protocol).
  return run_time_protocol(
      [&](int number) {
        if (o.flush_cache) flush.fill_bytes(static_cast<unsigned char>(number));
        check(d.event_record(ev.start(), nullptr), "cuEventRecord");
        for (int i = 0; i < number; ++i) enqueue();
        check(d.event_record(ev.stop(), nullptr), "cuEventRecord");
        return ev.elapsed_ms();
      },
      o, "cuda timing");
}

}  // namespace kiln::rt::cuda
