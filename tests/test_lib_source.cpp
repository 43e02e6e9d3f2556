// The generated C of a kernel library on its own (no LLVM kernels): the
// header and NAME.c for every op family and input type compile without
// warnings with gcc and clang, the generic kernels of every type match a
// naive reference, and tuned entry points hand their kernels 64-byte-aligned
// buffers (stand-in kernels check the alignment).
#include <catch2/catch.hpp>

#include "library/c_compiler.h"
#include "library/library_c_source.h"
#include "tests/lib_test_util.h"

namespace kiln {
namespace {

LibraryKernelSource kernel(const std::string& family, const std::string& dtype, std::map<std::string, int64_t> shape,
                           std::vector<int64_t> elements, int index) {
  LibraryKernelSource k;
  k.op = family == "conv2d" ? "conv2d" : "matmul";
  k.family = family;
  k.dtype = dtype;
  k.shape = std::move(shape);
  k.entry = "tg_" + family + "_" + dtype + "_tuned";
  k.symbol = "tg__kernel" + std::to_string(index);
  k.arg_elements = std::move(elements);
  k.workload = family + " test";
  k.gflops = 1.5;
  k.tuned_on = "llvm";
  return k;
}

LibrarySource test_library() {
  LibrarySource lib;
  lib.name = "tg";
  lib.target = "llvm";
  lib.kiln_version = KILN_VERSION;
  lib.slot_symbol = "tg__parallel_for";
  const std::map<std::string, int64_t> mm = {{"M", 2}, {"N", 3}, {"K", 4}};
  const std::map<std::string, int64_t> conv = {{"N", 1}, {"C", 1}, {"H", 3},      {"W", 3},   {"K", 1},
                                               {"R", 1}, {"S", 1}, {"stride", 1}, {"pad", 0}, {"dilation", 1}};
  lib.kernels = {
      kernel("matmul", "f64", mm, {8, 12, 6}, 0),        kernel("matmul_relu", "i8", mm, {8, 12, 6}, 1),
      kernel("matmul_bias", "u8", mm, {8, 12, 3, 6}, 2), kernel("matmul_bias_relu", "i32", mm, {8, 12, 3, 6}, 3),
      kernel("conv2d", "i8", conv, {9, 1, 9}, 4),        kernel("conv2d", "f64", conv, {9, 1, 9}, 5)};
  return lib;
}

// Stand-in kernels (return 1 when a buffer is not 64-byte aligned) and the
// checks of the generic kernels against a reference in double.
const char* const kProgram = R"C(
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "tg.h"

static int aligned(void** args, int n) {
  for (int i = 0; i < n; ++i)
    if ((uintptr_t)args[i] & 63) return 0;
  return 1;
}
int32_t tg__kernel0(void** a) { return !aligned(a, 3); }
int32_t tg__kernel1(void** a) { return !aligned(a, 3); }
int32_t tg__kernel2(void** a) { return !aligned(a, 4); }
int32_t tg__kernel3(void** a) { return !aligned(a, 4); }
int32_t tg__kernel4(void** a) { return !aligned(a, 3); }
int32_t tg__kernel5(void** a) { return !aligned(a, 3); }

static int failures;
static uint32_t seed = 99;
static int64_t rnd(int64_t lo, int64_t hi) {
  seed = seed * 1664525u + 1013904223u;
  return lo + (int64_t)((seed >> 8) % (uint32_t)(hi - lo + 1));
}

#define FILL(p, n, lo, hi) for (int64_t i_ = 0; i_ < (n); ++i_) (p)[i_] = rnd(lo, hi)
#define CHECK(what, got, want, n, tol)                                                          \
  for (int64_t i_ = 0; i_ < (n); ++i_)                                                          \
    if (fabs((double)(got)[i_] - (want)[i_]) > (tol) * (1 + fabs((want)[i_]))) {                \
      printf("FAIL %s: element %lld is %g, want %g\n", what, (long long)i_, (double)(got)[i_], \
             (want)[i_]);                                                                        \
      ++failures;                                                                               \
      break;                                                                                    \
    }

#define REF_MATMUL(M, N, K, A, B, bias, relu, out)                               \
  for (int64_t i = 0; i < (M); ++i)                                               \
    for (int64_t j = 0; j < (N); ++j) {                                           \
      double s = 0;                                                               \
      for (int64_t k = 0; k < (K); ++k) s += (double)(A)[i * (K) + k] * (B)[k * (N) + j]; \
      if (bias) s += (bias)[j];                                                   \
      if ((relu) && s < 0) s = 0;                                                 \
      (out)[i * (N) + j] = s;                                                     \
    }

#define MATMUL_CASE(T, OUT_T, call, has_bias, relu, lo, hi, tol)                \
  {                                                                            \
    const int64_t M = 7, N = 9, K = 13;                                        \
    T A[7 * 13], B[13 * 9];                                                    \
    OUT_T bias_[9], C[7 * 9];                                                  \
    double want[7 * 9];                                                        \
    FILL(A, M * K, lo, hi);                                                    \
    FILL(B, K * N, lo, hi);                                                    \
    FILL(bias_, N, -20, 20);                                                   \
    OUT_T* bias = has_bias ? bias_ : NULL;                                     \
    REF_MATMUL(M, N, K, A, B, bias, relu, want);                               \
    int rc = call;                                                             \
    if (rc != 0) {                                                             \
      printf("FAIL %s returned %d\n", #call, rc);                              \
      ++failures;                                                              \
    }                                                                          \
    CHECK(#call, C, want, M * N, tol);                                         \
  }

#define CONV_CASE(T, OUT_T, fn, lo, hi, tol)                                                           \
  {                                                                                                    \
    const int64_t N = 2, C = 3, H = 7, W = 6, K = 4, R = 3, S = 2, st = 2, pad = 1, dil = 1;           \
    const int64_t OH = (H + 2 * pad - dil * (R - 1) - 1) / st + 1, OW = (W + 2 * pad - dil * (S - 1) - 1) / st + 1; \
    T data[2 * 3 * 7 * 6], weight[4 * 3 * 3 * 2];                                                      \
    OUT_T out[2 * 4 * 4 * 4];                                                                          \
    double want[2 * 4 * 4 * 4];                                                                        \
    FILL(data, N * C * H * W, lo, hi);                                                                 \
    FILL(weight, K * C * R * S, lo, hi);                                                               \
    for (int64_t n = 0; n < N; ++n)                                                                    \
      for (int64_t k = 0; k < K; ++k)                                                                  \
        for (int64_t oh = 0; oh < OH; ++oh)                                                            \
          for (int64_t ow = 0; ow < OW; ++ow) {                                                        \
            double s = 0;                                                                              \
            for (int64_t c = 0; c < C; ++c)                                                            \
              for (int64_t r = 0; r < R; ++r)                                                          \
                for (int64_t q = 0; q < S; ++q) {                                                      \
                  int64_t ih = oh * st - pad + r * dil, iw = ow * st - pad + q * dil;                  \
                  if (ih >= 0 && ih < H && iw >= 0 && iw < W)                                          \
                    s += (double)data[((n * C + c) * H + ih) * W + iw] * weight[((k * C + c) * R + r) * S + q]; \
                }                                                                                      \
            want[((n * K + k) * OH + oh) * OW + ow] = s;                                               \
          }                                                                                            \
    int rc = fn(N, C, H, W, K, R, S, st, pad, dil, data, weight, out);                                 \
    if (rc != 0) {                                                                                     \
      printf("FAIL %s returned %d\n", #fn, rc);                                                        \
      ++failures;                                                                                      \
    }                                                                                                  \
    CHECK(#fn, out, want, N * K * OH * OW, tol);                                                       \
  }

static char raw[8][4096] __attribute__((aligned(64)));

int main(void) {
  MATMUL_CASE(double, double, tg_matmul_f64(M, N, K, A, B, C), 0, 0, -9, 9, 1e-12)
  MATMUL_CASE(int8_t, int32_t, tg_matmul_relu_i8(M, N, K, A, B, C), 0, 1, -128, 127, 0)
  MATMUL_CASE(uint8_t, int32_t, tg_matmul_bias_u8(M, N, K, A, B, bias, C), 1, 0, 0, 255, 0)
  MATMUL_CASE(int32_t, int32_t, tg_matmul_bias_relu_i32(M, N, K, A, B, bias, C), 1, 1, -1000, 1000, 0)
  CONV_CASE(int8_t, int32_t, tg_conv2d_i8, -128, 127, 0)
  CONV_CASE(double, double, tg_conv2d_f64, -5, 5, 1e-12)

  /* Tuned entry points and dispatchers: buffers 1 byte off a 64-byte boundary
     reach the stand-in kernels aligned. */
  int rc = 0;
  rc |= tg_matmul_f64_tuned((const double*)(raw[0] + 8), (const double*)(raw[1] + 8), (double*)(raw[2] + 8));
  rc |= tg_matmul_relu_i8_tuned((const int8_t*)(raw[0] + 1), (const int8_t*)(raw[1] + 3), (int32_t*)(raw[2] + 4));
  rc |= tg_matmul_bias_u8_tuned((const uint8_t*)raw[0] + 1, (const uint8_t*)raw[1] + 1, (const int32_t*)(raw[3] + 4),
                                (int32_t*)(raw[2] + 4));
  rc |= tg_matmul_bias_relu_i32(2, 3, 4, (const int32_t*)(raw[0] + 4), (const int32_t*)(raw[1] + 4),
                                (const int32_t*)(raw[3] + 4), (int32_t*)(raw[2] + 4));
  rc |= tg_conv2d_i8(1, 1, 3, 3, 1, 1, 1, 1, 0, 1, (const int8_t*)raw[0] + 1, (const int8_t*)raw[1] + 1,
                     (int32_t*)(raw[2] + 4));
  rc |= tg_conv2d_f64_tuned((const double*)raw[0], (const double*)raw[1], (double*)raw[2]);
  if (rc != 0) {
    printf("FAIL a tuned kernel got an unaligned buffer (%d)\n", rc);
    ++failures;
  }
  /* errors */
  if (tg_conv2d_f64(1, 1, 3, 3, 1, 1, 1, 1, 0, 0, (const double*)raw[0], (const double*)raw[1], (double*)raw[2]) !=
      tg_ERROR_ARGUMENT) {
    printf("FAIL dilation 0 accepted\n");
    ++failures;
  }
  if (tg_matmul_bias_u8(2, 2, 2, (const uint8_t*)raw[0], (const uint8_t*)raw[1], NULL, (int32_t*)raw[2]) !=
      tg_ERROR_ARGUMENT) {
    printf("FAIL NULL bias accepted\n");
    ++failures;
  }
  if (failures) return 1;
  printf("ok\n");
  return 0;
}
)C";

}  // namespace

TEST_CASE("lib: generated C compiles cleanly and its generic kernels are correct for every family and type", "[lib]") {
  test::TempDir tmp;
  const LibrarySource lib = test_library();
  const std::string header = library_header(lib);
  test::write_text(tmp.path + "/tg.h", header);
  test::write_text(tmp.path + "/tg.c", library_c_source(lib));
  test::write_text(tmp.path + "/prog.c", kProgram);
  CHECK_THAT(header, Catch::Contains("int tg_matmul_bias_relu_i32(int64_t M, int64_t N, int64_t K, const int32_t* A, "
                                     "const int32_t* B, const int32_t* bias, int32_t* C);"));
  CHECK_THAT(header, Catch::Contains("int tg_conv2d_i8(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, "
                                     "int64_t R, int64_t S, int64_t stride, int64_t pad, int64_t dilation, const "
                                     "int8_t* data, const int8_t* weight, int32_t* out);"));

  // gcc: warnings are errors; the program links the runtime directly.
  auto gcc = test::shell("cc -std=c11 -O2 -Wall -Wextra -Werror -I " + tmp.path + " " + tmp.path + "/tg.c " + tmp.path +
                         "/prog.c -lpthread -lm -o " + tmp.path + "/prog");
  INFO(gcc.output);
  REQUIRE(gcc.status == 0);
  auto run = test::shell(tmp.path + "/prog");
  INFO(run.output);
  CHECK(run.status == 0);
  CHECK_THAT(run.output, Catch::Contains("ok"));

  // clang, as kiln lib runs it, prints no warning either.
  const std::string obj = tmp.path + "/tg_clang.o";
  auto clang =
      test::shell(find_c_compiler() + " -std=c11 -O2 -fPIC -fvisibility=hidden -Wall -Wextra -Werror -c -I " +
                  tmp.path + " " + tmp.path + "/tg.c -o " + obj);
  INFO(clang.output);
  CHECK(clang.status == 0);
}

TEST_CASE("lib: op families and supported types", "[lib]") {
  CHECK(library_family("matmul", {{"M", 1}, {"bias", 0}, {"relu", 0}}) == "matmul");
  CHECK(library_family("matmul", {{"bias", 1}, {"relu", 0}}) == "matmul_bias");
  CHECK(library_family("matmul", {{"bias", 0}, {"relu", 1}}) == "matmul_relu");
  CHECK(library_family("matmul", {{"bias", 1}, {"relu", 1}}) == "matmul_bias_relu");
  CHECK(library_family("conv2d", {{"N", 1}}) == "conv2d");
  CHECK(library_supports("matmul", "u8"));
  CHECK(library_supports("conv2d", "f64"));
  CHECK_FALSE(library_supports("elemwise", "f32"));
  CHECK_FALSE(library_supports("matmul", "bf16"));
}

}  // namespace kiln
