// NVRTC through dlopen (codegen/nvrtc.h). The few NVRTC entry points kiln uses
// are declared here as function-pointer types, so no CUDA header is needed to
// build kiln; the library is searched for once, on first use, and its handle
// stays open for the life of the process.
#include "codegen/nvrtc.h"

#include <dlfcn.h>
#include <glob.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>

#include "base/error.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// nvrtc.h: nvrtcResult is a C enum (NVRTC_SUCCESS = 0), nvrtcProgram an opaque pointer.
using NvrtcResult = int;
constexpr NvrtcResult kNvrtcSuccess = 0;
using NvrtcProgram = struct NvrtcProgramImpl*;

struct Nvrtc {
  void* handle = nullptr;
  std::string path;         // the library that loaded
  std::string include_dir;  // the toolkit's include folder (cuda_fp16.h), or empty
  std::string why;          // when handle is null: every path tried and why it failed
  std::string env_path;     // $KILN_NVRTC when it was set: the only path tried
  // The entry points, with nvrtc.h's signatures.
  const char* (*get_error_string)(NvrtcResult) = nullptr;
  NvrtcResult (*version)(int* major, int* minor) = nullptr;
  NvrtcResult (*get_num_supported_archs)(int*) = nullptr;  // optional (NVRTC 11.2+)
  NvrtcResult (*get_supported_archs)(int*) = nullptr;      // optional (NVRTC 11.2+)
  NvrtcResult (*create_program)(NvrtcProgram*, const char* src, const char* name, int num_headers,
                                const char* const* headers, const char* const* include_names) = nullptr;
  NvrtcResult (*destroy_program)(NvrtcProgram*) = nullptr;
  NvrtcResult (*compile_program)(NvrtcProgram, int num_options, const char* const* options) = nullptr;
  NvrtcResult (*get_program_log_size)(NvrtcProgram, size_t*) = nullptr;
  NvrtcResult (*get_program_log)(NvrtcProgram, char*) = nullptr;
  NvrtcResult (*get_ptx_size)(NvrtcProgram, size_t*) = nullptr;
  NvrtcResult (*get_ptx)(NvrtcProgram, char*) = nullptr;
  NvrtcResult (*get_cubin_size)(NvrtcProgram, size_t*) = nullptr;  // NVRTC 11.1+
  NvrtcResult (*get_cubin)(NvrtcProgram, char*) = nullptr;
};

// Resolves every entry point kiln needs; on a missing one, returns its name.
std::string resolve_symbols(Nvrtc& lib) {
  std::string missing;
  auto sym = [&](auto& fn, const char* name, bool required = true) {
    fn = reinterpret_cast<std::decay_t<decltype(fn)>>(dlsym(lib.handle, name));
    if (!fn && required && missing.empty()) missing = name;
  };
  sym(lib.get_error_string, "nvrtcGetErrorString");
  sym(lib.version, "nvrtcVersion");
  sym(lib.get_num_supported_archs, "nvrtcGetNumSupportedArchs", false);
  sym(lib.get_supported_archs, "nvrtcGetSupportedArchs", false);
  sym(lib.create_program, "nvrtcCreateProgram");
  sym(lib.destroy_program, "nvrtcDestroyProgram");
  sym(lib.compile_program, "nvrtcCompileProgram");
  sym(lib.get_program_log_size, "nvrtcGetProgramLogSize");
  sym(lib.get_program_log, "nvrtcGetProgramLog");
  sym(lib.get_ptx_size, "nvrtcGetPTXSize");
  sym(lib.get_ptx, "nvrtcGetPTX");
  sym(lib.get_cubin_size, "nvrtcGetCUBINSize");
  sym(lib.get_cubin, "nvrtcGetCUBIN");
  return missing;
}

// NVRTC 13 has no CUDA headers built in: without --include-path, `#include <cuda_fp16.h>` fails with "could not
// open source file "cuda_fp16.h" (no directories in search list)". Prefer the headers next to the loaded library
// (same toolkit version), then $CUDA_HOME, $CUDA_PATH and /usr/local/cuda.
std::string find_include_dir(const std::string& so) {
  std::vector<fs::path> candidates;
  std::error_code ec;
  if (fs::path(so).is_absolute()) {
    candidates.push_back(fs::path(so).parent_path() / ".." / "include");
    fs::path real = fs::canonical(so, ec);
    if (!ec) candidates.push_back(real.parent_path() / ".." / "include");
  }
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* dir = std::getenv(var); dir && *dir) candidates.push_back(fs::path(dir) / "include");
  candidates.push_back("/usr/local/cuda/include");
  for (const fs::path& dir : candidates) {
    if (fs::exists(dir / "cuda_fp16.h", ec)) return fs::weakly_canonical(dir, ec).string();
  }
  return "";
}

Nvrtc load_nvrtc() {
  Nvrtc lib;
  std::ostringstream tried;
  if (const char* env = std::getenv("KILN_NVRTC"); env && *env) lib.env_path = env;
  for (const std::string& path : nvrtc_search_paths()) {
    lib.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib.handle) {
      const char* err = dlerror();  // "<path>: cannot open shared object file: ..." names the path itself
      tried << "\n  " << (err && std::string(err).rfind(path + ":", 0) == 0 ? "" : path + ": ")
            << (err ? err : "cannot be loaded");
      continue;
    }
    std::string missing = resolve_symbols(lib);
    if (!missing.empty()) {
      tried << "\n  " << path << ": loaded, but has no " << missing << " (NVRTC 11.1 or newer is needed)";
      dlclose(lib.handle);
      lib.handle = nullptr;
      continue;
    }
    Dl_info info{};  // the file the loader found for a bare soname
    bool located = dladdr(reinterpret_cast<void*>(lib.version), &info) && info.dli_fname && *info.dli_fname;
    lib.path = located ? info.dli_fname : path;
    lib.include_dir = find_include_dir(lib.path);
    spdlog::debug("NVRTC: loaded {}, CUDA headers in '{}'", lib.path, lib.include_dir);
    return lib;
  }
  // KILN_NVRTC names the one library to use: a path that does not load is
  // an error, not a reason to quietly take another NVRTC.
  lib.why = lib.env_path.empty()
                ? "tried:" + tried.str()
                : "KILN_NVRTC=" + lib.env_path + " could not be loaded (" + tried.str().substr(3) + ")";
  return lib;
}

const Nvrtc& nvrtc() {
  static const Nvrtc lib = load_nvrtc();  // initialized once, thread-safe
  return lib;
}

const Nvrtc& loaded_nvrtc() {
  const Nvrtc& lib = nvrtc();
  if (!lib.handle && !lib.env_path.empty())
    user_error() << "NVRTC: " << lib.why
                 << "\nSet KILN_NVRTC to the path of libnvrtc.so from the CUDA toolkit, or unset it to search the "
                    "usual places.";
  if (!lib.handle)
    user_error() << "NVRTC (libnvrtc.so from the CUDA toolkit) was not found; " << lib.why
                 << "\nInstall the CUDA toolkit, or set KILN_NVRTC to the path of libnvrtc.so.";
  return lib;
}

void check(const Nvrtc& lib, NvrtcResult r, const char* call) {
  if (r != kNvrtcSuccess) user_error() << "NVRTC: " << call << " failed: " << lib.get_error_string(r);
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "sm_90a" -> 90; user_error for anything but sm_<digits> with an optional 'a' or 'f' suffix.
int parse_arch(const std::string& arch) {
  size_t end = arch.size();
  if (end > 3 && (arch.back() == 'a' || arch.back() == 'f')) --end;
  std::string digits = arch.size() > 3 ? arch.substr(3, end - 3) : "";
  if (arch.compare(0, 3, "sm_") != 0 || !all_digits(digits) || digits.size() > 4)
    user_error() << "invalid CUDA architecture \"" << arch
                 << "\": expected sm_<number> with an optional 'a' or 'f' suffix, such as sm_80 or sm_90a";
  return std::stoi(digits);
}

// One of NVRTC's size + bytes outputs (log, PTX, cubin); `text` drops the terminating NUL.
std::string read_output(const Nvrtc& lib, NvrtcProgram prog, NvrtcResult (*size_fn)(NvrtcProgram, size_t*),
                        NvrtcResult (*bytes_fn)(NvrtcProgram, char*), const char* what, bool text) {
  size_t size = 0;
  check(lib, size_fn(prog, &size), what);
  std::string bytes(size, '\0');
  if (size > 0) check(lib, bytes_fn(prog, bytes.data()), what);
  while (text && !bytes.empty() && bytes.back() == '\0') bytes.pop_back();
  return bytes;
}

// The numbers of a ptxas info line ("Used 14 registers, used 1 barriers, 1024 bytes smem" or "0 bytes stack frame,
// 8 bytes spill stores, ..."): in each comma-separated item, the first all-digit word is the value and the words
// after it name the field. Unknown fields are ignored.
void apply_items(const std::string& line, CudaKernelResources* k) {
  int64_t registers = k->registers, barriers = k->barriers;
  const std::pair<const char*, int64_t*> fields[] = {
      {"registers", &registers},
      {"barriers", &barriers},
      {"bytes smem", &k->shared_bytes},
      {"bytes cmem[0]", &k->constant_bytes},
      {"bytes stack frame", &k->stack_bytes},
      {"bytes spill stores", &k->spill_store_bytes},
      {"bytes spill loads", &k->spill_load_bytes},
  };
  std::istringstream items(line);
  for (std::string item; std::getline(items, item, ',');) {
    std::istringstream words(item);
    std::string word, unit;
    int64_t n = -1;
    while (words >> word) {
      if (n >= 0)
        unit += (unit.empty() ? "" : " ") + word;
      else if (all_digits(word) && word.size() <= 18)
        n = std::stoll(word);
    }
    for (const auto& [name, field] : fields)
      if (n >= 0 && unit == name) *field = n;
  }
  k->registers = static_cast<int>(registers);
  k->barriers = static_cast<int>(barriers);
}

}  // namespace

std::vector<std::string> nvrtc_search_paths() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("KILN_NVRTC"); env && *env) return {env};
  for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) paths.push_back(name);
  paths.push_back("/usr/local/cuda/lib64/libnvrtc.so.13");
  paths.push_back("/usr/local/cuda/lib64/libnvrtc.so");
  glob_t g{};
  if (glob("/usr/local/cuda-*/lib64/libnvrtc.so", 0, nullptr, &g) == 0) {
    for (size_t i = g.gl_pathc; i-- > 0;) paths.push_back(g.gl_pathv[i]);  // newest toolkit first
  }
  globfree(&g);
  return paths;
}

bool nvrtc_available(std::string* why) {
  const Nvrtc& lib = nvrtc();
  if (!lib.handle && why) *why = lib.why;
  return lib.handle != nullptr;
}

std::pair<int, int> nvrtc_version() {
  const Nvrtc& lib = loaded_nvrtc();
  int major = 0, minor = 0;
  check(lib, lib.version(&major, &minor), "nvrtcVersion");
  return {major, minor};
}

std::vector<int> nvrtc_supported_archs() {
  const Nvrtc& lib = loaded_nvrtc();
  if (!lib.get_num_supported_archs || !lib.get_supported_archs) return {};
  int n = 0;
  check(lib, lib.get_num_supported_archs(&n), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(std::max(n, 0));
  if (n > 0) check(lib, lib.get_supported_archs(archs.data()), "nvrtcGetSupportedArchs");
  return archs;
}

NvrtcOutput nvrtc_compile(const std::string& source, const std::string& file_name, const std::string& arch,
                          const std::vector<std::string>& extra_options) {
  int arch_number = parse_arch(arch);
  const Nvrtc& lib = loaded_nvrtc();
  std::vector<int> supported = nvrtc_supported_archs();
  if (!supported.empty() && std::find(supported.begin(), supported.end(), arch_number) == supported.end()) {
    auto [major, minor] = nvrtc_version();
    std::ostringstream list;
    for (int a : supported) list << (a == supported.front() ? "" : ", ") << "sm_" << a;
    user_error() << "NVRTC " << major << "." << minor << " (" << lib.path << ") does not support " << arch
                 << "; it compiles for " << list.str();
  }

  std::vector<std::string> options = {"--gpu-architecture=" + arch, "--std=c++17", "--ptxas-options=-v"};
  if (!lib.include_dir.empty()) options.push_back("--include-path=" + lib.include_dir);
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  std::vector<const char*> option_ptrs;
  for (const std::string& o : options) option_ptrs.push_back(o.c_str());

  NvrtcProgram prog = nullptr;
  check(lib, lib.create_program(&prog, source.c_str(), file_name.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  auto destroy = [&lib](NvrtcProgram* p) { lib.destroy_program(p); };
  std::unique_ptr<NvrtcProgram, decltype(destroy)> guard(&prog, destroy);

  NvrtcOutput out;
  auto start = std::chrono::steady_clock::now();
  NvrtcResult result = lib.compile_program(prog, static_cast<int>(option_ptrs.size()), option_ptrs.data());
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  out.log = read_output(lib, prog, lib.get_program_log_size, lib.get_program_log, "nvrtcGetProgramLog", true);
  if (result != kNvrtcSuccess)
    user_error() << "NVRTC could not compile " << file_name << " for " << arch << ":\n"
                 << (out.log.empty() ? lib.get_error_string(result) : out.log);

  out.ptx = read_output(lib, prog, lib.get_ptx_size, lib.get_ptx, "nvrtcGetPTX", true);
  std::string cubin = read_output(lib, prog, lib.get_cubin_size, lib.get_cubin, "nvrtcGetCUBIN", false);
  out.cubin.assign(cubin.begin(), cubin.end());
  out.resources = parse_ptxas_info(out.log);
  spdlog::debug("NVRTC: compiled {} for {} in {:.1f} ms, {} kernel(s)", file_name, arch, out.compile_ms,
                out.resources.size());
  return out;
}

std::vector<CudaKernelResources> parse_ptxas_info(const std::string& log) {
  std::vector<CudaKernelResources> kernels;
  int current = -1;     // the entry function being compiled ("Used N registers" lines)
  int properties = -1;  // the entry function whose "Function properties" block this is; -1 for device functions
  std::istringstream lines(log);
  std::string line;
  auto find_kernel = [&](const std::string& name) {
    for (int i = static_cast<int>(kernels.size()) - 1; i >= 0; --i)
      if (kernels[i].kernel == name) return i;
    return -1;
  };
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (size_t at = line.find("Compiling entry function"); at != std::string::npos) {
      size_t open = line.find('\'', at), close = open == std::string::npos ? open : line.find('\'', open + 1);
      if (close == std::string::npos || close == open + 1) continue;  // 'name' missing
      std::string name = line.substr(open + 1, close - open - 1);
      kernels.push_back(CudaKernelResources{});
      kernels.back().kernel = name;
      current = static_cast<int>(kernels.size()) - 1;
      properties = -1;
    } else if (size_t at = line.find("Function properties for "); at != std::string::npos) {
      std::string name = line.substr(at + 24);
      name.erase(name.find_last_not_of(" \t") + 1);
      properties = find_kernel(name);
    } else if (line.find("bytes stack frame") != std::string::npos) {
      if (properties >= 0) apply_items(line, &kernels[properties]);
    } else if (size_t at = line.find("Used ");
               at != std::string::npos && current >= 0 && line.find(" registers") != std::string::npos) {
      apply_items(line.substr(at), &kernels[current]);
    }
  }
  return kernels;
}

}  // namespace kiln
