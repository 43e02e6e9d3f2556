// The C compiler `kiln lib` compiles a library's C runtime and dispatchers
// with: clang (clang-14, else clang on PATH; KILN_CC overrides), because
// it cross-compiles to any LLVM triple with one binary.
#pragma once

#include <string>

#include "codegen/target.h"

namespace kiln {

// Path of the C compiler; user_error naming what to install when there is none.
std::string find_c_compiler();

// The sysroot of a foreign target's C library: /usr/TRIPLE (with or without
// the triple's vendor, as Debian's cross packages name it, e.g.
// /usr/aarch64-linux-gnu from libc6-dev-arm64-cross) when it has an include
// directory; "" for the host or when there is none.
std::string find_sysroot(const Target& target);

// Compiles `source` (C11) into the PIC object `object` for `target`:
//   CC -std=c11 -O2 -fPIC -c --target=TRIPLE [--sysroot=/usr/TRIPLE] [-march/-mcpu=CPU] -I include_dir
// The sysroot is passed for a foreign triple when /usr/TRIPLE exists (Debian's
// cross libc packages, e.g. libc6-dev-arm64-cross). A failed compile is a
// user_error carrying the compiler's output.
void compile_c(const std::string& source, const std::string& object, const Target& target,
               const std::string& include_dir);

}  // namespace kiln
