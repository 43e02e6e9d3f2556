// Benchmark suites: data files of workload strings, one per line, `#`
// starting a comment (bench/suites/NAME.txt). `kiln bench --suite` takes a
// suite's name or the path of such a file.
#pragma once

#include <string>
#include <vector>

namespace kiln {

struct SuiteWorkload {
  std::string text;  // as written in the file
  int line = 0;      // 1-based line number
};

struct Suite {
  std::string name;  // the name given, or the file's stem
  std::string path;
  std::vector<SuiteWorkload> workloads;
};

// The folder of the built-in suites: $KILN_SUITES_DIR, else the source
// tree's bench/suites.
std::string suites_dir();
// Names of the built-in suites, sorted.
std::vector<std::string> suite_names();
// A name (built-in suite) or a path (contains '/' or names an existing
// file). UserError for an unknown name (listing the known ones), an
// unreadable or empty file.
Suite load_suite(const std::string& name_or_path);

}  // namespace kiln
