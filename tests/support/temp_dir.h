// A temporary directory for one test, removed with everything in it when
// the test ends, and small files written into it.
#pragma once

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

namespace kiln::testing {

struct TempDir {
  std::string path;
  explicit TempDir(const std::string& prefix = "kiln_test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The path of `name` inside the directory.
  std::string operator/(const std::string& name) const { return path + "/" + name; }
  // Writes `text` to the file `name` inside the directory; returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = *this / name;
    std::ofstream(p) << text;
    return p;
  }
};

}  // namespace kiln::testing
