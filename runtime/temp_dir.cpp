#include "runtime/temp_dir.h"

#include <stdlib.h>

#include <filesystem>

#include "base/error.h"

namespace kiln::rt {

TempDir::TempDir(const std::string& prefix, const std::string& what) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  user_check(::mkdtemp(tmpl.data()) != nullptr) << "cannot create a temporary directory for " << what;
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace kiln::rt
