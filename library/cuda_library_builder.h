// `kiln lib --target cuda`: a library of tuned CUDA kernels from the tuning
// database's cuda records (see library_builder.h for the options and the
// CPU libraries).
//
// Each selected workload's best error-free cuda record (one tuned for the
// requested architecture when there is one, else the fastest of another
// architecture, its config re-applied in the space it was tuned in and
// lowered for the requested one) is printed as CUDA C and compiled by NVRTC
// into a cubin; the fallback kernels (cuda_fallback_kernels.h) make one more
// cubin. The cubins are embedded in the library's C code
// (cuda_library_source.h), compiled with clang into libNAME.a and libNAME.so,
// which open the CUDA driver with dlopen.
//
// KILN_GPU_IMAGE=emulated (kiln's tests) makes the images emulated modules
// for the stand-in driver instead, kept in NAME_emulated/ of the output
// directory: such a library is marked as a test build in its header, its
// manifest and kiln's output, and never runs on a GPU.
//
// Files: libNAME.a, libNAME.so, NAME.h, NAME.json (the architecture; per
// kernel the record, config, and each launch's dimensions, registers,
// spills and shared memory; the fallback kernels' resources),
// NAMEConfig.cmake, NAME.pc.
#pragma once

#include "library/library_builder.h"

namespace kiln {

// user_error for: workloads cuda libraries do not cover, no cuda records (or
// none of a requested workload), a record whose config no longer fits its
// template or does not fit the requested architecture, NVRTC or the host C
// compiler missing, an architecture this NVRTC cannot compile for.
LibraryResult build_cuda_library(const LibraryOptions& options, const Target& target);

}  // namespace kiln
