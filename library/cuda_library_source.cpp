// Generates a cuda kernel library's header and C source (see
// cuda_library_source.h).
#include "library/cuda_library_source.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "base/error.h"
#include "library/cuda_fallback_kernels.h"
#include "library/cuda_library_runtime_c.h"
#include "library/source_text.h"

namespace kiln {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// A (family, dtype) pair: one dispatcher.
using FamilyKey = std::pair<std::string, std::string>;

// The C element type of a dtype's buffers: 16-bit patterns for f16 and bf16.
std::string c_type(const std::string& dtype) { return dtype == "f32" ? "float" : "uint16_t"; }

std::vector<std::string> buffer_params(const CudaFamily& f, const std::string& dtype) {
  std::vector<std::string> p;
  for (size_t i = 0; i < f.buffers.size(); ++i)
    p.push_back((i + 1 == f.buffers.size() ? "" : "const ") + c_type(dtype) + "* " + f.buffers[i]);
  p.push_back("void* stream");
  return p;
}

std::string dispatcher_name(const CudaLibrarySource& lib, const FamilyKey& key) {
  return lib.name + "_" + key.first + "_" + key.second;
}

std::string dispatcher_params(const CudaFamily& f, const std::string& dtype) {
  std::vector<std::string> p;
  for (const std::string& s : f.sizes) p.push_back("int64_t " + s);
  for (const std::string& b : buffer_params(f, dtype)) p.push_back(b);
  return join(p, ", ");
}

// (family, dtype) pairs in first-seen order.
std::vector<FamilyKey> families(const CudaLibrarySource& lib) {
  std::vector<FamilyKey> out;
  for (const auto& k : lib.kernels) {
    const FamilyKey key{k.family, k.dtype};
    if (std::find(out.begin(), out.end(), key) == out.end()) out.push_back(key);
  }
  return out;
}

std::vector<const CudaLibraryKernel*> kernels_of(const CudaLibrarySource& lib, const FamilyKey& key) {
  std::vector<const CudaLibraryKernel*> out;
  for (const auto& k : lib.kernels)
    if (k.family == key.first && k.dtype == key.second) out.push_back(&k);
  return out;
}

std::string shape_text(const CudaFamily& f, const CudaLibraryKernel& k) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < f.sizes.size(); ++i)
    parts.push_back(f.sizes[i] + "=" + std::to_string(k.shape.at(f.size_params[i])));
  return join(parts, ",");
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::vector<std::string> q;
  for (const std::string& n : names) q.push_back("\"" + n + "\"");
  return join(q, ", ");
}

std::string buffer_checks(const CudaFamily& f) {
  std::ostringstream os;
  os << "  const void* const buffers[" << f.buffers.size() << "] = {" << join(f.buffers, ", ") << "};\n"
     << "  static const char* const buffer_names[" << f.buffers.size() << "] = {" << quoted_list(f.buffers) << "};\n"
     << "  if (!check_buffers(__func__, buffers, buffer_names, " << f.buffers.size() << ")) return ERROR_ARGUMENT;\n";
  return os.str();
}

std::string dispatcher(const CudaLibrarySource& lib, const FamilyKey& key) {
  const CudaFamily f = cuda_family(key.first);
  std::ostringstream os;
  os << "API int " << dispatcher_name(lib, key) << "(" << dispatcher_params(f, key.second) << ") {\n"
     << cuda_family_checks(f) << buffer_checks(f);
  std::vector<std::string> args = f.buffers;
  args.push_back("stream");
  for (const CudaLibraryKernel* k : kernels_of(lib, key)) {
    std::vector<std::string> conds;
    for (size_t i = 0; i < f.sizes.size(); ++i)
      conds.push_back(f.sizes[i] + " == " + std::to_string(k->shape.at(f.size_params[i])));
    os << "  if (" << join(conds, " && ") << ") return " << k->entry << "(" << join(args, ", ") << ");\n";
  }
  os << "  return " << cuda_fallback_call(f, key.second) << ";\n}\n";
  return os.str();
}

}  // namespace

std::string launch_initializer(int function, const std::array<int64_t, 3>& grid, const std::array<int64_t, 3>& block,
                               int64_t shared_bytes, int64_t dynamic_shared_bytes, const std::vector<int>& args,
                               const std::vector<rt::cuda::TensorMapSpec>& tensor_maps) {
  std::vector<std::string> a;
  for (int x : args) a.push_back(std::to_string(x));
  std::ostringstream os;
  os << "{" << function << ", {" << grid[0] << ", " << grid[1] << ", " << grid[2] << "}, {" << block[0] << ", "
     << block[1] << ", " << block[2] << "}, " << shared_bytes << ", " << dynamic_shared_bytes << ", " << args.size()
     << ", {" << join(a, ", ") << "}";
  if (!tensor_maps.empty()) {
    internal_assert(tensor_maps.size() == args.size()) << tensor_maps.size() << " tensor maps for " << args.size();
    std::vector<std::string> maps;
    for (const rt::cuda::TensorMapSpec& m : tensor_maps) {
      std::ostringstream t;
      t << "{" << m.rank << ", " << m.element_bytes << ", {";
      for (int d = 0; d < rt::cuda::kMaxTensorMapRank; ++d) t << (d ? ", " : "") << m.dims[d] << "ull";
      t << "}, {";
      for (int d = 0; d + 1 < rt::cuda::kMaxTensorMapRank; ++d) t << (d ? ", " : "") << m.strides[d] << "ull";
      t << "}, {";
      for (int d = 0; d < rt::cuda::kMaxTensorMapRank; ++d) t << (d ? ", " : "") << m.box[d] << "u";
      t << "}, " << rt::cuda::tensor_map_swizzle_mode(m.swizzle) << "}";
      maps.push_back(t.str());
    }
    os << ", {" << join(maps, ", ") << "}";
  } else {
    // No maps: zero them explicitly, as -Wextra (missing-field-initializers) wants every member written.
    os << ", {{0}}";
  }
  os << "}";
  return os.str();
}

namespace {

std::string entry_point(const CudaLibraryKernel& k) {
  const CudaFamily f = cuda_family(k.family);
  std::ostringstream os;
  os << "API int " << k.entry << "(" << join(buffer_params(f, k.dtype), ", ") << ") {\n" << buffer_checks(f);
  os << "  static const struct launch launches[" << k.launches.size() << "] = {\n";
  for (const CudaLibraryLaunch& l : k.launches) {
    internal_assert(l.args.size() <= 8) << k.entry << ": a launch with " << l.args.size() << " arguments";
    for (int a : l.args)
      internal_assert(a >= 0 && a < static_cast<int>(f.buffers.size())) << k.entry << ": argument " << a;
    os << "      "
       << launch_initializer(l.function, l.grid, l.block, l.shared_bytes, l.dynamic_shared_bytes, l.args, l.tensor_maps)
       << ",\n";
  }
  os << "  };\n  return launch_tuned(__func__, launches, " << k.launches.size() << ", buffers, stream);\n}\n";
  return os.str();
}

std::string image_array(size_t index, const std::vector<char>& image) {
  std::ostringstream os;
  // 8-byte aligned: the driver reads a cubin's ELF headers in place.
  os << "static const unsigned char image" << index << "[" << image.size() << "] __attribute__((aligned(8))) = {";
  for (size_t i = 0; i < image.size(); ++i) {
    if (i % 24 == 0) os << "\n ";
    os << static_cast<unsigned>(static_cast<unsigned char>(image[i])) << ",";
  }
  os << "\n};\n";
  return os.str();
}

}  // namespace

std::string cuda_device_memory_declarations(const std::string& N) {
  return "/* Device memory through the driver, for programs that do not use the CUDA runtime. Copies are\n"
         " * synchronous; " +
         N +
         "_synchronize(stream) waits for the stream's work (NULL: the whole device). */\n"
         "int " +
         N +
         "_device_alloc(void** ptr, size_t bytes);\n"
         "int " +
         N +
         "_device_free(void* ptr);\n"
         "int " +
         N +
         "_copy_to_device(void* device_dst, const void* host_src, size_t bytes);\n"
         "int " +
         N +
         "_copy_to_host(void* host_dst, const void* device_src, size_t bytes);\n"
         "int " +
         N + "_synchronize(void* stream);\n";
}

std::string cuda_library_header(const CudaLibrarySource& lib) {
  std::ostringstream os;
  const std::string& N = lib.name;
  const std::string guard = upper(N) + "_H_";
  os << "/* " << N << ".h: tuned CUDA kernels, generated by kiln " << lib.kiln_version << " (`kiln lib --target cuda`)\n"
     << " * for " << lib.arch << (lib.emulated ? " -- TEST BUILD: its kernels are emulated modules that run only under kiln's\n"
                                               " * stand-in CUDA driver (KILN_GPU_IMAGE=emulated), never on a GPU"
                                             : " (the kernels are cubins for that architecture)")
     << ".\n"
     << " *\n"
     << " * Link lib" << N << ".a (and -lpthread -ldl) or lib" << N << ".so. Nothing of CUDA is linked: the library\n"
     << " * opens the CUDA driver (libcuda.so.1, or $KILN_LIBCUDA) with dlopen at its first call.\n"
     << " *\n"
     << " * Every function returns " << N << "_OK (0) on success, else an " << N << "_ERROR_* code, and then\n"
     << " * " << N << "_last_error() says what failed (per thread). Buffers are device pointers (cudaMalloc,\n"
     << " * cuMemAlloc or " << N << "_device_alloc) to dense row-major arrays: float for _f32 functions,\n"
     << " * 16-bit patterns (uint16_t: IEEE half, or bfloat16) for _f16 and _bf16 ones, whose kernels compute\n"
     << " * in f32 and round each result to nearest even. `stream` is a CUstream\n"
     << " * (a cudaStream_t), NULL for the default stream. Kernels are launched asynchronously on the\n"
     << " * stream: a kernel's own failure shows at the next synchronization (" << N << "_synchronize).\n"
     << " * The output must not overlap an input.\n"
     << " *\n"
     << " * Device: the first call (or " << N << "_init(device)) loads the kernels into the primary context of\n"
     << " * device 0 (or `device`), the context the CUDA runtime API uses; every call makes that context\n"
     << " * current on the calling thread. The functions may be called from any thread; " << N << "_init and\n"
     << " * " << N << "_unload must not run while another thread uses the library.\n"
     << " *\n"
     << " * Each op family has a dispatcher that runs the tuned kernel when the shape equals a tuned shape\n"
     << " * exactly, and otherwise a simple generic CUDA kernel (correct for every shape, not fast).\n"
     << " * Each tuned kernel also has its own entry point (fixed shape, same buffers).\n"
     << " * " << N << "_HAVE_<family>_<type> is defined (to 1) for each dispatcher the library has.\n"
     << " *\n"
     << " * Dispatchers:\n";
  for (const FamilyKey& key : families(lib))
    os << " *   " << dispatcher_name(lib, key) << ": " << cuda_family(key.first).summary << "\n";
  os << " * Tuned kernels (measured GFLOP/s, and the target they were tuned on):\n";
  for (const auto& k : lib.kernels)
    os << " *   " << k.entry << ": " << k.workload << ", " << static_cast<int64_t>(k.gflops * 10 + 0.5) / 10.0
       << " GFLOP/s on " << k.tuned_on << "\n";
  os << " */\n"
     << "#ifndef " << guard << "\n#define " << guard << "\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
     << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
     << "#define " << N << "_OK 0\n"
     << "#define " << N << "_ERROR_ARGUMENT 1 /* a negative or too large size, a NULL pointer, a bad device */\n"
     << "#define " << N << "_ERROR_MEMORY 2   /* device memory could not be allocated */\n"
     << "#define " << N << "_ERROR_KERNEL 3   /* a kernel could not be launched */\n"
     << "#define " << N
     << "_ERROR_CUDA 4     /* no driver or GPU, a GPU of another architecture, a failed driver call */\n"
     << "#define " << N << "_ARCH \"" << lib.arch << "\"\n\n"
     << "/* What the calling thread's last failed call said (\"\" when none failed). */\n"
     << "const char* " << N << "_last_error(void);\n"
     << "/* Loads the kernels on `device` (optional: the first call loads them on device 0). */\n"
     << "int " << N << "_init(int device);\n"
     << "/* Unloads the kernels and releases the device's context; a later call loads them again. */\n"
     << "int " << N << "_unload(void);\n"
     << cuda_device_memory_declarations(N) << "\n";
  for (const FamilyKey& key : families(lib)) {
    const CudaFamily f = cuda_family(key.first);
    std::vector<std::string> shapes;
    for (const CudaLibraryKernel* k : kernels_of(lib, key)) shapes.push_back(shape_text(f, *k));
    os << "/* " << f.summary << "; tuned for: " << join(shapes, "; ") << " */\n"
       << "#define " << N << "_HAVE_" << key.first << "_" << key.second << " 1\n"
       << "int " << dispatcher_name(lib, key) << "(" << dispatcher_params(f, key.second) << ");\n";
    for (const CudaLibraryKernel* k : kernels_of(lib, key))
      os << "int " << k->entry << "(" << join(buffer_params(f, key.second), ", ") << ");\n";
    os << "\n";
  }
  os << "#ifdef __cplusplus\n}  /* extern \"C\" */\n#endif\n\n#endif /* " << guard << " */\n";
  return os.str();
}

std::string cuda_driver_c_source(const std::string& name, const std::string& arch, bool emulated,
                                 const std::vector<std::vector<char>>& images,
                                 const std::vector<CudaLibrarySource::Function>& functions) {
  internal_assert(arch.size() >= 5 && starts_with(arch, "sm_")) << "arch " << arch;
  std::string digits = arch.substr(3);
  const bool exact = !digits.empty() && std::isalpha(static_cast<unsigned char>(digits.back()));
  if (exact) digits.pop_back();
  const std::string major = digits.substr(0, digits.size() - 1), minor = digits.substr(digits.size() - 1);

  std::ostringstream os;
  os << replace_all(kCudaLibraryPreludeC, "@N@", name);
  os << "\n/* ---- the kernels' images (" << (emulated ? "emulated modules for kiln's test driver" : "cubins")
     << ") ---- */\n";
  for (size_t i = 0; i < images.size(); ++i) os << image_array(i, images[i]);
  os << "#define NUM_IMAGES " << images.size() << "\n";
  os << "static const void* const kImages[NUM_IMAGES] = {";
  for (size_t i = 0; i < images.size(); ++i) os << (i ? ", " : "") << "image" << i;
  os << "};\n";
  os << "#define NUM_FUNCTIONS " << functions.size() << "\n";
  os << "static const struct function_ref kFunctions[NUM_FUNCTIONS] = {\n";
  for (const auto& f : functions)
    os << "    {" << f.image << ", \"" << f.name << "\", " << f.dynamic_shared_bytes << "},\n";
  os << "};\n";
  std::string runtime = replace_all(kCudaLibraryRuntimeC, "@N@", name);
  runtime = replace_all(runtime, "@ARCH@", arch);
  runtime = replace_all(runtime, "@MAJOR@", major);
  runtime = replace_all(runtime, "@MINOR@", minor);
  os << replace_all(runtime, "@EXACT@", exact ? "1" : "0");
  return os.str();
}

std::string cuda_library_c_source(const CudaLibrarySource& lib) {
  std::ostringstream os;
  os << "/* " << lib.name << ".c: the CUDA kernel library " << lib.name << " for " << lib.arch << ", generated by kiln "
     << lib.kiln_version << " (`kiln lib --target cuda`). See " << lib.name << ".h.\n"
     << " * Images: the tuned kernels' one each, then the fallback kernels'. */\n";
  os << cuda_driver_c_source(lib.name, lib.arch, lib.emulated, lib.images, lib.functions);
  os << "#define ERROR_ARGUMENT " << lib.name << "_ERROR_ARGUMENT\n";
  const std::vector<std::string>& fallbacks = cuda_fallback_kernels();
  for (size_t i = 0; i < fallbacks.size(); ++i) {
    internal_assert(lib.functions.at(lib.fallback_functions + i).name == fallbacks[i]) << "fallback " << fallbacks[i];
    os << "#define FALLBACK_" << upper(fallbacks[i].substr(std::string("kiln_fallback_").size())) << " "
       << lib.fallback_functions + i << "\n";
  }
  os << "\n/* ---- entry points of the tuned kernels ---- */\n\n";
  for (const auto& k : lib.kernels) os << entry_point(k) << "\n";
  os << "/* ---- dispatchers ---- */\n\n";
  for (const FamilyKey& key : families(lib)) os << dispatcher(lib, key) << "\n";
  return os.str();
}

}  // namespace kiln
