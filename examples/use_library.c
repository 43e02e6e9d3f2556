/* use_library.c: calls a library made by `kiln lib` (default name
 * kiln_kernels) the way an application would: the tuned matmul 1024^3
 * through the dispatcher and through its own entry point, and a shape that
 * was not tuned (the generic fallback), each checked against a naive loop.
 *
 *   build/kiln lib --db kiln.db --out mylib
 *   cc -O2 -I mylib examples/use_library.c mylib/libkiln_kernels.a -lpthread -lm -o use_library && ./use_library
 */
#define _POSIX_C_SOURCE 200112L /* clock_gettime, posix_memalign */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kiln_kernels.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* 64-byte aligned, so the library runs its kernels on the buffers directly
 * (other pointers work too, through aligned copies). */
static float* aligned_matrix(int64_t n) {
  void* p = NULL;
  if (posix_memalign(&p, 64, sizeof(float) * n) != 0) abort();
  return p;
}

static float* random_matrix(int64_t n, unsigned seed) {
  float* m = aligned_matrix(n);
  srand(seed);
  for (int64_t i = 0; i < n; ++i) m[i] = (float)rand() / RAND_MAX - 0.5f;
  return m;
}

/* Largest |C - A.B| relative to 1 + |A.B| over a sample of rows. */
static double check(int64_t M, int64_t N, int64_t K, const float* A, const float* B, const float* C) {
  double worst = 0;
  for (int64_t i = 0; i < M; i += (M > 64 ? 61 : 1))
    for (int64_t j = 0; j < N; ++j) {
      double want = 0;
      for (int64_t k = 0; k < K; ++k) want += (double)A[i * K + k] * B[k * N + j];
      double err = fabs(C[i * N + j] - want) / (1 + fabs(want));
      if (err > worst) worst = err;
    }
  return worst;
}

static int run(const char* what, int64_t M, int64_t N, int64_t K, int use_entry) {
  float *A = random_matrix(M * K, 1), *B = random_matrix(K * N, 2), *C = aligned_matrix(M * N);
  int rc = 0, reps = 0;
  double t0 = now_s(), t = 0;
  do { /* at least 0.5 s of calls */
    rc = use_entry ? kiln_kernels_matmul_f32_M1024_N1024_K1024(A, B, C) : kiln_kernels_matmul_f32(M, N, K, A, B, C);
    ++reps;
    t = now_s() - t0;
  } while (rc == 0 && t < 0.5);
  double err = check(M, N, K, A, B, C);
  printf("%-34s %4lldx%4lldx%4lld  rc %d  max rel error %.2e  %7.1f GFLOP/s\n", what, (long long)M, (long long)N,
         (long long)K, rc, err, 2.0 * M * N * K * reps / t * 1e-9);
  free(A), free(B), free(C);
  return rc != 0 || err > 1e-4;
}

int main(void) {
  int bad = 0;
  printf("kiln_kernels: %d threads\n", kiln_kernels_num_threads());
  bad |= run("dispatcher, tuned shape", 1024, 1024, 1024, 0);
  bad |= run("tuned kernel's own entry point", 1024, 1024, 1024, 1);
  bad |= run("dispatcher, untuned shape (fallback)", 100, 37, 53, 0);
  puts(bad ? "FAILED" : "all results correct");
  return bad;
}
