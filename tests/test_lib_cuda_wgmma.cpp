// `kiln lib --target "cuda -arch=sm_90a"` with a tuned wgmma kernel (the
// GEMM on warpgroups from 8 x 8 shared tiles): the library runs it, through
// the stand-in driver and the emulated image here, and a C program gets the
// product it computes itself; an sm_90 library cannot take the record.
#include <catch2/catch.hpp>
#include <fstream>

#include "codegen/cuda_emulation.h"
#include "library/library_builder.h"
#include "support/skip.h"
#include "tests/lib_cuda_test_util.h"
#include "tests/lib_test_util.h"

namespace kiln {
namespace {

// Small integers in f16 (exact), their product summed in f32 and stored as
// f16: exact too, every sum below 2048.
const char* const kProgram = R"C(#include <stdint.h>
#include <stdio.h>
#include "kt.h"
static uint16_t half_of(int v) { /* |v| < 2048, an exact f16 */
  if (v == 0) return 0;
  uint16_t sign = v < 0 ? 0x8000 : 0;
  unsigned m = (unsigned)(v < 0 ? -v : v);
  int e = 0;
  while ((m >> e) > 1) ++e;
  return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)(((m << (10 - e)) & 0x3FF)));
}
int main(void) {
  enum { M = 128, N = 64, K = 64 };
  static uint16_t a[M * K], b[K * N], c[M * N];
  static int av[M * K], bv[K * N];
  for (int i = 0; i < M * K; ++i) { av[i] = (i * 7 + 3) % 5 - 2; a[i] = half_of(av[i]); }
  for (int i = 0; i < K * N; ++i) { bv[i] = (i * 5 + 1) % 7 - 3; b[i] = half_of(bv[i]); }
  void *da, *db, *dc;
  if (kt_device_alloc(&da, sizeof a) || kt_device_alloc(&db, sizeof b) || kt_device_alloc(&dc, sizeof c)) return 2;
  if (kt_copy_to_device(da, a, sizeof a) || kt_copy_to_device(db, b, sizeof b)) return 3;
  int rc = kt_matmul_f16(M, N, K, da, db, dc, NULL);
  if (rc != kt_OK) { printf("kt_matmul_f16 -> %d: %s\n", rc, kt_last_error()); return 4; }
  if (kt_copy_to_host(c, dc, sizeof c)) return 5;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int s = 0;
      for (int k = 0; k < K; ++k) s += av[i * K + k] * bv[k * N + j];
      if (c[i * N + j] != half_of(s)) {
        printf("C[%d][%d] = 0x%04x, want 0x%04x (%d)\n", i, j, c[i * N + j], half_of(s), s);
        return 6;
      }
    }
  printf("wgmma ok\n");
  return 0;
}
)C";

}  // namespace

TEST_CASE("lib_cuda: a tuned wgmma kernel runs from an sm_90a library", "[lib][wgmma]") {
  std::string why;
  if (!test::have_library_tools(&why)) KILN_SKIP(why);
  test::TempDir dir("kiln_lib_cuda_wgmma");
  test::ImageKind kind("emulated");
  LibraryOptions o =
      test::one_record_library(dir, "matmul:M=128,N=64,K=64,dtype=f16", "cuda -arch=sm_90a",
                               R"({"tensor_core":"wgmma","wgmma_m":[1,2],"wgmma_n":[1,1,8],"mma_k":[2,2],"stages":2,)"
                               R"("producer_warps":1,"fill_vec":8})");
  const LibraryResult r = build_library(o);
  REQUIRE(r.kernels.size() == 1);

  const test::CProgramRun c = test::run_c_program(dir.path, "check", kProgram, dir / "out", "kt", KILN_FAKE_LIBCUDA);
  INFO(c.built.output);
  REQUIRE(c.built.status == 0);
  const test::ShellResult& run = c.ran;
  INFO(run.output);
  CHECK(run.status == 0);
  CHECK(run.output.find("wgmma ok") != std::string::npos);

  // Plain sm_90 has no wgmma.
  o.target = "cuda -arch=sm_90";
  o.out_dir = dir / "out90";
  CHECK_THROWS_WITH(build_library(o), Catch::Contains("(tuned for sm_90a) cannot be lowered for sm_90: instruction "
                                                      "'cuda.wgmma.m64n64k16.f16' needs sm_90a; the target is sm_90") &&
                                          Catch::Contains("tune the workload for sm_90"));
}

}  // namespace kiln
