// Running kiln's CUDA C on the CPU: the source the CUDA backend prints
// (codegen/cuda_module.h) is compiled by the host C++ compiler against an
// emulation header, so GPU kernels run and are checked where there is no GPU.
//
// The emulation runs every block of a launch one after another (x fastest),
// each CUDA thread a fiber of the launching thread (a stack of its own),
// meeting at __syncthreads(): a thread runs until it waits; warp
// shuffles exchange values through a per-warp barrier with CUDA's semantics
// for full masks. It reports, as a failed launch rather than a crash or a
// hang: races on shared arrays (a thread reads or writes an element another
// thread wrote, or writes one another read, with no __syncthreads() or
// mbarrier phase in between), shared indices out of bounds, misaligned vector accesses, barrier
// divergence and invalid launch configurations.
//
// mbarriers (codegen/cuda_mbarrier_prelude.h) keep their phases and
// arrival counts; a completed phase orders the accesses its arrivals made
// before those of the threads that wait for it (each thread's clock counts
// its arrivals, and waits join the arrivals' clocks, beside the epochs), so
// producer and consumer warps may hand slots back and forth with no
// __syncthreads(); in such launches a warp operation joins its lanes'
// clocks too (one elected lane may arrive for its warp). Bulk copies
// (cp.async.bulk) count their bytes on a barrier, and their elements may
// not be touched until that phase completes. A wait that no running thread
// can complete is reported as a deadlock.
//
// Tensor-core instructions (codegen/cuda_mma_prelude.h) run lane by lane:
// ldmatrix and mma.sync exchange every lane's addresses and fragments
// (warp_exchange) and each lane computes its part in the PTX ISA's layout;
// a warp-wide call that some lanes do not make is reported by name.
//
// Limits: one launch at a time per module; race detection covers KILN_SHARED
// arrays only, and orders warp-synchronous accesses correctly for full-mask
// warp operations only; arrays that share pool bytes are ordered by
// __syncthreads() only; a cp.async copy that arrives on an mbarrier lands
// when the arrival is made; a thread looping forever hangs the launch (one
// that polls memory another thread writes must call an atomic or a fence,
// where the other threads get to run); atomics work on global memory only.
#pragma once

#include <string>
#include <vector>

#include "codegen/cuda_module.h"

namespace kiln {

namespace rt {
class Module;
}

// C++17 text that makes kiln's CUDA C compile as host C++; it defines
// KILN_CUDA_EMULATION, the CUDA built-ins kiln uses (qualifiers, dim3 and the
// thread indices, float2/float4, math, __syncthreads, __syncwarp and the
// shuffles, ballots, atomics) and KILN_SHARED, and the launcher
//   namespace kiln_emu {
//     int launch(dim3 grid, dim3 block, const char* kernel_name, std::function<void()> body,
//                long long shared_bytes = 0);  // 0 on success
//     const char* last_error();                 // this thread's last failed launch, or ""
//   }
// Compile it with -std=c++17 -pthread. The emulator's state has internal
// linkage, so every module has its own.
const std::string& cuda_emulation_header();

// An "image" for the stand-in CUDA driver of kiln's tests: this prefix, then
// the emulated module's path, then a NUL.
constexpr const char* kEmulatedImagePrefix = "kiln-fake-cubin:";

// The prefix of the per-kernel launchers' names.
constexpr const char* kEmulatedKernelPrefix = "kiln_emu_kernel_";

struct EmulatedModule {
  std::string path;   // the shared object, loadable by rt::Module::load
  std::string entry;  // its packed entry point: src.function
  double compile_ms = 0;
};

// The host C++ compiler emulation uses: $KILN_HOST_CXX when set (a user
// error when it is not an executable), else the first of c++, g++,
// clang++-14, clang++ on PATH; "" when there is none.
std::string host_cxx_compiler();

// The host compiler's flags for an emulated module, before -shared and the
// files (and for the precompiled header, which must use the same ones).
const std::vector<std::string>& emulated_module_flags();

// Writes the emulation header (where emulation_pch_dir gives a directory,
// cuda_emulation_pch.h: an #include of its precompiled form, the module
// linking the runtime's object from there), src.code and a host entry point
//   extern "C" int32_t <src.function>(void** args)  // packed ABI, runtime/c_api.h
//   extern "C" const char* kiln_emu_last_error(void)
//   extern "C" int kiln_emu_kernel_<kernel>(const unsigned* grid,
//       const unsigned* block, unsigned dynamic_shared_bytes,
//       unsigned max_dynamic, void** params)
// (one per kernel: cuLaunchKernel's arguments, params[i] pointing at the
// i-th parameter's value, and the dynamic bytes the kernel is opted in to
// (cuFuncSetAttribute), so that a stand-in for the CUDA driver can launch
// it; it returns 2 where the driver refuses the configuration, as when the
// kernel's static shared memory plus the dynamic bytes pass 48 KiB without
// an opt-in, or a kernel gets less dynamic shared memory than its arrays
// need (that one fails the launch)) to a .cpp in out_dir (created if needed; the .cpp
// stays there, #line directives number the CUDA source's own lines) and compiles it into a uniquely named .so next to
// it, exporting only those symbols. The entry point runs src.launches in order, passing kernel parameter p as
// (p.c_type)args[p.arg_index] (a non-pointer c_type reads the value args[p.arg_index] points to), and returns non-zero
// at the first launch that fails. User errors: no host C++ compiler (naming KILN_HOST_CXX), or the compiler's output
// when the source does not compile.
EmulatedModule build_emulated_module(const CudaSource& src, const std::string& out_dir);

// The message of the last failed launch of a loaded emulated module in this
// thread ("" when none failed; a note when `m` is not an emulated module).
std::string emulated_error(const rt::Module& m);

}  // namespace kiln
