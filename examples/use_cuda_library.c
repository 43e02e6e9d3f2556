/* use_cuda_library.c: calls a cuda library made by `kiln lib --target cuda`
 * (default name kiln_kernels) the way an application would: the tuned matmul
 * 1024^3 through the dispatcher and through its own entry point, and a shape
 * that was not tuned (the fallback kernel), on device memory allocated
 * through the library, each checked against a naive loop on the host.
 *
 *   build/kiln tune matmul:M=1024,N=1024,K=1024 --target cuda --db kiln.db
 *   build/kiln lib --db kiln.db --out mylib --target cuda
 *   cc -O2 -I mylib examples/use_cuda_library.c mylib/libkiln_kernels.a -lpthread -ldl -lm -o use_cuda_library
 *   ./use_cuda_library
 * A program that uses the CUDA runtime passes its own cudaMalloc'd pointers
 * and cudaStream_t instead. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kiln_kernels.h"

static float* random_matrix(int64_t n, unsigned seed) {
  float* m = malloc(sizeof(float) * n);
  srand(seed);
  for (int64_t i = 0; i < n; ++i) m[i] = (float)rand() / RAND_MAX - 0.5f;
  return m;
}

static void* on_device(const float* host, int64_t n) {
  void* d = NULL;
  if (kiln_kernels_device_alloc(&d, sizeof(float) * n) != kiln_kernels_OK ||
      (host && kiln_kernels_copy_to_device(d, host, sizeof(float) * n) != kiln_kernels_OK)) {
    fprintf(stderr, "%s\n", kiln_kernels_last_error());
    exit(1);
  }
  return d;
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
  float *A = random_matrix(M * K, 1), *B = random_matrix(K * N, 2), *C = malloc(sizeof(float) * M * N);
  float *dA = on_device(A, M * K), *dB = on_device(B, K * N), *dC = on_device(NULL, M * N);
  void* stream = NULL; /* the default stream; any CUstream / cudaStream_t works */
  int rc = use_entry ? kiln_kernels_matmul_f32_M1024_N1024_K1024(dA, dB, dC, stream)
                     : kiln_kernels_matmul_f32(M, N, K, dA, dB, dC, stream);
  if (rc == kiln_kernels_OK) rc = kiln_kernels_synchronize(stream);
  if (rc == kiln_kernels_OK) rc = kiln_kernels_copy_to_host(C, dC, sizeof(float) * M * N);
  if (rc != kiln_kernels_OK) fprintf(stderr, "%s: %s\n", what, kiln_kernels_last_error());
  double err = rc == kiln_kernels_OK ? check(M, N, K, A, B, C) : 1;
  printf("%-38s %4lldx%4lldx%4lld  rc %d  max rel error %.2e\n", what, (long long)M, (long long)N, (long long)K, rc,
         err);
  kiln_kernels_device_free(dA), kiln_kernels_device_free(dB), kiln_kernels_device_free(dC);
  free(A), free(B), free(C);
  return rc != 0 || err > 1e-4;
}

int main(void) {
  int bad = 0;
  printf("kiln_kernels for %s\n", kiln_kernels_ARCH);
  bad |= run("dispatcher, tuned shape", 1024, 1024, 1024, 0);
  bad |= run("tuned kernel's own entry point", 1024, 1024, 1024, 1);
  bad |= run("dispatcher, untuned shape (fallback)", 100, 37, 53, 0);
  puts(bad ? "FAILED" : "all results correct");
  return bad;
}
