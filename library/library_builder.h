// `kiln lib`: builds a linkable library of tuned kernels from the tuning
// database, for the host or any other LLVM target, or for a GPU
// architecture (cuda_library_builder.h).
//
// For each selected workload the best error-free record is taken: a record
// measured on the requested target when there is one, else the best record
// of any target (e.g. a config tuned on x86, re-lowered for aarch64). Its
// config is re-applied through the op's template in the config space of the
// target it was tuned on (so it means what it meant when measured), lowered,
// and compiled for the requested target. All kernels go into one object
// (codegen/static_library.h); the library's C runtime, dispatchers and entry
// points (library_c_source.h) are compiled with clang (c_compiler.h).
//
// Files written to the output directory:
//   libNAME.a, libNAME.so   the library (the .so has SONAME libNAME.so)
//   NAME.h                  the C header
//   NAME.json               one entry per kernel: workload, config, GFLOP/s,
//                           targets, kiln version, database record
//   NAMEConfig.cmake        CMake package: imported targets NAME::NAME
//                           (static) and NAME::NAME_shared
//   NAME.pc                 pkg-config file (relocatable: ${pcfiledir})
#pragma once

#include <string>
#include <vector>

#include "codegen/target.h"
#include "tuner/database.h"

namespace kiln {

struct LibraryOptions {
  std::string db_path;
  std::string out_dir;
  std::string name = "kiln_kernels";   // symbol prefix and file names: a C identifier, no "__", no trailing '_'
  std::string target;                  // target string; empty: this machine
  std::vector<std::string> workloads;  // empty: every tuned workload of the database
};

struct LibraryKernel {
  std::string workload;     // canonical
  std::string entry;        // its named entry point
  std::string dispatcher;   // the dispatcher that runs it for its exact shape
  Database::Record record;  // the database record whose config it uses
};

struct LibraryResult {
  Target target;
  std::vector<LibraryKernel> kernels;
  std::vector<std::string> files;     // written, in the order above
  std::vector<std::string> warnings;  // workloads left out (--all) and why
  // cuda libraries: the images are emulated modules for kiln's stand-in
  // driver (KILN_GPU_IMAGE=emulated), a test build that runs on no GPU.
  bool emulated = false;
};

// A cuda target ("cuda -arch=sm_80") builds a library of CUDA kernels
// (cuda_library_builder.h).
// user_error for: a name that is not a C identifier, a bad target, a bad or unsupported workload, an output directory that cannot be
// created or written, a missing or empty database, a workload of
// `workloads` without an error-free record, a config the template rejects,
// a missing C compiler, a failed compile or link.
LibraryResult build_library(const LibraryOptions& options);

}  // namespace kiln
