// link_shared_object: runs LLVM's ELF linker (ld.lld) as a subprocess.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "codegen/build.h"
#include "codegen/subprocess.h"
#include "compute/error.h"

namespace kiln {
namespace {

std::string find_linker() {
  for (const char* name : {"ld.lld-14", "ld.lld"}) {
    std::string found = find_executable(name);
    if (!found.empty()) return found;
  }
  const std::string fallback = "/usr/lib/llvm-14/bin/ld.lld";
  user_check(!find_executable(fallback).empty())
      << "cannot link a shared object: no ld.lld-14 or ld.lld on PATH and no " << fallback
      << " (install Debian's lld-14 package)";
  return fallback;
}

// The libm this process uses, so host modules can record it as DT_NEEDED.
std::string host_libm_path() {
  Dl_info info{};
  auto* fn = reinterpret_cast<void*>(static_cast<float (*)(float)>(&::tanhf));
  if (::dladdr(fn, &info) == 0 || info.dli_fname == nullptr) return "";
  const std::string path = info.dli_fname;
  return path.find("libm") != std::string::npos ? path : "";
}

}  // namespace

void link_shared_object(const std::vector<std::string>& objects, const std::string& out_so, const Target& target,
                        const std::vector<std::string>& extra_args) {
  user_check(!objects.empty()) << "link_shared_object needs at least one object file";
  std::vector<std::string> argv = {find_linker(), "-shared", "-o", out_so};
  argv.insert(argv.end(), objects.begin(), objects.end());
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  if (target.is_host()) {
    const std::string libm = host_libm_path();
    if (!libm.empty()) {
      argv.push_back("--as-needed");
      argv.push_back(libm);
    }
  }
  std::string output;
  const int status = run_process(argv, &output, "the linker");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ostringstream cmd;
    for (const auto& a : argv) cmd << a << ' ';
    user_error() << "linking " << out_so << " failed (" << cmd.str() << "):\n" << output;
  }
}

}  // namespace kiln
