// `kiln lib` user errors, one message each (the CLI's exit codes are in
// tests/cli_lib.sh).
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "library/library_builder.h"
#include "base/error.h"
#include "tests/lib_test_util.h"
#include "support/skip.h"

namespace kiln {
namespace {

struct Fixture {
  test::TempDir tmp;
  std::string db = tmp.path + "/k.db";
  LibraryOptions options() const {
    LibraryOptions o;
    o.db_path = db;
    o.out_dir = tmp.path + "/out";
    o.name = "te";
    return o;
  }
};

void require_error(const LibraryOptions& o, const std::string& message) {
  INFO("expected: " << message);
  REQUIRE_THROWS_WITH(build_library(o), Catch::Contains(message));
}

}  // namespace

TEST_CASE("lib: errors before any record is read", "[lib]") {
  Fixture f;
  test::add_record(*Database::open(f.db), "matmul:M=8,N=8,K=8", "", 0.01);
  LibraryOptions o = f.options();

  o.name = "9lib";
  require_error(o, "library name '9lib' must be a C identifier");
  for (const char* bad : {"my-lib", "R", "my__lib", "mylib_", "__lib", ""}) {
    o.name = bad;
    require_error(o, "library name '" + std::string(bad) + "' must be a C identifier");
  }
  o = f.options();
  o.target = "llvm -mtriple=nonsense-unknown-foo";
  REQUIRE_THROWS_AS(build_library(o), UserError);
  o.target = "cuda -arch=sm_90";
  require_error(o, "has no cuda records");  // a cuda target builds a cuda library (test_lib_cuda)
  o = f.options();
  o.workloads = {"gemm:M=1,N=1,K=1"};
  require_error(o, "unknown op 'gemm'");
  o.workloads = {"elemwise:M=4,N=4"};
  require_error(o, "kiln lib supports matmul");
  o.workloads = {"matmul:M=4"};
  require_error(o, "missing parameter");

  // An output directory that cannot be created (its parent is a file).
  o = f.options();
  test::write_text(f.tmp.path + "/file", "x");
  o.out_dir = f.tmp.path + "/file/lib";
  require_error(o, "cannot create the output directory '" + f.tmp.path + "/file/lib'");
  o.out_dir = f.tmp.path + "/file";
  require_error(o, "cannot create the output directory");
  o = f.options();
  o.db_path = f.tmp.path + "/missing.db";
  require_error(o, "no tuning database at");
}

TEST_CASE("lib: errors of the database's contents", "[lib]") {
  Fixture f;
  LibraryOptions o = f.options();
  Database::open(f.db);  // empty
  require_error(o, "the tuning database '" + f.db + "' has no records: tune the workloads first");

  auto db = Database::open(f.db);
  test::add_record(*db, "matmul:M=8,N=8,K=8", "", 0, -1, ErrorKind::kRuntimeCrash);
  require_error(o, "has no error-free CPU (llvm) records (every measured config failed)");

  test::add_record(*db, "matmul:M=16,N=8,K=8", "", 0.01);
  o.workloads = {"matmul:M=8,N=8,K=8"};
  require_error(o,
                "has no error-free record of 'matmul:M=8,N=8,K=8,dtype=f32,bias=0,relu=0' (tuned workloads: "
                "matmul:M=16,N=8,K=8,dtype=f32,bias=0,relu=0)");
  o.workloads = {"conv2d:C=2,H=4,W=4,K=2,R=1,S=1"};
  require_error(o, "has no error-free record of 'conv2d:N=1,C=2,H=4,W=4,K=2,R=1,S=1");

  // A config that is not a point of the workload's space (here: one of a
  // bigger matmul, stored under this workload).
  {
    OpInstance big = build_workload("matmul:M=512,N=512,K=512");
    OpInstance small = build_workload("matmul:M=24,N=8,K=8");
    const CpuInfo cpu = cpu_info_for(Target::host());
    auto big_space = find_op("matmul").define_space(big, cpu);
    Task task;
    task.workload = small.canonical;
    task.op = "matmul";
    task.target = Target::host().str();
    task.flops = small.flops;
    task.space = big_space;
    MeasureResult res;
    res.samples_ms = {0.01};
    db->add_records(task, {find_op("matmul").default_config(big, cpu, *big_space)}, {res});
  }
  o.workloads = {"matmul:M=24,N=8,K=8"};
  require_error(o, "does not fit the op's template any more");

  // A record of a target this kiln cannot parse.
  {
    OpInstance op = build_workload("matmul:M=40,N=8,K=8");
    auto space = find_op("matmul").define_space(op, cpu_info_for(Target::host()));
    Task task;
    task.workload = op.canonical;
    task.op = "matmul";
    task.target = "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=no-such-cpu";
    task.flops = op.flops;
    task.space = space;
    MeasureResult res;
    res.samples_ms = {0.01};
    db->add_records(task, {space->get(0)}, {res});
  }
  o.workloads = {"matmul:M=40,N=8,K=8"};
  require_error(o, "which this kiln cannot read");
}

TEST_CASE("lib: a cross target without C library headers is a clear error", "[lib]") {
  if (std::filesystem::exists("/usr/riscv64-linux-gnu/include"))
    KILN_SKIP("/usr/riscv64-linux-gnu/include exists: this host has the RISC-V C library headers");
  Fixture f;
  test::add_record(*Database::open(f.db), "matmul:M=8,N=8,K=8", "", 0.01);
  LibraryOptions o = f.options();
  o.target = "llvm -mtriple=riscv64-linux-gnu -mcpu=generic-rv64";  // (LLVM aborts on cpu "generic" for RISC-V)
  require_error(o, "install the target's cross C library");
}

TEST_CASE("lib: a missing C compiler is a clear error", "[lib]") {
  Fixture f;
  test::add_record(*Database::open(f.db), "matmul:M=8,N=8,K=8", "", 0.01);
  const char* old = std::getenv("KILN_CC");
  const std::string saved = old ? old : "";
  ::setenv("KILN_CC", "/nonexistent/clang", 1);
  CHECK_THROWS_WITH(build_library(f.options()), Catch::Contains("KILN_CC is '/nonexistent/clang'"));
  if (old) {
    ::setenv("KILN_CC", saved.c_str(), 1);
  } else {
    ::unsetenv("KILN_CC");
  }
  // Checked before anything is written.
  CHECK_FALSE(std::filesystem::exists(f.tmp.path + "/out"));
}

}  // namespace kiln
