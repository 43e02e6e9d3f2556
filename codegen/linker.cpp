// link_shared_object: links with LLD's ELF linker run in this process
// (codegen/lld_link.h), so no ld.lld executable is needed.
#include <dlfcn.h>

#include <cmath>
#include <sstream>

#include "base/error.h"
#include "codegen/build.h"
#include "codegen/lld_link.h"

namespace kiln {
namespace {

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
  std::vector<std::string> args = {"-shared", "-o", out_so};
  args.insert(args.end(), objects.begin(), objects.end());
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  if (target.is_host()) {
    const std::string libm = host_libm_path();
    if (!libm.empty()) {
      args.push_back("--as-needed");
      args.push_back(libm);
    }
  }
  const lld_link::Result r = lld_link::link_elf(args);
  if (!r.ok) {
    std::ostringstream cmd;
    cmd << "ld.lld";
    for (const auto& a : args) cmd << ' ' << a;
    user_error() << "linking " << out_so << " failed (" << cmd.str() << "):\n" << r.output;
  }
}

}  // namespace kiln
