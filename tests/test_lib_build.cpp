// `kiln lib` end to end on real kernels: records written straight into a
// temporary tuning database (no tuning), a library built from them, and C
// programs compiled with `cc` that link the archive or the shared object
// and check tuned and fallback paths against their own naive reference.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "library/library_builder.h"
#include "tests/lib_check_program.h"
#include "tests/lib_test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using test::shell;

const char* const kMatmul = "matmul:M=32,N=48,K=40";
const char* const kMatmulBiasRelu = "matmul:M=16,N=24,K=8,bias=1,relu=1";
const char* const kConv = "conv2d:N=1,C=3,H=9,W=9,K=8,R=3,S=3,stride=1,pad=1";

// The three workloads of lib_check_program.h, "tuned" on the host: matmul
// has a slower default config, a faster random one and a failed one.
void fill_database(const std::string& path) {
  auto db = Database::open(path);
  test::add_record(*db, kMatmul, "", 1.0);
  test::add_record(*db, kMatmul, "", 0.01, /*seed=*/7);
  test::add_record(*db, kMatmul, "", 0, /*seed=*/8, ErrorKind::kWrongResult);
  test::add_record(*db, kMatmulBiasRelu, "", 0.01);
  test::add_record(*db, kConv, "", 0.02);
}

LibraryResult build(const std::string& db, const std::string& out, const std::string& name,
                         std::vector<std::string> workloads = {}, const std::string& target = "") {
  LibraryOptions o;
  o.db_path = db;
  o.out_dir = out;
  o.name = name;
  o.target = target;
  o.workloads = std::move(workloads);
  return build_library(o);
}

// Global symbols a file defines (nm), e.g. {"tk_matmul_f32", ...}.
std::vector<std::string> defined_symbols(const std::string& nm_args) {
  auto r = shell("nm --defined-only " + nm_args);
  REQUIRE(r.status == 0);
  std::vector<std::string> out;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string addr, kind, name;
    if (!(fields >> addr >> kind >> name)) continue;  // member headers, blank lines
    if (std::isupper(static_cast<unsigned char>(kind[0]))) out.push_back(name);
  }
  return out;
}

}  // namespace

TEST_CASE("lib: a C program links the host library (archive, shared object, CMake, pkg-config) and checks it",
          "[lib]") {
  test::TempDir tmp;
  const std::string db = tmp.path + "/k.db", out = tmp.path + "/out";
  fill_database(db);
  LibraryResult r = build(db, out, "tk");
  REQUIRE(r.kernels.size() == 3);
  REQUIRE(r.files.size() == 6);
  for (const std::string& f : r.files) CHECK(fs::is_regular_file(f));
  CHECK(r.warnings.empty());

  // NAME.json: one entry per kernel, the best record of each workload.
  const auto j = nlohmann::json::parse(test::read_text(out + "/tk.json"));
  REQUIRE(j["kernels"].size() == 3);
  const std::string host = Target::host().str();
  auto best = Database::open_existing(db)->best(build_workload(kMatmul).canonical + " @ " + host);
  REQUIRE(best);
  CHECK(best->median_ms == Approx(0.01));
  // Kernels come in workload order (--all): conv2d, matmul+bias+relu, matmul.
  const nlohmann::json& k0 = j["kernels"][2];
  CHECK(k0["workload"] == build_workload(kMatmul).canonical);
  CHECK(k0["entry"] == "tk_matmul_f32_M32_N48_K40");
  CHECK(k0["dispatcher"] == "tk_matmul_f32");
  CHECK(k0["config"] == best->config);
  CHECK(k0["gflops"].get<double>() == Approx(best->gflops));
  CHECK(k0["target"] == host);
  CHECK(k0["tuned_on"] == host);
  CHECK(k0["kiln_version"] == KILN_VERSION);
  CHECK(k0["record"]["id"] == best->id);
  CHECK(k0["record"]["config_index"] == best->config_index);
  CHECK(j["kernels"][1]["dispatcher"] == "tk_matmul_bias_relu_f32");
  CHECK(j["kernels"][0]["entry"] == "tk_conv2d_f32_N1_C3_H9_W9_K8_R3_S3_stride1_pad1_dilation1");

  // The header: the exact dispatcher signature, valid C++ too.
  const std::string header = test::read_text(out + "/tk.h");
  CHECK_THAT(header, Catch::Contains("int tk_matmul_f32(int64_t M, int64_t N, int64_t K, const float* A, "
                                     "const float* B, float* C);"));
  CHECK_THAT(header, Catch::Contains("int tk_conv2d_f32(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, "
                                     "int64_t R, int64_t S, int64_t stride, int64_t pad, int64_t dilation, const "
                                     "float* data, const float* weight, float* out);"));
  test::write_text(tmp.path + "/use.cpp",
                   "#include \"tk.h\"\n"
                   "int (*f)(int64_t, int64_t, int64_t, const float*, const float*, float*) = tk_matmul_f32;\n"
                   "int main() { return f == nullptr; }\n");
  auto cxx = shell("c++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I " + out + " " + tmp.path + "/use.cpp");
  INFO(cxx.output);
  CHECK(cxx.status == 0);

  // The C program against the archive.
  const std::string prog = tmp.path + "/check.c";
  test::write_text(prog, test::kLibCheckProgram);
  const std::string cc = "cc -std=c11 -O1 -Wall -Wextra -Werror ";
  auto compile =
      shell(cc + "-I " + out + " " + prog + " " + out + "/libtk.a -lpthread -lm -o " + tmp.path + "/check_static");
  INFO(compile.output);
  REQUIRE(compile.status == 0);
  auto run = shell(tmp.path + "/check_static");
  INFO(run.output);
  CHECK(run.status == 0);
  CHECK_THAT(run.output, Catch::Contains("ok "));

  // ... and against the shared object, found through pkg-config, on 3 threads.
  auto flags = shell("PKG_CONFIG_PATH=" + out + " pkg-config --cflags --libs tk");
  INFO(flags.output);
  REQUIRE(flags.status == 0);
  CHECK_THAT(flags.output, Catch::Contains("-ltk"));
  flags.output.erase(flags.output.find_last_not_of(" \n") + 1);
  compile =
      shell(cc + prog + " " + flags.output + " -Wl,-rpath," + out + " -lpthread -lm -o " + tmp.path + "/check_shared");
  INFO(compile.output);
  REQUIRE(compile.status == 0);
  CHECK_THAT(shell("readelf -d " + tmp.path + "/check_shared").output, Catch::Contains("[libtk.so]"));
  run = shell("KILN_NUM_THREADS=3 " + tmp.path + "/check_shared");
  INFO(run.output);
  CHECK(run.status == 0);
  CHECK_THAT(run.output, Catch::Contains("threads 3"));
  CHECK_THAT(run.output, Catch::Contains("ok "));

  // The .so records its soname and libc, exports only the public API; the
  // archive defines only symbols with the library's prefix.
  const std::string dynamic = shell("readelf -d " + out + "/libtk.so").output;
  CHECK_THAT(dynamic, Catch::Contains("Library soname: [libtk.so]"));
  CHECK_THAT(dynamic, Catch::Contains("libc.so"));
  const auto exported = defined_symbols("-D " + out + "/libtk.so");
  CHECK(std::count(exported.begin(), exported.end(), "tk_matmul_f32") == 1);
  CHECK(std::count(exported.begin(), exported.end(), "tk_num_threads") == 1);
  for (const std::string& s : exported) {
    INFO(s);
    CHECK((s.rfind("tk_", 0) == 0 && s.rfind("tk__", 0) != 0));
  }
  const auto archived = defined_symbols("-g " + out + "/libtk.a");
  CHECK(std::count(archived.begin(), archived.end(), "tk__parallel_for") == 1);
  for (const std::string& s : archived) {
    INFO(s);
    CHECK(s.rfind("tk_", 0) == 0);
  }

  // CMake: find_package(tk) and the imported target tk::tk.
  if (shell("cmake --version").status == 0) {
    const std::string proj = tmp.path + "/proj";
    fs::create_directories(proj);
    test::write_text(proj + "/CMakeLists.txt",
                     "cmake_minimum_required(VERSION 3.16)\nproject(use_tk C)\nfind_package(tk CONFIG REQUIRED)\n"
                     "add_executable(check check.c)\ntarget_link_libraries(check PRIVATE tk::tk)\n");
    fs::copy_file(prog, proj + "/check.c");
    auto cmake = shell("cmake -S " + proj + " -B " + proj + "/build -G Ninja -Dtk_DIR=" + out + " && cmake --build " +
                       proj + "/build && " + proj + "/build/check");
    INFO(cmake.output);
    CHECK(cmake.status == 0);
    CHECK_THAT(cmake.output, Catch::Contains("ok "));
  }

  // The kiln command itself.
  auto cli = shell(std::string(KILN_BINARY) + " lib --db " + db + " --out " + tmp.path + "/out_cli --name tkcli" +
                   " --workloads " + kMatmul);
  INFO(cli.output);
  CHECK(cli.status == 0);
  CHECK_THAT(cli.output, Catch::Contains("tkcli_matmul_f32_M32_N48_K40"));
  CHECK_THAT(cli.output, Catch::Contains("libtkcli.a"));
  CHECK(fs::is_regular_file(tmp.path + "/out_cli/libtkcli.so"));
}

TEST_CASE("lib: two kiln libraries link into one program", "[lib]") {
  test::TempDir tmp;
  const std::string db = tmp.path + "/k.db";
  fill_database(db);
  build(db, tmp.path + "/a", "la", {kMatmul});
  build(db, tmp.path + "/b", "lb", {kConv});
  const char* program = R"C(
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "la.h"
#include "lb.h"
static float A[32 * 40], B[40 * 48], C[32 * 48], D[3 * 81], W[8 * 27], O[8 * 81];
int main(void) {
  for (int i = 0; i < 32 * 40; ++i) A[i] = (float)(i % 7) - 3;
  for (int i = 0; i < 40 * 48; ++i) B[i] = (float)(i % 5) - 2;
  for (int i = 0; i < 3 * 81; ++i) D[i] = (float)(i % 3);
  for (int i = 0; i < 8 * 27; ++i) W[i] = (float)(i % 4) - 1;
  if (la_matmul_f32(32, 48, 40, A + 0, B, C) != 0 || lb_conv2d_f32(1, 3, 9, 9, 8, 3, 3, 1, 1, 1, D, W, O) != 0) return 2;
  for (int i = 0; i < 32; ++i) for (int j = 0; j < 48; ++j) {
    double s = 0;
    for (int k = 0; k < 40; ++k) s += A[i * 40 + k] * B[k * 48 + j];
    if (fabs(s - C[i * 48 + j]) > 1e-3) { printf("matmul (%d, %d): %g != %g\n", i, j, C[i * 48 + j], s); return 1; }
  }
  for (int k = 0; k < 8; ++k) for (int y = 0; y < 9; ++y) for (int x = 0; x < 9; ++x) {
    double s = 0;
    for (int c = 0; c < 3; ++c) for (int r = 0; r < 3; ++r) for (int q = 0; q < 3; ++q) {
      int iy = y - 1 + r, ix = x - 1 + q;
      if (iy >= 0 && iy < 9 && ix >= 0 && ix < 9) s += D[(c * 9 + iy) * 9 + ix] * W[((k * 3 + c) * 3 + r) * 3 + q];
    }
    if (fabs(s - O[(k * 9 + y) * 9 + x]) > 1e-3) { printf("conv2d (%d, %d, %d)\n", k, y, x); return 1; }
  }
  printf("ok la=%d lb=%d threads\n", la_num_threads(), lb_num_threads());
  return 0;
}
)C";
  test::write_text(tmp.path + "/both.c", program);
  auto compile =
      shell("cc -std=c11 -Wall -Wextra -Werror -I " + tmp.path + "/a -I " + tmp.path + "/b " + tmp.path + "/both.c " +
            tmp.path + "/a/libla.a " + tmp.path + "/b/liblb.a -lpthread -lm -o " + tmp.path + "/both");
  INFO(compile.output);
  REQUIRE(compile.status == 0);
  auto run = shell(tmp.path + "/both");
  INFO(run.output);
  CHECK(run.status == 0);
  CHECK_THAT(run.output, Catch::Contains("ok la="));
}

TEST_CASE("lib: --target aarch64 re-lowers host records into an aarch64 archive and shared object", "[lib]") {
  test::TempDir tmp;
  const std::string db = tmp.path + "/k.db", out = tmp.path + "/arm";
  fill_database(db);
  LibraryResult r = build(db, out, "tka", {kMatmul, kConv}, "llvm -mtriple=aarch64-linux-gnu");
  REQUIRE(r.kernels.size() == 2);
  CHECK(r.target.triple.rfind("aarch64", 0) == 0);
  const std::vector<int> machines = test::archive_member_machines(out + "/libtka.a");
  CHECK(machines == std::vector<int>{183, 183});  // EM_AARCH64: the kernels and the C runtime
  CHECK(test::elf_file_machine(out + "/libtka.so") == 183);
  CHECK(shell("ar t " + out + "/libtka.a").output == "tka_kernels.o\ntka_runtime.o\n");
  const auto j = nlohmann::json::parse(test::read_text(out + "/tka.json"));
  REQUIRE(j["kernels"].size() == 2);
  CHECK(j["kernels"][0]["target"] == r.target.str());
  CHECK(j["kernels"][0]["tuned_on"] == Target::host().str());
  CHECK_THAT(test::read_text(out + "/tka.h"), Catch::Contains("int tka_matmul_f32(int64_t M"));
}

}  // namespace kiln
