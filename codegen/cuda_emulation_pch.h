// The emulation header, precompiled once per compiler and flags: every
// emulated module includes the same ~1500 lines of it, and parsing them was
// about a third of each module's compile time. Where the precompiled form
// cannot be had (a compiler other than GCC, no writable cache directory, a
// failed build), modules carry the header's text as before: the cache only
// ever changes how fast a module compiles, never what it contains.
#pragma once

#include <string>
#include <vector>

namespace kiln {

// The file name emulated sources #include; its precompiled form sits next
// to it with ".gch" added.
constexpr const char* kEmulationHeaderName = "kiln_cuda_emulation.h";

// The directory of kiln's caches: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln,
// else $HOME/.cache/kiln; "" when none of them is set.
std::string kiln_cache_dir();

// The directory holding kEmulationHeaderName (cuda_emulation_header()'s
// text) and its precompiled form for `cxx` compiling with `flags`, made on
// first use under kiln_cache_dir()/emulation-pch/<key>, the key a hash of
// the header, the compiler (its path and version) and the flags. "" when
// there is none to use: KILN_EMULATION_PCH=0, a compiler that is not GCC, no
// cache directory that can be written, or a precompile that failed (logged
// at debug level with the reason). Safe from several threads and processes:
// files appear by rename, complete or not at all, and GCC ignores a
// precompiled header it cannot use (then parses the header next to it).
std::string emulation_pch_dir(const std::string& cxx, const std::vector<std::string>& flags);

}  // namespace kiln
