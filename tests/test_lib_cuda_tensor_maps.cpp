// `kiln lib --target cuda` with a tuned kernel that takes tensor maps (a
// warp-specialized GEMM whose tiles move by TMA tensor copies): the
// library's own C runtime encodes them for the caller's buffers at each
// launch (cuTensorMapEncodeTiled, through the stand-in driver here), and a
// C program gets the right product.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "codegen/cuda_emulation.h"
#include "library/cuda_library_source.h"
#include "library/library_builder.h"
#include "support/skip.h"
#include "tests/lib_cuda_test_util.h"
#include "tests/lib_test_util.h"

namespace kiln {
namespace {

// All ones: each output is K = 160, f16 0x5900.
const char* const kProgram = R"C(#include <stdint.h>
#include <stdio.h>
#include "kt.h"
int main(void) {
  static uint16_t a[64 * 160], b[160 * 48], c[64 * 48];
  for (int i = 0; i < 64 * 160; ++i) a[i] = 0x3C00;
  for (int i = 0; i < 160 * 48; ++i) b[i] = 0x3C00;
  void *da, *db, *dc;
  if (kt_device_alloc(&da, sizeof a) || kt_device_alloc(&db, sizeof b) || kt_device_alloc(&dc, sizeof c)) return 2;
  if (kt_copy_to_device(da, a, sizeof a) || kt_copy_to_device(db, b, sizeof b)) return 3;
  int rc = kt_matmul_f16(64, 48, 160, da, db, dc, NULL);
  if (rc != kt_OK) { printf("kt_matmul_f16 -> %d: %s\n", rc, kt_last_error()); return 4; }
  if (kt_copy_to_host(c, dc, sizeof c)) return 5;
  for (int i = 0; i < 64 * 48; ++i)
    if (c[i] != 0x5900) { printf("C[%d] = 0x%04x, want 0x5900\n", i, c[i]); return 6; }
  /* A buffer 8 bytes past an aligned one cannot be read through a tensor map. */
  rc = kt_matmul_f16(64, 48, 160, (const uint16_t*)((char*)da + 8), db, dc, NULL);
  printf("misaligned -> %d: %s\n", rc, kt_last_error());
  printf("tensor maps ok\n");
  return 0;
}
)C";

// The program for an N of 64: wgmma's operands.
std::string program_n64() {
  std::string p = kProgram;
  for (size_t at = p.find("48"); at != std::string::npos; at = p.find("48", at + 2)) p.replace(at, 2, "64");
  return p;
}

// A 64 x 128 by 128 x 64 product of small integers, each column of A and
// row of B different, so that an element landing in another place changes
// the result: A[m][k] = (m + 3k) % 5, B[k][n] = (2k + n) % 3, every sum an
// integer that f16 holds exactly (below 2048).
const char* const kSwizzleProgram = R"C(#include <stdint.h>
#include <stdio.h>
#include "kt.h"
static uint16_t half_of(int v) { /* a small non-negative integer as f16 */
  if (v == 0) return 0;
  int e = 0;
  while ((v >> (e + 1)) != 0) ++e;
  return (uint16_t)(((e + 15) << 10) | ((v << (10 - e)) & 0x3FF));
}
int main(void) {
  static uint16_t a[64 * 128], b[128 * 64], c[64 * 64];
  for (int m = 0; m < 64; ++m)
    for (int k = 0; k < 128; ++k) a[m * 128 + k] = half_of((m + 3 * k) % 5);
  for (int k = 0; k < 128; ++k)
    for (int n = 0; n < 64; ++n) b[k * 64 + n] = half_of((2 * k + n) % 3);
  void *da, *db, *dc;
  if (kt_device_alloc(&da, sizeof a) || kt_device_alloc(&db, sizeof b) || kt_device_alloc(&dc, sizeof c)) return 2;
  if (kt_copy_to_device(da, a, sizeof a) || kt_copy_to_device(db, b, sizeof b)) return 3;
  int rc = kt_matmul_f16(64, 64, 128, da, db, dc, NULL);
  if (rc != kt_OK) { printf("kt_matmul_f16 -> %d: %s\n", rc, kt_last_error()); return 4; }
  if (kt_copy_to_host(c, dc, sizeof c)) return 5;
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 64; ++n) {
      int want = 0;
      for (int k = 0; k < 128; ++k) want += ((m + 3 * k) % 5) * ((2 * k + n) % 3);
      if (c[m * 64 + n] != half_of(want)) {
        printf("C[%d][%d] = 0x%04x, want 0x%04x (%d)\n", m, n, c[m * 64 + n], half_of(want), want);
        return 6;
      }
    }
  printf("swizzled tensor maps ok\n");
  return 0;
}
)C";

}  // namespace

TEST_CASE("lib_cuda: a tuned kernel that takes tensor maps gets them encoded by the library at each launch",
          "[lib][tensor_copy]") {
  std::string why;
  if (!test::have_library_tools(&why)) KILN_SKIP(why);
  test::TempDir dir("kiln_lib_cuda_tma");
  test::ImageKind kind("emulated");
  LibraryOptions o =
      test::one_record_library(dir, "matmul:M=64,N=48,K=160,dtype=f16", "cuda -arch=sm_90",
                               R"({"tensor_core":"mma","mma_k":[5,2],"stages":3,"producer_warps":1,"bulk_copy":2})");
  const LibraryResult r = build_library(o);
  REQUIRE(r.kernels.size() == 1);
  // The launch's last two parameters are A's and B's maps.
  const auto manifest = nlohmann::json::parse(test::read_text(dir / "out/kt.json"));
  const auto& maps = manifest.at("kernels").at(0).at("launches").at(0).at("tensor_maps");
  REQUIRE(maps.size() == 2);
  CHECK(maps[0].at("parameter") == 3);
  CHECK(maps[0].at("buffer") == "A");
  CHECK(maps[0].at("map") == "2-D map of 160 x 64 2-byte elements, box 32 x 64");
  CHECK(maps[1].at("buffer") == "B");
  CHECK(maps[1].at("map") == "2-D map of 48 x 160 2-byte elements, box 16 x 32");

  const test::CProgramRun c = test::run_c_program(dir.path, "check", kProgram, dir / "out", "kt", KILN_FAKE_LIBCUDA);
  INFO(c.built.output);
  REQUIRE(c.built.status == 0);
  const test::ShellResult& run = c.ran;
  INFO(run.output);
  CHECK(run.status == 0);
  CHECK(run.output.find("tensor maps ok") != std::string::npos);
  CHECK(run.output.find("misaligned -> 1: kt_matmul_f16") != std::string::npos);
  CHECK(run.output.find("reads a buffer through a tensor map, which needs it 16-byte aligned") != std::string::npos);

  // An sm_80 library cannot take the record: tensor copies are sm_90's.
  o.target = "cuda -arch=sm_80";
  o.out_dir = dir / "out80";
  CHECK_THROWS_WITH(build_library(o), Catch::Contains("(tuned for sm_90) cannot be lowered for sm_80: instruction "
                                                      "'cuda.tensor_copy.f16' needs sm_90 or later") &&
                                          Catch::Contains("tune the workload for sm_80"));
}

TEST_CASE("lib_cuda: wgmma tiles filled through 3-D tensor maps, encoded by the library at each launch",
          "[lib][tensor_copy][wgmma]") {
  std::string why;
  if (!test::have_library_tools(&why)) KILN_SKIP(why);
  test::TempDir dir("kiln_lib_cuda_tma_wgmma");
  test::ImageKind kind("emulated");
  LibraryOptions o =
      test::one_record_library(dir, "matmul:M=64,N=64,K=160,dtype=f16", "cuda -arch=sm_90a",
                               R"({"tensor_core":"wgmma","wgmma_m":[1,1],"wgmma_n":[1,1,8],"mma_k":[5,2],"stages":3,)"
                               R"("producer_warps":1,"bulk_copy":2})");
  const LibraryResult r = build_library(o);
  REQUIRE(r.kernels.size() == 1);
  // A's 64 x 32 tiles and B's 32 x 64, as 8 x 8 tiles.
  const auto manifest = nlohmann::json::parse(test::read_text(dir / "out/kt.json"));
  const auto& maps = manifest.at("kernels").at(0).at("launches").at(0).at("tensor_maps");
  REQUIRE(maps.size() == 2);
  CHECK(maps[0].at("map") == "3-D map of 8 x 64 x 20 2-byte elements, box 8 x 64 x 4");
  CHECK(maps[1].at("map") == "3-D map of 8 x 160 x 8 2-byte elements, box 8 x 32 x 8");
  const test::CProgramRun c =
      test::run_c_program(dir.path, "check", program_n64(), dir / "out", "kt", KILN_FAKE_LIBCUDA);
  INFO(c.built.output);
  REQUIRE(c.built.status == 0);
  INFO(c.ran.output);
  CHECK(c.ran.status == 0);
  CHECK(c.ran.output.find("tensor maps ok") != std::string::npos);
}

TEST_CASE("lib_cuda: swizzled wgmma tiles filled through tensor maps with the 128-byte swizzle",
          "[lib][tensor_copy][wgmma][swizzle]") {
  std::string why;
  if (!test::have_library_tools(&why)) KILN_SKIP(why);
  test::TempDir dir("kiln_lib_cuda_tma_swizzle");
  test::ImageKind kind("emulated");
  LibraryOptions o =
      test::one_record_library(dir, "matmul:M=64,N=64,K=128,dtype=f16", "cuda -arch=sm_90a",
                               R"({"tensor_core":"wgmma","wgmma_m":[1,1],"wgmma_n":[1,1,8],"mma_k":[2,4],"stages":2,)"
                               R"("producer_warps":1,"bulk_copy":2,"fill_vec":8,"swizzle":1})");
  const LibraryResult r = build_library(o);
  REQUIRE(r.kernels.size() == 1);
  // A's 64 x 64 tiles and B's 64 x 64, each one strip of 128-byte rows.
  const auto manifest = nlohmann::json::parse(test::read_text(dir / "out/kt.json"));
  const auto& maps = manifest.at("kernels").at(0).at("launches").at(0).at("tensor_maps");
  REQUIRE(maps.size() == 2);
  CHECK(maps[0].at("map") == "2-D map of 128 x 64 2-byte elements, box 64 x 64, 128-byte swizzle");
  CHECK(maps[1].at("map") == "2-D map of 64 x 128 2-byte elements, box 64 x 64, 128-byte swizzle");
  // The library's C passes CU_TENSOR_MAP_SWIZZLE_128B (3) for a swizzled
  // map, none (0) for another.
  rt::cuda::TensorMapSpec m;
  m.rank = 2;
  m.element_bytes = 2;
  m.dims = {128, 64, 0, 0, 0};
  m.strides = {256, 0, 0, 0};
  m.box = {64, 64, 0, 0, 0};
  rt::cuda::TensorMapSpec sw = m;
  sw.swizzle = 128;
  CHECK_THAT(launch_initializer(0, {1, 1, 1}, {128, 1, 1}, 0, 0, {0, 1}, {m, sw}),
             Catch::Contains("{2, 2, {128ull, 64ull, 0ull, 0ull, 0ull}, {256ull, 0ull, 0ull, 0ull}, "
                             "{64u, 64u, 0u, 0u, 0u}, 0}, {2, 2, {128ull, 64ull, 0ull, 0ull, 0ull}, "
                             "{256ull, 0ull, 0ull, 0ull}, {64u, 64u, 0u, 0u, 0u}, 3}"));
  const test::CProgramRun c =
      test::run_c_program(dir.path, "check", kSwizzleProgram, dir / "out", "kt", KILN_FAKE_LIBCUDA);
  INFO(c.built.output);
  REQUIRE(c.built.status == 0);
  INFO(c.ran.output);
  CHECK(c.ran.status == 0);
  CHECK(c.ran.output.find("swizzled tensor maps ok") != std::string::npos);
}

}  // namespace kiln
