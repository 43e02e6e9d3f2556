// NVRTC, the CUDA runtime compiler, for kiln's CUDA backend: CUDA C source to
// PTX and cubin, with the per-kernel resources ptxas reports (registers,
// spills, shared memory). libnvrtc is opened with dlopen on first use, never
// linked, so kiln builds and runs (without the CUDA backend) where the CUDA
// toolkit is missing; nvrtc_available() says whether it is there.
//
// Library search: $KILN_NVRTC (a path to libnvrtc.so) when it is set, and
// nothing else (a KILN_NVRTC that does not load is a user error naming it,
// as KILN_LIBCUDA is for the driver); otherwise libnvrtc.so.13,
// libnvrtc.so.12 and libnvrtc.so through the dynamic loader, then
// /usr/local/cuda/lib64 (and /usr/local/cuda-*/lib64). The first library
// that loads is kept for the whole process; the search runs once.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

struct CudaKernelResources {
  std::string kernel;  // entry function name as ptxas reports it (mangled unless extern "C")
  int registers = 0;   // per thread
  int64_t spill_store_bytes = 0, spill_load_bytes = 0;
  int64_t stack_bytes = 0;     // stack frame
  int64_t shared_bytes = 0;    // static shared memory ("smem")
  int64_t constant_bytes = 0;  // cmem[0] if reported, else 0 (ptxas 13 omits it for sm_90)
  int barriers = 0;
};

struct NvrtcOutput {
  std::string ptx;
  std::vector<char> cubin;
  std::string log;                             // the full NVRTC + ptxas log
  std::vector<CudaKernelResources> resources;  // one per entry function, in ptxas's order
  double compile_ms = 0;                       // wall time of nvrtcCompileProgram
};

// Whether libnvrtc can be loaded; when not, *why says what was tried.
bool nvrtc_available(std::string* why = nullptr);

// NVRTC's version, e.g. {13, 0}; user_error when unavailable.
std::pair<int, int> nvrtc_version();

// The real architectures the loaded NVRTC compiles for (75, 80, ..., 90,
// 100, ...); empty when this NVRTC cannot list them (before 11.2).
// user_error when unavailable.
std::vector<int> nvrtc_supported_archs();

// The libraries tried, in order, for the current environment ($KILN_NVRTC
// alone when set). Loading happens once; changing the environment
// afterwards changes this list but not the library already loaded.
std::vector<std::string> nvrtc_search_paths();

// Compiles CUDA C `source` for `arch` ("sm_75" ... "sm_90", "sm_90a", "sm_100f") to PTX and cubin, with ptxas -v
// so that the resources of every kernel are parsed from the log. user_error for an arch that is not
// sm_<digits>[a|f], one this NVRTC does not support (CUDA 13 dropped sm_70 and sm_72), a missing NVRTC, or a
// compile error ("NVRTC could not compile <file_name> for <arch>:\n<log>").
NvrtcOutput nvrtc_compile(const std::string& source, const std::string& file_name, const std::string& arch,
                          const std::vector<std::string>& extra_options = {});

// Parses ptxas "-v" info lines ("Compiling entry function 'k' for 'sm_90'", "Function properties for k",
// "N bytes stack frame, N bytes spill stores, N bytes spill loads", "Used N registers, used N barriers, N bytes smem,
// N bytes cmem[0]"). Missing fields stay 0; other lines, and the properties of non-entry (device) functions, are
// ignored.
std::vector<CudaKernelResources> parse_ptxas_info(const std::string& log);

}  // namespace kiln
