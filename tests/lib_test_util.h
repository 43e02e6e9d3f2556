// Helpers of the `kiln lib` tests (test_lib_*.cpp): temporary directories,
// running shell commands, tuning-database records written directly (no
// tuning), and reading ELF machines of archive members.
#pragma once

#include <stdlib.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tasks/kernel_build.h"
#include "codegen/target.h"
#include "kernels/op_registry.h"
#include "support/temp_dir.h"
#include "tuner/database.h"

namespace kiln::test {

using testing::TempDir;  // support/temp_dir.h

struct ShellResult {
  int status = -1;     // exit status, -1 when killed
  std::string output;  // stdout and stderr
};

inline ShellResult shell(const std::string& command) {
  ShellResult r;
  FILE* f = ::popen((command + " 2>&1").c_str(), "r");
  REQUIRE(f != nullptr);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) r.output.append(buf, n);
  const int status = ::pclose(f);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Stores one measurement of `workload` on `target` (the host when empty):
// the op's default config, or a random one of the space when seed >= 0; a
// successful record of `median_ms`, or an error record when error is set.
inline void add_record(Database& db, const std::string& workload, const std::string& target, double median_ms,
                       int seed = -1, ErrorKind error = ErrorKind::kNone) {
  const Target t = target.empty() ? Target::host() : Target::parse(target);
  OpInstance op = build_workload(workload);
  const OpDef& def = find_op(op.op);
  const CpuInfo cpu = cpu_info_for(t);
  Task task;
  task.workload = op.canonical;
  task.op = op.op;
  task.target = t.str();
  task.flops = op.flops;
  auto space = def.define_space(op, cpu);
  task.space = space;
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  Config cfg = seed >= 0 ? space->random(rng) : def.default_config(op, cpu, *space);
  MeasureResult res;
  res.device = "local";
  res.error = error;
  if (error == ErrorKind::kNone) {
    res.samples_ms = {median_ms, median_ms};
  } else {
    res.message = "failed on purpose";
  }
  db.add_records(task, {cfg}, {res});
}

// e_machine of every member of an ar archive that is an ELF file (the
// symbol table "/" and the long-name table "//" are skipped; "/123" names a
// member through the long-name table).
inline std::vector<int> archive_member_machines(const std::string& archive) {
  const std::string bytes = read_text(archive);
  REQUIRE(bytes.compare(0, 8, "!<arch>\n") == 0);
  std::vector<int> machines;
  size_t pos = 8;
  while (pos + 60 <= bytes.size()) {
    const std::string name = bytes.substr(pos, 16);
    const size_t size = std::stoul(bytes.substr(pos + 48, 10));
    const size_t data = pos + 60;
    REQUIRE(data + size <= bytes.size());
    const bool table = name.compare(0, 2, "/ ") == 0 || name.compare(0, 2, "//") == 0;
    if (!table && size >= 20 && bytes.compare(data, 4, "\177ELF") == 0) {
      machines.push_back(static_cast<unsigned char>(bytes[data + 18]) |
                         (static_cast<unsigned char>(bytes[data + 19]) << 8));
    }
    pos = data + size + (size % 2);
  }
  return machines;
}

inline int elf_file_machine(const std::string& path) {
  const std::string bytes = read_text(path);
  if (bytes.size() < 20 || bytes.compare(0, 4, "\177ELF") != 0) return -1;
  return static_cast<unsigned char>(bytes[18]) | (static_cast<unsigned char>(bytes[19]) << 8);
}

}  // namespace kiln::test
