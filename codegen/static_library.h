// Building blocks of kernel libraries (`kiln lib`): the kernels of a library
// as one relocatable object whose symbols cannot clash with another kiln
// library or module in the same program, and static archives (LLVM's
// archive writer, GNU format with a symbol table; no `ar` needed).
//
// A library object differs from a module object (build.h) in two ways:
//   - the parallel-for slot is renamed to `parallel_for_slot` and only
//     declared (hidden, external): the library's C runtime defines it,
//     already pointing at its thread pool, so no kernel call can see an
//     unset slot;
//   - every kernel entry point `int32_t NAME(void** args)` is hidden: other
//     objects of the same library call it, programs linking the library do
//     not see it, and a static link of two libraries does not clash as long
//     as the kernel and slot names carry each library's prefix.
#pragma once

#include <string>
#include <vector>

#include "codegen/target.h"
#include "compute/function.h"

namespace kiln {

// One object for `target` holding every kernel of `funcs` (names must be
// unique C identifiers). user_error for a target the llvm backend cannot
// compile for or a slot name that is not a C identifier.
std::vector<char> emit_library_object(const std::vector<LoweredFunc>& funcs, const Target& target,
                                      const std::string& parallel_for_slot);

// Writes a static archive of the object files (member names are their file
// names), replacing `archive_path`. Deterministic: no time stamps or owners.
// user_error when an object cannot be read or the archive cannot be written.
void write_static_archive(const std::string& archive_path, const std::vector<std::string>& object_paths);

}  // namespace kiln
