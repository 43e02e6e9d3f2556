// LLD's ELF linker (ld.lld) run inside this process, so that kiln links
// kernels into shared objects without an lld executable installed.
#pragma once

#include <string>
#include <vector>

namespace kiln {
namespace lld_link {

struct Result {
  bool ok = false;
  std::string output;  // lld's diagnostics (stdout and stderr), as ld.lld prints them
};

// Runs `ld.lld args...` in-process. Calls are serialized (LLD 14 keeps its
// state in globals) and run with --threads=1: no thread is started, so a
// process that forks (the local builder) stays single-threaded. An LLD fatal
// error returns ok=false with its message instead of exiting the process; a
// crash inside LLD is an internal error, and every later call reports it.
Result link_elf(const std::vector<std::string>& args);

}  // namespace lld_link
}  // namespace kiln
