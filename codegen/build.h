// Public entry points of the LLVM CPU backend (no LLVM types here).
//
//   lowered functions --emit_llvm_ir / emit_assembly / emit_object--> text or bytes (any LLVM target)
//                     --build_shared_object--> .so on disk (object + in-process LLD), loadable by rt::Module
//                     --JitModule::compile--> callable kernels in this process (host only)
//
// Every path runs the same code generator and LLVM's O3 pipeline for the
// target. Generated modules follow runtime/c_api.h: per kernel NAME an
// exported `int32_t NAME(void** args)` and a `void* __kiln_parallel_for` slot.
// Kernels assume their buffers are 64-byte aligned and do not overlap (they
// are `noalias`); a kernel returns non-zero when a parallel loop failed or an
// allocation ran out of memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "compute/function.h"
#include "runtime/c_api.h"

namespace kiln {

// Constant-size Allocates of at most this many bytes become 64-byte-aligned
// stack slots in the entry block of the (possibly outlined) function, so
// LLVM can promote register tiles; larger or symbolic ones use
// aligned_alloc(64, ...) and free at the end of the Allocate's body.
constexpr int64_t kMaxStackAllocationBytes = 256 * 1024;

// Whether `s` can name a C symbol: a letter or '_', then letters, digits, '_'.
bool is_c_identifier(const std::string& s);
// `s` with every character a C identifier cannot hold replaced by '_' (a
// leading digit or an empty result is the caller's to handle).
std::string c_identifier_chars(const std::string& s);

// Optimized LLVM IR as text.
std::string emit_llvm_ir(const std::vector<LoweredFunc>& funcs, const Target& target);
// Assembly for the target.
std::string emit_assembly(const std::vector<LoweredFunc>& funcs, const Target& target);
// A relocatable object file (ELF for ELF triples) for the target.
std::vector<char> emit_object(const std::vector<LoweredFunc>& funcs, const Target& target);

// Links object files into a shared object with LLD's ELF linker, run in this
// process (codegen/lld_link.h: no ld.lld executable is needed). For the host,
// libm is recorded as a dependency so the .so resolves its math calls by
// itself. Linker failures are user errors carrying the linker's output.
// extra_args go to the linker after the objects (e.g. "-soname", a shared
// library to record as DT_NEEDED).
void link_shared_object(const std::vector<std::string>& objects, const std::string& out_so, const Target& target,
                        const std::vector<std::string>& extra_args = {});

struct Artifact {
  std::string path;                       // the .so
  std::vector<std::string> entry_points;  // kernel names, in input order
  std::string target;                     // Target::str()
  double compile_ms = 0;                  // codegen + optimization + object emission + link
};

// Compiles and links `funcs` into a uniquely named .so in out_dir (created if
// missing): kiln_<pid>_<counter>_<first kernel>.so.
Artifact build_shared_object(const std::vector<LoweredFunc>& funcs, const Target& target, const std::string& out_dir);

// Kernels compiled in-process with LLVM's ORC JIT (LLJIT), for the host.
// The module's parallel-for slot points at this process's kiln_parallel_for.
class JitModule {
 public:
  // Compiles and links everything eagerly. The target must be the host
  // (Target::is_host); anything else is a user error.
  static std::unique_ptr<JitModule> compile(const std::vector<LoweredFunc>& funcs, const Target& target);
  ~JitModule();
  JitModule(const JitModule&) = delete;
  JitModule& operator=(const JitModule&) = delete;

  // The kernel `name`; user error when the module has none. Valid while this
  // JitModule lives.
  kiln_packed_fn get_function(const std::string& name) const;
  const std::vector<std::string>& entry_points() const;
  double compile_ms() const;

 private:
  struct Impl;
  explicit JitModule(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
