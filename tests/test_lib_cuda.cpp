// `kiln lib --target cuda` end to end without a GPU: cuda records written
// straight into a temporary tuning database, a library built from them with
// emulated images (KILN_GPU_IMAGE=emulated), and tests/lib_cuda_check.c
// linked against it and run under the stand-in driver
// (support/fake_libcuda.cpp): tuned kernels through dispatchers and entry
// points, fallback kernels on untuned shapes, all checked against naive
// loops; then the same with real NVRTC cubins for sm_80 and sm_90 (compiled
// and linked, not run), and the user errors.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "base/error.h"
#include "codegen/cuda_emulation.h"
#include "codegen/nvrtc.h"
#include "library/c_compiler.h"
#include "library/cuda_fallback_kernels.h"
#include "library/library_builder.h"
#include "schedule/gpu_limits.h"
#include "support/scoped_env.h"
#include "support/skip.h"
#include "tests/lib_cuda_test_util.h"
#include "tests/lib_test_util.h"

namespace kiln {
namespace {

using test::add_cuda_record;
using test::ImageKind;
using test::shell;

// The workloads tests/lib_cuda_check.c expects in the library kc.
const std::vector<std::string> kWorkloads = {
    "matmul:M=16,N=24,K=8,bias=1,gelu=1", "matmul:M=9,N=10,K=11", "dense:N=3,IN=29,OUT=31,bias=1,relu=1",
    "batch_matmul:B=2,M=5,N=7,K=3",       "softmax:M=8,N=64",     "layer_norm:M=5,N=33",
};

const std::string kTestsDir = std::string(KILN_GOLDEN_DIR) + "/..";

std::string cuda_database(const test::TempDir& dir, const std::string& target) {
  const std::string path = dir / "cuda.db";
  auto db = Database::open(path);
  for (const std::string& w : kWorkloads) add_cuda_record(*db, w, target, 0.01);
  return path;
}

LibraryResult build(const std::string& db, const std::string& out, const std::string& target,
                    const std::string& name = "kc", std::vector<std::string> workloads = {}) {
  LibraryOptions o;
  o.db_path = db;
  o.out_dir = out;
  o.name = name;
  o.target = target;
  o.workloads = std::move(workloads);
  return build_library(o);
}

// Compiles and links tests/lib_cuda_check.c against the library in `out`
// (static, or the .so with an rpath); returns the program's path.
std::string link_check_program(const std::string& out, bool shared) {
  const std::string exe = out + (shared ? "/check_shared" : "/check_static");
  const std::string lib = shared ? "-L" + out + " -lkc -Wl,-rpath," + out : out + "/libkc.a -lpthread -ldl";
  auto r = shell("cc -std=c11 -O1 -Wall -Wextra -Werror -I" + out + " " + kTestsDir + "/lib_cuda_check.c " + lib +
                 " -lm -o " + exe);
  INFO(r.output);
  REQUIRE(r.status == 0);
  return exe;
}

std::string fake_driver_env(const std::string& extra = "") {
  return std::string("KILN_LIBCUDA=") + KILN_FAKE_LIBCUDA + " " + extra + " ";
}

TEST_CASE(
    "lib_cuda: an emulated library compiles without warnings and runs tuned kernels and fallbacks under the "
    "stand-in driver",
    "[lib]") {
  std::string why;
  if (!test::have_library_tools(&why)) KILN_SKIP(why);
  test::TempDir dir("kiln_lib_cuda");
  const std::string db = cuda_database(dir, "cuda -arch=sm_90");
  ImageKind kind("emulated");
  // kiln lib compiles the library's C with clang -Wall -Wextra and shows the output only when it fails: here a
  // warning fails it (the launch tables once left their tensor maps out when a kernel had none).
  const std::string werror_cc = dir / "cc_werror";
  test::write_text(werror_cc, "#!/bin/sh\nexec " + find_c_compiler() + " -Werror \"$@\"\n");
  std::filesystem::permissions(werror_cc, std::filesystem::perms::owner_exec, std::filesystem::perm_options::add);
  testing::ScopedEnv werror("KILN_CC", werror_cc);
  const LibraryResult r = build(db, dir / "out", "cuda -arch=sm_90");
  CHECK(r.emulated);
  REQUIRE(r.kernels.size() == kWorkloads.size());

  const auto manifest = nlohmann::json::parse(test::read_text(dir / "out/kc.json"));
  CHECK(manifest.at("arch") == "sm_90");
  CHECK(manifest.at("image").get<std::string>().rfind("emulated", 0) == 0);
  CHECK(manifest.at("kernels").size() == kWorkloads.size());
  CHECK(manifest.at("fallback_kernels").size() == cuda_fallback_kernels().size());
  for (const auto& k : manifest.at("kernels")) {
    CHECK(k.at("tuned_on") == "cuda -arch=sm_90");
    CHECK(!k.at("launches").empty());
  }
  const std::string header = test::read_text(dir / "out/kc.h");
  CHECK(header.find("TEST BUILD") != std::string::npos);
  CHECK(header.find("int kc_matmul_bias_gelu_f32(int64_t M, int64_t N, int64_t K, const float* A, const float* B, "
                    "const float* bias, float* C, void* stream);") != std::string::npos);

  const std::string exe = link_check_program(dir / "out", /*shared=*/false);
  auto run = shell(fake_driver_env() + exe + " run");
  INFO(run.output);
  CHECK(run.status == 0);
  CHECK(run.output.find("all checks passed") != std::string::npos);
  CHECK(run.output.find("softmax 3x301") != std::string::npos);

  // The shared library, without a driver: the first call says so.
  const std::string shared_exe = link_check_program(dir / "out", /*shared=*/true);
  auto no_driver = shell("KILN_LIBCUDA=/nonexistent/libcuda.so.1 " + shared_exe + " no-driver");
  INFO(no_driver.output);
  CHECK(no_driver.status == 0);
  CHECK(no_driver.output.find("kc_device_alloc: the CUDA driver (/nonexistent/libcuda.so.1) could not be loaded") !=
        std::string::npos);
  // Nothing of kiln or CUDA is linked.
  auto needed = shell("readelf -d " + dir / "out/libkc.so" + " | grep NEEDED");
  CHECK(needed.output.find("cuda") == std::string::npos);
  CHECK(needed.output.find("kiln") == std::string::npos);
  CHECK(needed.output.find("stdc++") == std::string::npos);
}

TEST_CASE("lib_cuda: records tuned for sm_90 are re-lowered for sm_80, which an sm_90 device cannot run", "[lib]") {
  std::string why;
  if (!test::have_library_tools(&why)) KILN_SKIP(why);
  test::TempDir dir("kiln_lib_cuda");
  const std::string db = cuda_database(dir, "cuda -arch=sm_90");
  ImageKind kind("emulated");
  const LibraryResult r = build(db, dir / "out", "cuda -arch=sm_80");
  CHECK(r.target.arch == "sm_80");
  for (const LibraryKernel& k : r.kernels) CHECK(k.record.target == "cuda -arch=sm_90");
  const auto manifest = nlohmann::json::parse(test::read_text(dir / "out/kc.json"));
  CHECK(manifest.at("arch") == "sm_80");
  CHECK(manifest.at("kernels").at(0).at("target") == "cuda -arch=sm_80");

  const std::string exe = link_check_program(dir / "out", /*shared=*/false);
  auto on_sm86 = shell(fake_driver_env("KILN_FAKE_CUDA_CC=86") + exe + " run");
  INFO(on_sm86.output);
  CHECK(on_sm86.status == 0);
  auto on_sm90 = shell(fake_driver_env() + exe + " wrong-arch");
  INFO(on_sm90.output);
  CHECK(on_sm90.status == 0);
  CHECK(on_sm90.output.find("kc_init: kc's kernels are compiled for sm_80, which device 0 (kiln fake H100, sm_90) "
                            "cannot run; build the library for it with kiln lib --target \"cuda -arch=sm_90\"") !=
        std::string::npos);
}

void require_error(const std::string& db, const std::string& out, const std::string& target,
                   const std::vector<std::string>& workloads, const std::string& message) {
  try {
    build(db, out, target, "kc", workloads);
    FAIL("no error; expected: " << message);
  } catch (const UserError& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find(message) != std::string::npos);
  }
}

TEST_CASE("lib_cuda: user errors", "[lib]") {
  test::TempDir dir("kiln_lib_cuda");
  ImageKind kind("emulated");
  // CPU records only: nothing for a cuda library, and the other way round.
  const std::string cpu_db = dir / "cpu.db";
  test::add_record(*Database::open(cpu_db), "matmul:M=8,N=8,K=8", "", 0.01);
  require_error(cpu_db, dir / "out", "cuda -arch=sm_80", {},
                "has no cuda records: a cuda library is built from configs tuned for a GPU (kiln tune WORKLOAD... "
                "--target cuda");
  const std::string gpu_db = dir / "gpu.db";
  add_cuda_record(*Database::open(gpu_db), "softmax:M=8,N=64", "cuda -arch=sm_90", 0.01);
  require_error(gpu_db, dir / "out", "", {}, "has no CPU (llvm) records");
  require_error(gpu_db, dir / "out", "cuda -arch=sm_90", {"softmax:M=8,N=65"},
                "has no error-free cuda record of 'softmax:M=8,N=65,dtype=f32' (workloads tuned for cuda: "
                "softmax:M=8,N=64,dtype=f32)");
  require_error(gpu_db, dir / "out", "cuda -arch=sm_90", {"conv2d_nchwc:C=16,H=8,W=8,K=16,R=3,S=3"},
                "conv2d_nchwc has no cuda template, so it cannot be in a cuda library (kiln lib --target cuda "
                "supports matmul");
  require_error(gpu_db, dir / "out", "cuda -arch=sm_90", {"conv2d:C=4,H=8,W=8,K=4,R=3,S=3,groups=2"},
                "grouped convolutions (groups=2) are not in cuda libraries: the conv2d dispatchers take no groups");
  require_error(gpu_db, dir / "out", "cuda -arch=sm_90", {"depthwise_conv2d:C=4,H=8,W=8,R=3,S=3,stride=2,stride_w=1"},
                "convolutions with a stride in W of their own (stride_w) are not in cuda libraries");
  require_error(gpu_db, dir / "out", "cuda -arch=sm_90", {"matmul:M=8,N=8,K=8,trans_b=1"},
                "transposed operands are not in cuda libraries (their dispatchers take row-major operands");
  require_error(gpu_db, dir / "out", "cuda -arch=sm_90", {"batch_matmul:B=2,M=8,N=8,K=8,trans_a=1"},
                "transposed operands are not in cuda libraries");
  require_error(gpu_db, dir / "out", "cuda -arch=sm_90", {"softmax:M=8,N=64,dtype=f64"},
                "cuda libraries take f32, f16 and bf16, this is f64");
  require_error(gpu_db, dir / "out", "cuda -arch=sm_61", {}, "unknown CUDA architecture 'sm_61'");
  {
    ImageKind bad("fatbin");
    require_error(gpu_db, dir / "out", "cuda -arch=sm_90", {}, "KILN_GPU_IMAGE must be 'cubin' or 'emulated'");
  }

}

TEST_CASE("lib_cuda: NVRTC compiles the library's cubins for sm_80 and sm_90, and C programs link them", "[lib]") {
  ImageKind kind(nullptr);
  test::TempDir dir("kiln_lib_cuda");
  const std::string db = cuda_database(dir, "cuda -arch=sm_90");
  std::string nvrtc_why;
  if (!nvrtc_available(&nvrtc_why)) {
    require_error(db, dir / "out", "cuda -arch=sm_80", {},
                  "kiln lib --target cuda compiles the kernels with NVRTC, which was not found");
    KILN_SKIP("NVRTC is not installed: " << nvrtc_why);
  }
  if (shell("command -v cc && (command -v clang-14 || command -v clang)").status != 0) KILN_SKIP("no cc or clang");
  {
    auto kd = Database::open(db);
    add_cuda_record(*kd, "matmul:M=1024,N=1024,K=1024", "cuda -arch=sm_90", 0.1);
  }
  for (const char* arch : {"sm_80", "sm_90"}) {
    INFO(arch);
    const std::string out = dir / (std::string("out_") + arch);
    const LibraryResult r = build(db, out, std::string("cuda -arch=") + arch);
    CHECK(!r.emulated);
    const auto manifest = nlohmann::json::parse(test::read_text(out + "/kc.json"));
    CHECK(manifest.at("image") == "cubin");
    CHECK(manifest.at("arch") == arch);
    for (const auto& k : manifest.at("kernels"))
      for (const auto& l : k.at("launches")) {
        INFO(l.dump());
        CHECK(l.at("resources").at("registers").get<int>() > 0);
        CHECK(l.at("resources").contains("spill_store_bytes"));
      }
    for (const auto& f : manifest.at("fallback_kernels")) CHECK(f.at("resources").at("registers").get<int>() > 0);
    const std::string exe = link_check_program(out, /*shared=*/false);
    // No GPU here: without a driver the program gets the library's message;
    // under the stand-in the real cubins do not load.
    auto no_driver = shell("KILN_LIBCUDA=/nonexistent/libcuda.so.1 " + exe + " no-driver");
    INFO(no_driver.output);
    CHECK(no_driver.status == 0);
    auto fake = shell(fake_driver_env(std::string("KILN_FAKE_CUDA_CC=") + (arch + 3)) + exe + " run");
    INFO(fake.output);
    CHECK(fake.status != 0);
    CHECK(fake.output.find("cuModuleLoadData (loading the library's kernels) failed: CUDA_ERROR_INVALID_IMAGE") !=
          std::string::npos);
  }
  // The example program compiles against a library named kiln_kernels with the tuned matmul 1024^3.
  const std::string out = dir / "example";
  build(db, out, "cuda -arch=sm_90", "kiln_kernels", {"matmul:M=1024,N=1024,K=1024"});
  auto r = shell("cc -std=c11 -O1 -Wall -Wextra -Werror -I" + out + " " + kTestsDir +
                 "/../examples/use_cuda_library.c " + out + "/libkiln_kernels.a -lpthread -ldl -lm -o " + out +
                 "/use_cuda_library");
  INFO(r.output);
  CHECK(r.status == 0);
}

}  // namespace
}  // namespace kiln
