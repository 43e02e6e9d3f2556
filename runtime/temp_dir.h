// A private temporary directory (mkdtemp under the system's temporary
// directory) for files a process makes and loads, such as emulated GPU
// images; removed, with everything in it, when the object goes.
#pragma once

#include <string>

namespace kiln::rt {

class TempDir {
 public:
  // Named prefix-XXXXXX. user_error "cannot create a temporary directory
  // for <what>" when it cannot be made.
  TempDir(const std::string& prefix, const std::string& what);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace kiln::rt
