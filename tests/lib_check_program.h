// The C program the `kiln lib` tests compile against a generated library
// named "tk" (tuned: matmul f32 32x48x40, matmul+bias+relu f32 16x24x8,
// conv2d f32 N1 C3 H9 W9 K8 R3 S3 stride1 pad1). It calls tuned kernels
// (dispatcher and named entry points), fallback shapes, unaligned and
// overlapping buffers, argument errors and concurrent callers, checks every
// result against a naive reference of its own, prints "threads N" and
// "ok N checks", and exits 1 on any mismatch.
#pragma once

namespace kiln::test {

inline const char* const kLibCheckProgram = R"C(
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tk.h"

static _Atomic int failures, checks;
static _Thread_local uint32_t seed = 12345;

static float rnd(void) {
  seed = seed * 1664525u + 1013904223u;
  return (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* n random floats starting `misalign` floats past a 64-byte boundary (leaked). */
static float* make(int64_t n, int misalign) {
  size_t bytes = ((size_t)(n + misalign) * sizeof(float) + 63) / 64 * 64 + 64;
  float* base = (float*)aligned_alloc(64, bytes);
  float* p = base + misalign;
  for (int64_t i = 0; i < n; ++i) p[i] = rnd();
  return p;
}

static void ref_matmul(int64_t M, int64_t N, int64_t K, const float* A, const float* B, const float* bias, int relu,
                       double* out) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += (double)A[i * K + k] * (double)B[k * N + j];
      if (bias) s += bias[j];
      if (relu && s < 0) s = 0;
      out[i * N + j] = s;
    }
}

static void ref_conv(const int64_t* d, const float* data, const float* weight, double* out, int64_t OH, int64_t OW) {
  int64_t N = d[0], C = d[1], H = d[2], W = d[3], K = d[4], R = d[5], S = d[6], st = d[7], pad = d[8], dil = d[9];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double s = 0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t r = 0; r < R; ++r)
              for (int64_t q = 0; q < S; ++q) {
                int64_t ih = oh * st - pad + r * dil, iw = ow * st - pad + q * dil;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                s += (double)data[((n * C + c) * H + ih) * W + iw] * (double)weight[((k * C + c) * R + r) * S + q];
              }
          out[((n * K + k) * OH + oh) * OW + ow] = s;
        }
}

static void expect(const char* what, int rc, const float* got, const double* want, int64_t n) {
  ++checks;
  if (rc != 0) {
    printf("FAIL %s: returned %d\n", what, rc);
    ++failures;
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (fabs((double)got[i] - want[i]) > 1e-3 * (1 + fabs(want[i]))) {
      printf("FAIL %s: element %lld is %g, want %g\n", what, (long long)i, got[i], want[i]);
      ++failures;
      return;
    }
  }
}

static void expect_rc(const char* what, int rc, int want) {
  ++checks;
  if (rc != want) {
    printf("FAIL %s: returned %d, want %d\n", what, rc, want);
    ++failures;
  }
}

enum { DISPATCH, ENTRY };

static void check_matmul(const char* what, int64_t M, int64_t N, int64_t K, int misalign, int via) {
  float* A = make(M * K, misalign);
  float* B = make(K * N, misalign ? misalign + 1 : 0);
  float* C = make(M * N, misalign ? misalign + 2 : 0);
  double* want = (double*)malloc(sizeof(double) * (size_t)(M * N + 1));
  ref_matmul(M, N, K, A, B, NULL, 0, want);
  int rc = via == ENTRY ? tk_matmul_f32_M32_N48_K40(A, B, C) : tk_matmul_f32(M, N, K, A, B, C);
  expect(what, rc, C, want, M * N);
  free(want);
}

static void check_matmul_bias_relu(const char* what, int64_t M, int64_t N, int64_t K, int misalign, int via) {
  float* A = make(M * K, misalign);
  float* B = make(K * N, 0);
  float* bias = make(N, misalign);
  float* C = make(M * N, misalign ? 3 : 0);
  double* want = (double*)malloc(sizeof(double) * (size_t)(M * N + 1));
  ref_matmul(M, N, K, A, B, bias, 1, want);
  int rc = via == ENTRY ? tk_matmul_bias_relu_f32_M16_N24_K8(A, B, bias, C)
                        : tk_matmul_bias_relu_f32(M, N, K, A, B, bias, C);
  expect(what, rc, C, want, M * N);
  free(want);
}

static void check_conv(const char* what, const int64_t* d, int misalign, int via) {
  int64_t OH = (d[2] + 2 * d[8] - d[9] * (d[5] - 1) - 1) / d[7] + 1;
  int64_t OW = (d[3] + 2 * d[8] - d[9] * (d[6] - 1) - 1) / d[7] + 1;
  float* data = make(d[0] * d[1] * d[2] * d[3], misalign);
  float* weight = make(d[4] * d[1] * d[5] * d[6], misalign ? 5 : 0);
  float* out = make(d[0] * d[4] * OH * OW, misalign ? 7 : 0);
  double* want = (double*)malloc(sizeof(double) * (size_t)(d[0] * d[4] * OH * OW));
  ref_conv(d, data, weight, want, OH, OW);
  int rc = via == ENTRY ? tk_conv2d_f32_N1_C3_H9_W9_K8_R3_S3_stride1_pad1_dilation1(data, weight, out)
                        : tk_conv2d_f32(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], data, weight, out);
  expect(what, rc, out, want, d[0] * d[4] * OH * OW);
  free(want);
}

static void* concurrent_caller(void* arg) {
  (void)arg;
  for (int i = 0; i < 6; ++i) {
    check_matmul("concurrent tuned matmul", 32, 48, 40, 0, DISPATCH);
    check_matmul("concurrent fallback matmul", 64, 40, 50, 0, DISPATCH);
  }
  return NULL;
}

int main(void) {
  /* tuned matmul: dispatcher, entry point, unaligned buffers */
  check_matmul("tuned matmul", 32, 48, 40, 0, DISPATCH);
  check_matmul("tuned matmul entry point", 32, 48, 40, 0, ENTRY);
  check_matmul("tuned matmul, unaligned", 32, 48, 40, 1, DISPATCH);
  check_matmul("tuned matmul entry point, unaligned", 32, 48, 40, 3, ENTRY);
  /* fallback shapes */
  const int64_t shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 48, 40}, {32, 48, 41}, {100, 70, 90}, {3, 4, 0}};
  for (int i = 0; i < 6; ++i) check_matmul("fallback matmul", shapes[i][0], shapes[i][1], shapes[i][2], i % 2, DISPATCH);
  /* epilogue family */
  check_matmul_bias_relu("tuned matmul+bias+relu", 16, 24, 8, 0, DISPATCH);
  check_matmul_bias_relu("tuned matmul+bias+relu entry point, unaligned", 16, 24, 8, 1, ENTRY);
  check_matmul_bias_relu("fallback matmul+bias+relu", 5, 6, 7, 2, DISPATCH);
  /* conv2d */
  const int64_t tuned[10] = {1, 3, 9, 9, 8, 3, 3, 1, 1, 1};
  check_conv("tuned conv2d", tuned, 0, DISPATCH);
  check_conv("tuned conv2d entry point, unaligned", tuned, 1, ENTRY);
  check_conv("tuned conv2d, unaligned", tuned, 2, DISPATCH);
  const int64_t convs[][10] = {{2, 3, 9, 9, 8, 3, 3, 1, 1, 1}, {1, 4, 11, 10, 5, 3, 2, 2, 0, 2}, {1, 2, 5, 5, 3, 1, 1, 1, 0, 1},
                               {1, 8, 20, 20, 16, 3, 3, 1, 1, 1}};
  for (int i = 0; i < 4; ++i) check_conv("fallback conv2d", convs[i], i % 2, DISPATCH);

  /* the output overlaps an input: tuned (aligned, so only the overlap forces the copy) and fallback */
  {
    float* buf = make(32 * 40 + 32 * 48, 0);
    float* A = buf;
    float* C = buf + 640;
    float* Acopy = make(32 * 40, 0);
    memcpy(Acopy, A, sizeof(float) * 32 * 40);
    float* B = make(40 * 48, 0);
    double want[32 * 48];
    ref_matmul(32, 48, 40, Acopy, B, NULL, 0, want);
    expect("tuned matmul, output overlapping A", tk_matmul_f32(32, 48, 40, A, B, C), C, want, 32 * 48);
    float* S = make(16 * 16, 0);
    float* Scopy = make(16 * 16, 0);
    memcpy(Scopy, S, sizeof(float) * 16 * 16);
    double want2[16 * 16];
    ref_matmul(16, 16, 16, Scopy, Scopy, NULL, 0, want2);
    expect("fallback matmul in place (C = A = B)", tk_matmul_f32(16, 16, 16, S, S, S), S, want2, 16 * 16);
  }

  /* argument errors */
  float* X = make(64, 0);
  expect_rc("negative M", tk_matmul_f32(-1, 2, 2, X, X, X), tk_ERROR_ARGUMENT);
  expect_rc("NULL A", tk_matmul_f32(2, 2, 2, NULL, X, X), tk_ERROR_ARGUMENT);
  expect_rc("NULL in an entry point", tk_matmul_f32_M32_N48_K40(X, NULL, X), tk_ERROR_ARGUMENT);
  expect_rc("empty matmul", tk_matmul_f32(0, 5, 5, NULL, NULL, NULL), tk_OK);
  expect_rc("huge matmul", tk_matmul_f32(INT64_MAX / 2, 4, 4, X, X, X), tk_ERROR_ARGUMENT);
  expect_rc("conv2d kernel larger than the input", tk_conv2d_f32(1, 1, 2, 2, 1, 5, 5, 1, 0, 1, X, X, X),
            tk_ERROR_ARGUMENT);
  expect_rc("conv2d stride 0", tk_conv2d_f32(1, 1, 4, 4, 1, 1, 1, 0, 0, 1, X, X, X), tk_ERROR_ARGUMENT);
  expect_rc("conv2d negative pad", tk_conv2d_f32(1, 1, 4, 4, 1, 1, 1, 1, -1, 1, X, X, X), tk_ERROR_ARGUMENT);

  /* several threads calling at once */
  pthread_t threads[3];
  for (int i = 0; i < 3; ++i) pthread_create(&threads[i], NULL, concurrent_caller, NULL);
  for (int i = 0; i < 3; ++i) pthread_join(threads[i], NULL);

  printf("threads %d\n", tk_num_threads());
  if (failures) {
    printf("%d of %d checks failed\n", (int)failures, (int)checks);
    return 1;
  }
  printf("ok %d checks\n", (int)checks);
  return 0;
}
)C";

}  // namespace kiln::test
