// The emulation header, precompiled once per compiler and flags, and the
// emulator's runtime compiled once from it: every emulated module includes
// the same ~1900 lines, and parsing them was about a third of each module's
// compile time, compiling the runtime's functions (the launcher, barriers,
// fibers) another half. Such a module defines KILN_EMU_LINKED_RUNTIME,
// which leaves those functions out of it, and links the runtime's object.
// Where neither can be had (a compiler other than GCC, no writable cache
// directory, a failed build), modules carry the header's whole text as
// before: the cache only ever changes how fast a module compiles, never
// what it runs.
#pragma once

#include <string>
#include <vector>

namespace kiln {

// The file name emulated sources #include; its precompiled form sits next
// to it with ".gch" added, the runtime's object as kEmulationRuntimeName.
constexpr const char* kEmulationHeaderName = "kiln_cuda_emulation.h";
constexpr const char* kEmulationRuntimeName = "kiln_cuda_emulation_runtime.o";
// What a module that includes the precompiled header and links the runtime
// adds to its compiler's flags (the header was precompiled with it).
constexpr const char* kLinkedRuntimeFlag = "-DKILN_EMU_LINKED_RUNTIME";

// The directory of kiln's caches: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln,
// else $HOME/.cache/kiln; "" when none of them is set.
std::string kiln_cache_dir();

// The directory holding kEmulationHeaderName (cuda_emulation_header()'s
// text), its precompiled form for `cxx` compiling with `flags` and
// kLinkedRuntimeFlag, and the runtime's object (kEmulationRuntimeName), made on
// first use under kiln_cache_dir()/emulation-pch/<key>, the key a hash of
// the header, the compiler (its path and version) and the flags. "" when
// there is none to use: KILN_EMULATION_PCH=0, a compiler that is not GCC, no
// cache directory that can be written, or a precompile that failed (logged
// at debug level with the reason). Safe from several threads and processes:
// files appear by rename, complete or not at all, and GCC ignores a
// precompiled header it cannot use (then parses the header next to it).
std::string emulation_pch_dir(const std::string& cxx, const std::vector<std::string>& flags);

// Removes the precompiled header and the runtime's object from `dir` (one
// emulation_pch_dir gave), after a module failed to build with them and
// built without: the next call of emulation_pch_dir makes them again.
void discard_emulation_pch_dir(const std::string& dir);

}  // namespace kiln
