// The fixed part of a cuda library's NAME.c (see cuda_library_source.h):
// the CUDA driver opened with dlopen, lazy and thread-safe loading of the
// library's modules into a device's primary context, the per-thread last
// error message, device memory helpers, and the launchers of tuned and
// fallback kernels. Placeholders: @N@ (library name), @ARCH@ ("sm_90"),
// @MAJOR@, @MINOR@ (the architecture's compute capability) and @EXACT@ (1
// for an architecture-specific target such as sm_90a, which runs on that
// compute capability only).
//
// The generated part before it defines NUM_IMAGES, kImages[], NUM_FUNCTIONS
// and kFunctions[] (image index and kernel name of each function the
// library launches); a kernel library's dispatchers after it use
// FALLBACK_GEMM, FALLBACK_SOFTMAX and FALLBACK_LAYER_NORM (indices into
// kFunctions). A network library (graph/model_library.h) defines, before
// the prelude, MAX_LAUNCH_ARGS (its kernels' most parameters; 8 when not
// defined), and ON_LOADED(fn) and ON_UNLOAD(), which the runtime calls once
// the modules are loaded (a non-OK code unloads them again) and before it
// unloads them: there it uploads and frees the network's weights.
#pragma once

namespace kiln {

// Why dlopen rather than linking libcuda: the library then links and loads
// on machines without the driver (build hosts, CI), and says what is
// missing at the first call instead of failing to load; KILN_LIBCUDA names
// another driver library (kiln's tests use a stand-in).
inline const char* const kCudaLibraryPreludeC = R"C(
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "@N@.h"

#define API __attribute__((visibility("default")))
#define UNUSED __attribute__((unused))
#ifndef MAX_LAUNCH_ARGS
#define MAX_LAUNCH_ARGS 8
#endif
#ifndef ON_LOADED
#define ON_LOADED(fn) @N@_OK
#endif
#ifndef ON_UNLOAD
#define ON_UNLOAD()
#endif

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void* CUcontext;
typedef void* CUmodule;
typedef void* CUfunction;
typedef void* CUstream;

struct function_ref {
  int image;
  const char* name;
  unsigned dynamic_shared_bytes; /* opted in to when loaded (past 48 KiB the driver needs it) */
};

/* A tensor map of a parameter's buffer (rank > 0; kiln's runtime/tensor_map.h): bytes as they are, no
   interleave, L2 promotion of 128 bytes, zeros outside the tensor; encoded at each launch. */
struct tensor_map_spec {
  int rank, element_bytes;
  uint64_t dims[5], strides[4]; /* elements innermost first; bytes from one index of dims 1.. to the next */
  unsigned box[5];
  int swizzle; /* a CUtensorMapSwizzle: 0 none, 3 the 128-byte swizzle of kiln's swizzled slots */
};
typedef struct {
  _Alignas(64) uint64_t opaque[16];
} encoded_tensor_map; /* a CUtensorMap */

/* One kernel launch of a tuned kernel: parameter i is the entry point's buffer args[i], or where maps[i] has a
   rank, that tensor map of it. */
struct launch {
  int function;
  unsigned grid[3], block[3];
  unsigned shared_bytes;         /* the block's shared memory */
  unsigned dynamic_shared_bytes; /* of it, what the launch asks for (the rest the kernel declares) */
  int num_args;
  int args[MAX_LAUNCH_ARGS];
  struct tensor_map_spec maps[MAX_LAUNCH_ARGS];
};
)C";

inline const char* const kCudaLibraryRuntimeC = R"C(
/* ---- the calling thread's last error ---- */

static _Thread_local char last_error[1024];

static void set_error(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
}

API const char* @N@_last_error(void) { return last_error; }

/* ---- the CUDA driver ---- */

static struct {
  void* handle;
  CUresult (*init)(unsigned);
  CUresult (*get_error_name)(CUresult, const char**);
  CUresult (*device_get_count)(int*);
  CUresult (*device_get)(CUdevice*, int);
  CUresult (*device_get_name)(char*, int, CUdevice);
  CUresult (*device_get_attribute)(int*, int, CUdevice);
  CUresult (*primary_ctx_retain)(CUcontext*, CUdevice);
  CUresult (*primary_ctx_release)(CUdevice);
  CUresult (*ctx_set_current)(CUcontext);
  CUresult (*ctx_synchronize)(void);
  CUresult (*stream_synchronize)(CUstream);
  CUresult (*mem_alloc)(CUdeviceptr*, size_t);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*memcpy_htod)(CUdeviceptr, const void*, size_t);
  CUresult (*memcpy_dtoh)(void*, CUdeviceptr, size_t);
  CUresult (*memcpy_dtod_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*module_load_data)(CUmodule*, const void*);
  CUresult (*module_unload)(CUmodule);
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*);
  CUresult (*func_set_attribute)(CUfunction, int, int);
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            CUstream, void**, void**);
  CUresult (*tensor_map_encode_tiled)(void*, int, unsigned, void*, const uint64_t*, const uint64_t*, const unsigned*,
                                      const unsigned*, int, int, int, int);
} drv;

static pthread_mutex_t state_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int ready; /* 1 once the modules are loaded (under state_mu) */
static int device_ordinal = -1;
static CUdevice device;
static CUcontext context;
static CUmodule modules[NUM_IMAGES];
static CUfunction functions[NUM_FUNCTIONS];

static const char* error_name(CUresult r) {
  const char* s = NULL;
  if (drv.get_error_name && drv.get_error_name(r, &s) == 0 && s) return s;
  return "an unknown CUDA error";
}

/* CUDA_ERROR_OUT_OF_MEMORY is a memory error; anything else the driver's. */
static int cuda_failed(const char* fn, const char* call, CUresult r) {
  set_error("%s: %s failed: %s (CUresult %d)", fn, call, error_name(r), r);
  return r == 2 ? @N@_ERROR_MEMORY : @N@_ERROR_CUDA;
}

static int load_driver(const char* fn) {
  if (drv.handle) return @N@_OK;
  const char* path = getenv("KILN_LIBCUDA");
  if (!path || !*path) path = "libcuda.so.1";
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    set_error("%s: the CUDA driver (%s) could not be loaded (%s); @N@ runs on an NVIDIA GPU with its driver installed",
              fn, path, dlerror());
    return @N@_ERROR_CUDA;
  }
  const char* missing = NULL;
#define SYM(field, name) \
  if (!missing && !(*(void**)&drv.field = dlsym(h, name))) missing = name
  SYM(init, "cuInit");
  SYM(get_error_name, "cuGetErrorName");
  SYM(device_get_count, "cuDeviceGetCount");
  SYM(device_get, "cuDeviceGet");
  SYM(device_get_name, "cuDeviceGetName");
  SYM(device_get_attribute, "cuDeviceGetAttribute");
  SYM(primary_ctx_retain, "cuDevicePrimaryCtxRetain");
  SYM(primary_ctx_release, "cuDevicePrimaryCtxRelease_v2");
  SYM(ctx_set_current, "cuCtxSetCurrent");
  SYM(ctx_synchronize, "cuCtxSynchronize");
  SYM(stream_synchronize, "cuStreamSynchronize");
  SYM(mem_alloc, "cuMemAlloc_v2");
  SYM(mem_free, "cuMemFree_v2");
  SYM(memcpy_htod, "cuMemcpyHtoD_v2");
  SYM(memcpy_dtoh, "cuMemcpyDtoH_v2");
  SYM(memcpy_dtod_async, "cuMemcpyDtoDAsync_v2");
  SYM(module_load_data, "cuModuleLoadData");
  SYM(module_unload, "cuModuleUnload");
  SYM(module_get_function, "cuModuleGetFunction");
  SYM(func_set_attribute, "cuFuncSetAttribute");
  SYM(launch_kernel, "cuLaunchKernel");
#undef SYM
  /* CUDA 12 and later; only kernels that take tensor maps need it. */
  *(void**)&drv.tensor_map_encode_tiled = dlsym(h, "cuTensorMapEncodeTiled");
  if (missing) {
    set_error("%s: the CUDA driver %s has no %s (a driver older than CUDA 11?)", fn, path, missing);
    dlclose(h);
    memset(&drv, 0, sizeof drv);
    return @N@_ERROR_CUDA;
  }
  const CUresult r = drv.init(0);
  if (r != 0) {
    const int rc = cuda_failed(fn, "cuInit", r);
    dlclose(h);
    memset(&drv, 0, sizeof drv);
    return rc;
  }
  drv.handle = h;
  return @N@_OK;
}

static void unload_locked(void) {
  ON_UNLOAD();
  for (int i = 0; i < NUM_IMAGES; ++i)
    if (modules[i]) drv.module_unload(modules[i]), modules[i] = NULL;
  if (context) drv.primary_ctx_release(device), context = NULL;
  memset(functions, 0, sizeof functions);
  device_ordinal = -1;
  atomic_store(&ready, 0);
}

/* Cubins for sm_XY run on compute capability X.Z with Z >= Y (exactly X.Y for sm_XYa). */
static int runs_on(int major, int minor) {
  return major == @MAJOR@ && (@EXACT@ ? minor == @MINOR@ : minor >= @MINOR@);
}

static int init_locked(const char* fn, int ordinal) {
  if (atomic_load(&ready)) {
    if (ordinal == device_ordinal) return @N@_OK;
    set_error("%s: @N@ already runs on device %d; call @N@_unload() first to move it to device %d", fn,
              device_ordinal, ordinal);
    return @N@_ERROR_ARGUMENT;
  }
  int rc = load_driver(fn);
  if (rc != @N@_OK) return rc;
  int count = 0;
  CUresult r = drv.device_get_count(&count);
  if (r != 0) return cuda_failed(fn, "cuDeviceGetCount", r);
  if (count == 0) {
    set_error("%s: the CUDA driver reports no GPU", fn);
    return @N@_ERROR_CUDA;
  }
  if (ordinal < 0 || ordinal >= count) {
    set_error("%s: there is no device %d (the driver reports %d GPU%s)", fn, ordinal, count, count == 1 ? "" : "s");
    return @N@_ERROR_ARGUMENT;
  }
  if ((r = drv.device_get(&device, ordinal)) != 0) return cuda_failed(fn, "cuDeviceGet", r);
  int major = 0, minor = 0;
  if ((r = drv.device_get_attribute(&major, 75, device)) != 0 || (r = drv.device_get_attribute(&minor, 76, device)) != 0)
    return cuda_failed(fn, "cuDeviceGetAttribute", r);
  if (!runs_on(major, minor)) {
    char name[256] = "";
    drv.device_get_name(name, (int)sizeof name, device);
    set_error("%s: @N@'s kernels are compiled for @ARCH@, which device %d (%s, sm_%d%d) cannot run; build the "
              "library for it with kiln lib --target \"cuda -arch=sm_%d%d\"",
              fn, ordinal, name, major, minor, major, minor);
    return @N@_ERROR_CUDA;
  }
  if ((r = drv.primary_ctx_retain(&context, device)) != 0) {
    context = NULL;
    return cuda_failed(fn, "cuDevicePrimaryCtxRetain", r);
  }
  if ((r = drv.ctx_set_current(context)) != 0) {
    rc = cuda_failed(fn, "cuCtxSetCurrent", r);
    unload_locked();
    return rc;
  }
  for (int i = 0; i < NUM_IMAGES; ++i) {
    if ((r = drv.module_load_data(&modules[i], kImages[i])) != 0) {
      modules[i] = NULL;
      rc = cuda_failed(fn, "cuModuleLoadData (loading the library's kernels)", r);
      unload_locked();
      return rc;
    }
  }
  for (int i = 0; i < NUM_FUNCTIONS; ++i) {
    if ((r = drv.module_get_function(&functions[i], modules[kFunctions[i].image], kFunctions[i].name)) != 0) {
      rc = cuda_failed(fn, "cuModuleGetFunction", r);
      unload_locked();
      return rc;
    }
    /* 8: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
    if (kFunctions[i].dynamic_shared_bytes > 0 &&
        (r = drv.func_set_attribute(functions[i], 8, (int)kFunctions[i].dynamic_shared_bytes)) != 0) {
      rc = cuda_failed(fn, "cuFuncSetAttribute (opting a kernel in to its dynamic shared memory)", r);
      unload_locked();
      return rc;
    }
  }
  if ((rc = ON_LOADED(fn)) != @N@_OK) {
    unload_locked();
    return rc;
  }
  device_ordinal = ordinal;
  atomic_store(&ready, 1);
  return @N@_OK;
}

API int @N@_init(int device_ordinal_arg) {
  pthread_mutex_lock(&state_mu);
  const int rc = init_locked("@N@_init", device_ordinal_arg);
  pthread_mutex_unlock(&state_mu);
  return rc;
}

API int @N@_unload(void) {
  pthread_mutex_lock(&state_mu);
  if (atomic_load(&ready)) unload_locked();
  pthread_mutex_unlock(&state_mu);
  return @N@_OK;
}

/* Loads the library on device 0 at the first call, then makes its context current on this thread. */
static int ensure_ready(const char* fn) {
  if (!atomic_load_explicit(&ready, memory_order_acquire)) {
    pthread_mutex_lock(&state_mu);
    const int rc = atomic_load(&ready) ? @N@_OK : init_locked(fn, 0);
    pthread_mutex_unlock(&state_mu);
    if (rc != @N@_OK) return rc;
  }
  const CUresult r = drv.ctx_set_current(context);
  return r == 0 ? @N@_OK : cuda_failed(fn, "cuCtxSetCurrent", r);
}

/* ---- device memory ---- */

API int @N@_device_alloc(void** ptr, size_t bytes) {
  if (!ptr || bytes == 0) {
    set_error("@N@_device_alloc: %s", !ptr ? "ptr is NULL" : "bytes is 0");
    return @N@_ERROR_ARGUMENT;
  }
  *ptr = NULL;
  int rc = ensure_ready("@N@_device_alloc");
  if (rc != @N@_OK) return rc;
  CUdeviceptr p = 0;
  const CUresult r = drv.mem_alloc(&p, bytes);
  if (r != 0) return cuda_failed("@N@_device_alloc", "cuMemAlloc", r);
  *ptr = (void*)(uintptr_t)p;
  return @N@_OK;
}

API int @N@_device_free(void* ptr) {
  if (!ptr) return @N@_OK;
  int rc = ensure_ready("@N@_device_free");
  if (rc != @N@_OK) return rc;
  const CUresult r = drv.mem_free((CUdeviceptr)(uintptr_t)ptr);
  return r == 0 ? @N@_OK : cuda_failed("@N@_device_free", "cuMemFree", r);
}

API int @N@_copy_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return @N@_OK;
  if (!dst || !src) {
    set_error("@N@_copy_to_device: %s is NULL", !dst ? "dst" : "src");
    return @N@_ERROR_ARGUMENT;
  }
  int rc = ensure_ready("@N@_copy_to_device");
  if (rc != @N@_OK) return rc;
  const CUresult r = drv.memcpy_htod((CUdeviceptr)(uintptr_t)dst, src, bytes);
  return r == 0 ? @N@_OK : cuda_failed("@N@_copy_to_device", "cuMemcpyHtoD", r);
}

API int @N@_copy_to_host(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return @N@_OK;
  if (!dst || !src) {
    set_error("@N@_copy_to_host: %s is NULL", !dst ? "dst" : "src");
    return @N@_ERROR_ARGUMENT;
  }
  int rc = ensure_ready("@N@_copy_to_host");
  if (rc != @N@_OK) return rc;
  const CUresult r = drv.memcpy_dtoh(dst, (CUdeviceptr)(uintptr_t)src, bytes);
  return r == 0 ? @N@_OK : cuda_failed("@N@_copy_to_host", "cuMemcpyDtoH", r);
}

API int @N@_synchronize(void* stream) {
  int rc = ensure_ready("@N@_synchronize");
  if (rc != @N@_OK) return rc;
  const CUresult r = stream ? drv.stream_synchronize((CUstream)stream) : drv.ctx_synchronize();
  return r == 0 ? @N@_OK : cuda_failed("@N@_synchronize", stream ? "cuStreamSynchronize" : "cuCtxSynchronize", r);
}

/* ---- argument checks ---- */

/* Sizes must be >= 0 and their product must fit in int64_t (every buffer's element count then does). */
static UNUSED int check_sizes(const char* fn, const int64_t* sizes, const char* const* names, int n) {
  int64_t product = 1;
  for (int i = 0; i < n; ++i) {
    if (sizes[i] < 0) {
      set_error("%s: %s is %lld; sizes must be >= 0", fn, names[i], (long long)sizes[i]);
      return 0;
    }
    if (__builtin_mul_overflow(product, sizes[i], &product)) {
      set_error("%s: the sizes are too large (their product overflows int64_t)", fn);
      return 0;
    }
  }
  return 1;
}

static UNUSED int check_buffers(const char* fn, const void* const* buffers, const char* const* names, int n) {
  for (int i = 0; i < n; ++i) {
    if (!buffers[i]) {
      set_error("%s: %s is NULL", fn, names[i]);
      return 0;
    }
  }
  return 1;
}

/* The sizes of a convolution or pool (K = C for depthwise convolutions and pools): N, C, H, W, K >= 0;
 * R, S, stride, dilation >= 1; pad >= 0; none above INT32_MAX; the (dilated) window inside the padded
 * input, and for pools pad < R and pad < S. Sets the output extents *OH, *OW. */
static UNUSED int check_window(const char* fn, int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R,
                               int64_t S, int64_t stride, int64_t pad, int64_t dilation, int pool, int64_t* OH,
                               int64_t* OW) {
  const int64_t v[10] = {N, C, H, W, K, R, S, stride, pad, dilation};
  static const char* const names[10] = {"N", "C", "H", "W", "K", "R", "S", "stride", "pad", "dilation"};
  for (int i = 0; i < 10; ++i) {
    const int64_t least = i < 5 || i == 8 ? 0 : 1;
    if (v[i] < least) {
      set_error("%s: %s is %lld; it must be >= %lld", fn, names[i], (long long)v[i], (long long)least);
      return 0;
    }
    if (v[i] > INT32_MAX) {
      set_error("%s: %s is %lld, too large (at most %d)", fn, names[i], (long long)v[i], INT32_MAX);
      return 0;
    }
  }
  if (pool && (pad >= R || pad >= S)) {
    set_error("%s: pad (%lld) must be smaller than the window (%lldx%lld)", fn, (long long)pad, (long long)R,
              (long long)S);
    return 0;
  }
  if (H + 2 * pad < dilation * (R - 1) + 1 || W + 2 * pad < dilation * (S - 1) + 1) {
    set_error("%s: the window (%lldx%lld, dilation %lld) does not fit the padded input (%lldx%lld)", fn,
              (long long)R, (long long)S, (long long)dilation, (long long)(H + 2 * pad), (long long)(W + 2 * pad));
    return 0;
  }
  *OH = (H + 2 * pad - dilation * (R - 1) - 1) / stride + 1;
  *OW = (W + 2 * pad - dilation * (S - 1) - 1) / stride + 1;
  int64_t a, b, c;
  if (__builtin_mul_overflow(N, C, &a) || __builtin_mul_overflow(a, H, &a) || __builtin_mul_overflow(a, W, &a) ||
      __builtin_mul_overflow(K, C, &b) || __builtin_mul_overflow(b, R, &b) || __builtin_mul_overflow(b, S, &b) ||
      __builtin_mul_overflow(N, K, &c) || __builtin_mul_overflow(c, *OH, &c) || __builtin_mul_overflow(c, *OW, &c)) {
    set_error("%s: the sizes are too large (a buffer's element count overflows int64_t)", fn);
    return 0;
  }
  return 1;
}

/* ---- launches ---- */

static int launch_failed(const char* fn, int function, CUresult r) {
  set_error("%s: launching kernel %s failed: %s (CUresult %d)", fn, kFunctions[function].name, error_name(r), r);
  return @N@_ERROR_KERNEL;
}

/* The tensor map `s` of the buffer at `address` (cuTensorMapEncodeTiled). */
static int encode_tensor_map(const char* fn, int function, const struct tensor_map_spec* s, CUdeviceptr address,
                             encoded_tensor_map* out) {
  static const unsigned ones[5] = {1, 1, 1, 1, 1};
  if (!drv.tensor_map_encode_tiled) {
    set_error("%s: kernel %s takes a tensor map, and the CUDA driver has no cuTensorMapEncodeTiled (CUDA 12 or later)",
              fn, kFunctions[function].name);
    return @N@_ERROR_CUDA;
  }
  if (address % 16 != 0) {
    set_error("%s: kernel %s reads a buffer through a tensor map, which needs it 16-byte aligned; it is at 0x%llx", fn,
              kFunctions[function].name, (unsigned long long)address);
    return @N@_ERROR_ARGUMENT;
  }
  const int type = s->element_bytes == 1 ? 0 : s->element_bytes == 2 ? 1 : s->element_bytes == 4 ? 2 : 4;
  const CUresult r = drv.tensor_map_encode_tiled(out, type, (unsigned)s->rank, (void*)(uintptr_t)address, s->dims,
                                                 s->strides, s->box, ones, 0, s->swizzle, 2, 0);
  if (r != 0) {
    set_error("%s: kernel %s: cuTensorMapEncodeTiled failed: %s (CUresult %d)", fn, kFunctions[function].name,
              error_name(r), r);
    return @N@_ERROR_CUDA;
  }
  return @N@_OK;
}

static UNUSED int launch_tuned(const char* fn, const struct launch* launches, int n, const void* const* buffers,
                               void* stream) {
  int rc = ensure_ready(fn);
  if (rc != @N@_OK) return rc;
  for (int i = 0; i < n; ++i) {
    const struct launch* l = &launches[i];
    CUdeviceptr values[MAX_LAUNCH_ARGS];
    encoded_tensor_map maps[MAX_LAUNCH_ARGS];
    void* params[MAX_LAUNCH_ARGS];
    for (int a = 0; a < l->num_args; ++a) {
      values[a] = (CUdeviceptr)(uintptr_t)buffers[l->args[a]];
      params[a] = &values[a];
      if (l->maps[a].rank > 0) {
        rc = encode_tensor_map(fn, l->function, &l->maps[a], values[a], &maps[a]);
        if (rc != @N@_OK) return rc;
        params[a] = &maps[a];
      }
    }
    const CUresult r = drv.launch_kernel(functions[l->function], l->grid[0], l->grid[1], l->grid[2], l->block[0],
                                         l->block[1], l->block[2], l->dynamic_shared_bytes, (CUstream)stream,
                                         params, NULL);
    if (r != 0) return launch_failed(fn, l->function, r);
  }
  return @N@_OK;
}

/* A fallback kernel over `items` (output elements or rows), 128 threads a block, grid-stride beyond 2^20 blocks. */
static UNUSED int launch_fallback(const char* fn, int function, int64_t items, void** params, void* stream) {
  int rc = ensure_ready(fn);
  if (rc != @N@_OK) return rc;
  int64_t blocks = (items + 127) / 128;
  if (blocks > (1 << 20)) blocks = 1 << 20;
  const CUresult r = drv.launch_kernel(functions[function], (unsigned)blocks, 1, 1, 128, 1, 1, 0, (CUstream)stream,
                                       params, NULL);
  return r == 0 ? @N@_OK : launch_failed(fn, function, r);
}

/* The fallback kernels' launches; `function` picks the element type's kernel (FALLBACK_GEMM_F32, ...). */
static UNUSED int fallback_gemm(const char* fn, int function, void* stream, int64_t batch, int64_t M, int64_t N,
                                int64_t K, const void* A, const void* B, const void* bias, void* C, int trans_b, int act) {
  if (batch * M * N == 0) return @N@_OK;
  long long b = batch, m = M, n = N, k = K;
  CUdeviceptr a = (uintptr_t)A, w = (uintptr_t)B, s = (uintptr_t)bias, c = (uintptr_t)C;
  void* params[] = {&b, &m, &n, &k, &a, &w, &s, &c, &trans_b, &act};
  return launch_fallback(fn, function, batch * M * N, params, stream);
}

static UNUSED int fallback_conv2d(const char* fn, int function, void* stream, int64_t N, int64_t C, int64_t H,
                                  int64_t W, int64_t K, int64_t R, int64_t S, int64_t stride, int64_t pad,
                                  int64_t dilation, int64_t groups, int64_t OH, int64_t OW, const void* data,
                                  const void* weight, const void* bias, void* out, int nhwc, int act) {
  if (N * K * OH * OW == 0) return @N@_OK;
  long long v[13] = {N, C, H, W, K, R, S, stride, pad, dilation, groups, OH, OW};
  CUdeviceptr d = (uintptr_t)data, w = (uintptr_t)weight, b = (uintptr_t)bias, o = (uintptr_t)out;
  void* params[] = {&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10],
                    &v[11], &v[12], &d, &w, &b, &o, &nhwc, &act};
  return launch_fallback(fn, function, N * K * OH * OW, params, stream);
}

static UNUSED int fallback_pool2d(const char* fn, int function, void* stream, int64_t N, int64_t C, int64_t H,
                                  int64_t W, int64_t R, int64_t S, int64_t stride, int64_t pad, int64_t OH,
                                  int64_t OW, const void* data, void* out, int average) {
  if (N * C * OH * OW == 0) return @N@_OK;
  long long v[10] = {N, C, H, W, R, S, stride, pad, OH, OW};
  CUdeviceptr d = (uintptr_t)data, o = (uintptr_t)out;
  void* params[] = {&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &d, &o, &average};
  return launch_fallback(fn, function, N * C * OH * OW, params, stream);
}

static UNUSED int fallback_softmax(const char* fn, int function, void* stream, int64_t M, int64_t N, const void* x,
                                   void* y) {
  if (M * N == 0) return @N@_OK;
  long long m = M, n = N;
  CUdeviceptr in = (uintptr_t)x, out = (uintptr_t)y;
  void* params[] = {&m, &n, &in, &out};
  return launch_fallback(fn, function, M, params, stream);
}

static UNUSED int fallback_layer_norm(const char* fn, int function, void* stream, int64_t M, int64_t N, const void* x,
                                      const void* gamma, const void* beta, void* y) {
  if (M * N == 0) return @N@_OK;
  long long m = M, n = N;
  CUdeviceptr in = (uintptr_t)x, g = (uintptr_t)gamma, b = (uintptr_t)beta, out = (uintptr_t)y;
  void* params[] = {&m, &n, &in, &g, &b, &out};
  return launch_fallback(fn, function, M, params, stream);
}
)C";

}  // namespace kiln
