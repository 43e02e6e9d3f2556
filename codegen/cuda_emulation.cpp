// Building CUDA C into an emulated host module (see cuda_emulation.h).
#include "codegen/cuda_emulation.h"

#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "codegen/cuda_emulation_pch.h"
#include "codegen/subprocess.h"
#include "runtime/module.h"

namespace kiln {

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// The host entry point: each launch in order, stopping at the first failure.
std::string entry_point(const CudaSource& src) {
  std::ostringstream os;
  os << "// kiln: the host entry point (packed C ABI, runtime/c_api.h)\n"
     << "extern \"C\" __attribute__((visibility(\"default\"))) int32_t " << src.function << "(void** args) {\n"
     << "  (void)args;\n";
  for (const CudaKernelLaunch& l : src.launches) {
    internal_assert(is_identifier(l.kernel)) << "kernel name '" << l.kernel << "'";
    for (int d = 0; d < 3; ++d) {
      internal_assert(l.grid[d] >= 0 && l.grid[d] <= UINT32_MAX && l.block[d] >= 0 && l.block[d] <= UINT32_MAX)
          << "launch dimensions of " << l.kernel;
    }
    os << "  if (kiln_emu::launch(dim3(" << l.grid[0] << "u, " << l.grid[1] << "u, " << l.grid[2] << "u), dim3("
       << l.block[0] << "u, " << l.block[1] << "u, " << l.block[2] << "u), \"" << l.kernel << "\", [&]() { " << l.kernel
       << "(";
    for (size_t i = 0; i < l.params.size(); ++i) {
      const CudaKernelLaunch::Param& p = l.params[i];
      internal_assert(!p.c_type.empty() && p.arg_index >= 0) << "parameter " << i << " of " << l.kernel;
      const std::string arg = "args[" + std::to_string(p.arg_index) + "]";
      os << (i ? ", " : "");
      if (p.tensor_map.rank > 0) {
        // As a launch through the driver: the map encoded for the buffer's address.
        const rt::cuda::TensorMapSpec& m = p.tensor_map;
        os << "kiln_emu::encode_tensor_map(" << arg << ", " << m.element_bytes << ", " << m.rank << ", {";
        for (int d = 0; d < m.rank; ++d) os << (d ? ", " : "") << m.dims[d] << "ull";
        os << "}, {";
        for (int d = 1; d < m.rank; ++d) os << (d > 1 ? ", " : "") << m.strides[d - 1] << "ull";
        os << "}, {";
        for (int d = 0; d < m.rank; ++d) os << (d ? ", " : "") << m.box[d] << "u";
        os << "}, " << m.swizzle << ")";
      } else if (p.c_type.back() == '*') {
        os << "(" << p.c_type << ")" << arg;
      } else {
        os << "*(" << p.c_type << "*)" << arg;
      }
    }
    // The host entry point opts each kernel in to its dynamic shared memory.
    const int64_t static_bytes = l.shared_bytes - l.dynamic_shared_bytes;
    os << "); }, " << static_bytes << "ll, " << l.dynamic_shared_bytes << "ll, " << l.dynamic_shared_bytes
       << "ll) != 0)\n    return 1;\n";
  }
  os << "  return 0;\n}\n"
     << "extern \"C\" __attribute__((visibility(\"default\"))) const char* kiln_emu_last_error(void) {\n"
     << "  return kiln_emu::last_error();\n}\n";
  // One launcher per kernel with cuLaunchKernel's arguments (kernelParams[i]
  // points at the i-th parameter's value), for a stand-in of the driver.
  for (const CudaKernelLaunch& l : src.launches) {
    os << "extern \"C\" __attribute__((visibility(\"default\"))) int " << kEmulatedKernelPrefix << l.kernel
       << "(const unsigned* grid, const unsigned* block, unsigned dynamic_shared_bytes, unsigned max_dynamic, "
       << "void** params) {\n"
       << "  const dim3 g(grid[0], grid[1], grid[2]), b(block[0], block[1], block[2]);\n"
       // As cuLaunchKernel: the kernel's static shared memory plus the
       // dynamic bytes asked for, within what the kernel is opted in to
       // (max_dynamic); a configuration it refuses returns 2.
       << "  const long long static_bytes = " << l.shared_bytes - l.dynamic_shared_bytes << "ll;\n"
       << "  const std::string bad = kiln_emu::check_config(g, b, static_bytes, dynamic_shared_bytes, max_dynamic);\n"
       << "  if (!bad.empty()) { kiln_emu::set_error(\"cannot launch kernel " << l.kernel
       << ": \" + bad); return 2; }\n"
       << "  return kiln_emu::launch(g, b, \"" << l.kernel << "\", [&]() { " << l.kernel << "(";
    for (size_t i = 0; i < l.params.size(); ++i)
      os << (i ? ", " : "") << "*(" << l.params[i].c_type << "*)params[" << i << "]";
    os << "); }, static_bytes, dynamic_shared_bytes, max_dynamic);\n}\n";
  }
  return os.str();
}

// A file name no other build in this or another process uses.
std::string unique_stem(const std::string& function) {
  static std::atomic<uint64_t> counter{0};
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  std::ostringstream os;
  os << function << "_emu_" << ::getpid() << "_" << counter++ << "_" << std::hex << (now & 0xffffffff);
  return os.str();
}

}  // namespace

std::string host_cxx_compiler() {
  if (const char* env = std::getenv("KILN_HOST_CXX"); env && *env) {
    const std::string path = find_executable(env);
    user_check(!path.empty()) << "KILN_HOST_CXX=" << env
                              << " is not an executable; CUDA emulation needs a host C++ compiler";
    return path;
  }
  for (const char* name : {"c++", "g++", "clang++-14", "clang++"}) {
    const std::string path = find_executable(name);
    if (!path.empty()) return path;
  }
  return "";
}

const std::vector<std::string>& emulated_module_flags() {
  // -fvisibility=hidden: only the entry point and kiln_emu_last_error are exported.
  static const std::vector<std::string> flags = {
    "-std=c++17",
    "-O1",
    "-fPIC",
    "-pthread",
    "-fvisibility=hidden",
#if defined(__x86_64__)
    // The emulation switches stacks by hand (its fibers), which a CET
    // shadow stack would fault on; compilers that enable CET by default
    // (-fcf-protection) would mark the module as compatible with one.
    "-fcf-protection=none",
#endif
  };
  return flags;
}

EmulatedModule build_emulated_module(const CudaSource& src, const std::string& out_dir) {
  internal_assert(is_identifier(src.function)) << "entry point name '" << src.function << "'";
  const std::string cxx = host_cxx_compiler();
  user_check(!cxx.empty()) << "CUDA emulation needs a host C++ compiler (c++, g++ or clang++ on PATH, or set "
                              "KILN_HOST_CXX to one)";
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  user_check(!ec) << "cannot create directory '" << out_dir << "': " << ec.message();

  const std::string stem = out_dir + "/" + unique_stem(src.function);
  const std::string cpp = stem + ".cpp", so = stem + ".so";
  const std::vector<std::string>& flags = emulated_module_flags();
  std::string code = src.code;
  if (!code.empty() && code.back() != '\n') code += '\n';
  // Writes the module's source (including the precompiled header from
  // pch_dir and linking its runtime, or, with pch_dir "", carrying the
  // header's text) and compiles it; true when the compiler succeeded.
  std::string output;
  auto write_and_compile = [&](const std::string& pch_dir) {
    std::ostringstream text;
    int header_lines = 0;
    if (pch_dir.empty()) {
      text << cuda_emulation_header();
      header_lines = count_lines(cuda_emulation_header());
    } else {
      text << "// kiln: compile with " << kLinkedRuntimeFlag << " -iquote " << pch_dir << ", link " << pch_dir << "/"
           << kEmulationRuntimeName << "\n#include \"" << kEmulationHeaderName << "\"\n";
      header_lines = 2;
    }
    // #line: compiler messages and __syncthreads() reports count lines of the CUDA source itself.
    text << "#line 1 \"" << src.function << ".cu\"\n"
         << code << "#line " << header_lines + count_lines(code) + 3 << " \"" << cpp << "\"\n"
         << entry_point(src);
    {
      std::ofstream out(cpp);
      out << text.str();
      user_check(out.good()) << "cannot write '" << cpp << "'";
    }
    std::vector<std::string> argv = {cxx};
    argv.insert(argv.end(), flags.begin(), flags.end());
    if (!pch_dir.empty()) argv.insert(argv.end(), {kLinkedRuntimeFlag, "-iquote", pch_dir});
    argv.insert(argv.end(), {"-shared", "-o", so, cpp});
    if (!pch_dir.empty()) argv.push_back(pch_dir + "/" + kEmulationRuntimeName);
    output.clear();
    const int status = run_process(argv, &output, "the host C++ compiler");
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  };

  const auto start = std::chrono::steady_clock::now();
  const std::string pch_dir = emulation_pch_dir(cxx, flags);
  bool built = write_and_compile(pch_dir);
  if (!built && !pch_dir.empty()) {
    // A damaged runtime object in the cache (a crash right after it was
    // written, a cache shared by machines) must cost time, never the module:
    // it is built from the header's text instead, and when that works the
    // cache was to blame and is made again for the next module.
    const std::string cached_output = output;
    built = write_and_compile("");
    if (built) {
      spdlog::warn(
          "CUDA emulation: a module did not build with the cached runtime in {}, but did from the "
          "header's text; the cache is made again. The compiler said:\n{}",
          pch_dir, cached_output);
      discard_emulation_pch_dir(pch_dir);
    }
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  user_check(built) << "the host C++ compiler (" << cxx << ") could not compile the emulated CUDA source " << cpp
                    << " (a kiln bug):\n"
                    << output;
  EmulatedModule m;
  m.path = so;
  m.entry = src.function;
  m.compile_ms = ms;
  return m;
}

std::string emulated_error(const rt::Module& m) {
  using LastError = const char* (*)();
  auto fn = reinterpret_cast<LastError>(m.get_symbol("kiln_emu_last_error"));
  if (!fn) return "(" + m.path() + " is not an emulated CUDA module)";
  const char* msg = fn();
  return msg ? msg : "";
}

}  // namespace kiln
