// Finding and running the C compiler of `kiln lib` (see c_compiler.h).
#include "library/c_compiler.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

#include "codegen/subprocess.h"
#include "base/error.h"

namespace kiln {
namespace {

bool is_x86(const std::string& triple) {
  return triple.rfind("x86_64", 0) == 0 || triple.rfind("i386", 0) == 0 || triple.rfind("i686", 0) == 0;
}

}  // namespace

std::string find_sysroot(const Target& target) {
  if (target.is_host()) return "";
  std::vector<std::string> parts;
  std::istringstream in(target.triple);
  for (std::string p; std::getline(in, p, '-');) parts.push_back(p);
  std::vector<std::string> names = {target.triple};
  if (parts.size() == 4) names.push_back(parts[0] + "-" + parts[2] + "-" + parts[3]);
  for (const std::string& name : names) {
    std::error_code ec;
    if (std::filesystem::is_directory("/usr/" + name + "/include", ec)) return "/usr/" + name;
  }
  return "";
}

std::string find_c_compiler() {
  if (const char* cc = std::getenv("KILN_CC"); cc && *cc) {
    std::string path = find_executable(cc);
    user_check(!path.empty()) << "KILN_CC is '" << cc << "', which is not an executable file or a program on PATH";
    return path;
  }
  for (const char* name : {"clang-14", "clang"}) {
    std::string path = find_executable(name);
    if (!path.empty()) return path;
  }
  user_error() << "kiln lib compiles the library's C runtime and dispatchers with clang, and found no clang-14 or "
                  "clang on PATH (install Debian's clang-14 package, or set KILN_CC to a clang binary)";
  return "";
}

void compile_c(const std::string& source, const std::string& object, const Target& target,
               const std::string& include_dir) {
  std::vector<std::string> argv = {find_c_compiler(),          "-std=c11", "-O2",     "-fPIC",
                                   "-fvisibility=hidden",      "-Wall",    "-Wextra", "-c",
                                   "--target=" + target.triple};
  const std::string sysroot = find_sysroot(target);
  if (!sysroot.empty()) argv.push_back("--sysroot=" + sysroot);
  if (!target.cpu.empty() && target.cpu != "generic")
    argv.push_back((is_x86(target.triple) ? "-march=" : "-mcpu=") + target.cpu);
  argv.insert(argv.end(), {"-I", include_dir, source, "-o", object});
  std::string output;
  const int status = run_process(argv, &output, "the C compiler");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ostringstream cmd;
    for (const auto& a : argv) cmd << a << ' ';
    std::string hint;
    if (!target.is_host() && sysroot.empty())
      hint = "\n(no C library headers for " + target.triple + " under /usr/" + target.triple +
             ": install the target's cross C library, e.g. Debian's libc6-dev-arm64-cross for aarch64)";
    user_error() << "compiling the library's C runtime failed (" << cmd.str() << "):\n" << output << hint;
  }
}

}  // namespace kiln
