// The parts of `kiln lib` shared by CPU and cuda libraries: the library
// name check, writing files, a scratch directory in the output directory,
// the shared libraries a .so needs, and the CMake and pkg-config files.
#pragma once

#include <string>
#include <vector>

#include "codegen/target.h"

namespace kiln {

// user_error unless `name` is a C identifier of 2 to 64 characters without
// "__" and not ending in '_' (the library's internal symbols contain "__").
void check_library_name(const std::string& name);

// user_error when the file cannot be written.
void write_library_file(const std::string& path, const std::string& text);

// "a, b, c" (at most max_items, then the count), or "none".
std::string list_text(const std::vector<std::string>& items, size_t max_items = 8);

// A scratch directory inside the output directory (created first, with
// any missing parents: a user_error when it cannot be), removed on scope
// exit. Unless keep() was called (the library was written), the output
// directory is removed too when this object created it, with the parents
// it created; a directory that existed before is left, with its files.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& out_dir);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  // The command succeeded: the output directory stays.
  void keep() { keep_ = true; }

 private:
  std::string path_;
  std::string created_;  // the outermost directory the constructor created, or ""
  bool keep_ = false;
};

// Shared libraries the .so records as DT_NEEDED, so that it resolves the C
// library (pthreads, malloc, dlopen) and libm by itself.
std::vector<std::string> needed_libraries(const Target& target);

// NAMEConfig.cmake: imported targets NAME::NAME (static, linking
// `link_libraries`, a CMake list such as "Threads::Threads;m") and
// NAME::NAME_shared.
std::string cmake_config(const std::string& name, const std::string& link_libraries);

// NAME.pc, relocatable; `libs_private` such as "-lpthread -lm".
std::string pkg_config(const std::string& name, const std::string& description, const std::string& libs_private);

}  // namespace kiln
