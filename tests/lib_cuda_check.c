/* lib_cuda_check.c: the C program test_lib_cuda builds against a cuda library
 * named kc (kiln lib --target cuda --name kc) made from the workloads of
 * test_lib_cuda.cpp. It allocates device memory through the library, runs
 * each tuned kernel through its dispatcher and its own entry point, and an
 * untuned shape of each family through the dispatcher (the fallback kernel),
 * and checks every output against a naive loop on the host.
 *
 *   lib_cuda_check run          all of the above, and argument errors
 *   lib_cuda_check no-driver    the first call fails: the driver cannot be loaded
 *   lib_cuda_check wrong-arch   kc_init(0) fails: the device cannot run the library's architecture
 * Exit status 0 when every check passed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc.h"

static int failures = 0;

#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);         \
      printf(__VA_ARGS__);                                \
      printf(" (kc_last_error: %s)\n", kc_last_error()); \
      ++failures;                                         \
    }                                                     \
  } while (0)

static float* host_random(long n, unsigned seed) {
  float* p = malloc(sizeof(float) * (n ? n : 1));
  srand(seed);
  for (long i = 0; i < n; ++i) p[i] = (float)rand() / RAND_MAX * 2 - 1;
  return p;
}

static float* to_device(const float* host, long n) {
  void* d = NULL;
  int rc = kc_device_alloc(&d, sizeof(float) * (n ? n : 1));
  CHECK(rc == kc_OK, "kc_device_alloc -> %d", rc);
  rc = kc_copy_to_device(d, host, sizeof(float) * n);
  CHECK(rc == kc_OK, "kc_copy_to_device -> %d", rc);
  return d;
}

static void compare(const char* what, const float* device_out, const double* want, long n) {
  int rc = kc_synchronize(NULL);
  CHECK(rc == kc_OK, "%s: kc_synchronize -> %d", what, rc);
  float* got = malloc(sizeof(float) * (n ? n : 1));
  rc = kc_copy_to_host(got, device_out, sizeof(float) * n);
  CHECK(rc == kc_OK, "%s: kc_copy_to_host -> %d", what, rc);
  double worst = 0;
  for (long i = 0; i < n; ++i) {
    double err = fabs(got[i] - want[i]) / (1 + fabs(want[i]));
    if (!(err <= worst)) worst = err;
  }
  CHECK(worst < 1e-4, "%s: max relative error %g", what, worst);
  printf("%-48s max rel error %.2e\n", what, worst);
  free(got);
}

/* ---- host references ---- */

static double act(double v, int a) {
  if (a == 1) return v < 0 ? 0 : v;
  if (a == 2) return 0.5 * v * (1 + erf(v / sqrt(2.0)));
  return v;
}

/* out[b,i,j] = act(sum_k A[b,i,k] * B(b,k,j) + bias[j]), B(b,k,j) = B[b,j,k] when trans_b */
static double* gemm_ref(long batch, long M, long N, long K, const float* A, const float* B, const float* bias,
                        int trans_b, int a) {
  double* out = malloc(sizeof(double) * (batch * M * N > 0 ? batch * M * N : 1));
  for (long b = 0; b < batch; ++b)
    for (long i = 0; i < M; ++i)
      for (long j = 0; j < N; ++j) {
        double s = 0;
        for (long k = 0; k < K; ++k)
          s += (double)A[(b * M + i) * K + k] * (trans_b ? B[(b * N + j) * K + k] : B[(b * K + k) * N + j]);
        if (bias) s += bias[j];
        out[(b * M + i) * N + j] = act(s, a);
      }
  return out;
}

static double* softmax_ref(long M, long N, const float* x) {
  double* out = malloc(sizeof(double) * M * N);
  for (long i = 0; i < M; ++i) {
    double m = x[i * N], s = 0;
    for (long j = 1; j < N; ++j) m = x[i * N + j] > m ? x[i * N + j] : m;
    for (long j = 0; j < N; ++j) s += exp(x[i * N + j] - m);
    for (long j = 0; j < N; ++j) out[i * N + j] = exp(x[i * N + j] - m) / s;
  }
  return out;
}

static double* layer_norm_ref(long M, long N, const float* x, const float* g, const float* b) {
  double* out = malloc(sizeof(double) * M * N);
  for (long i = 0; i < M; ++i) {
    double mean = 0, var = 0;
    for (long j = 0; j < N; ++j) mean += x[i * N + j];
    mean /= N;
    for (long j = 0; j < N; ++j) var += (x[i * N + j] - mean) * (x[i * N + j] - mean);
    var /= N;
    for (long j = 0; j < N; ++j) out[i * N + j] = (x[i * N + j] - mean) / sqrt(var + 1e-5) * g[j] + b[j];
  }
  return out;
}

/* ---- the families; use: 0 dispatcher, 1 the tuned kernel's entry point ---- */

static float* device_output(long n) {
  void* p = NULL;
  int rc = kc_device_alloc(&p, sizeof(float) * (n ? n : 1));
  CHECK(rc == kc_OK, "kc_device_alloc -> %d", rc);
  return p;
}

static void matmul_bias_gelu(long M, long N, long K, int use_entry) {
  float *A = host_random(M * K, 1), *B = host_random(K * N, 2), *bias = host_random(N, 3);
  float *dA = to_device(A, M * K), *dB = to_device(B, K * N), *dbias = to_device(bias, N), *dC = device_output(M * N);
  int rc = use_entry ? kc_matmul_bias_gelu_f32_M16_N24_K8(dA, dB, dbias, dC, NULL)
                     : kc_matmul_bias_gelu_f32(M, N, K, dA, dB, dbias, dC, NULL);
  char what[128];
  snprintf(what, sizeof what, "matmul_bias_gelu %ldx%ldx%ld%s", M, N, K, use_entry ? " (entry point)" : "");
  CHECK(rc == kc_OK, "%s -> %d", what, rc);
  double* want = gemm_ref(1, M, N, K, A, B, bias, 0, 2);
  compare(what, dC, want, M * N);
  free(A), free(B), free(bias), free(want);
  kc_device_free(dA), kc_device_free(dB), kc_device_free(dbias), kc_device_free(dC);
}

static void matmul_plain(long M, long N, long K, int use_entry) {
  float *A = host_random(M * K, 4), *B = host_random(K * N, 5);
  float *dA = to_device(A, M * K), *dB = to_device(B, K * N), *dC = device_output(M * N);
  int rc = use_entry ? kc_matmul_f32_M9_N10_K11(dA, dB, dC, NULL) : kc_matmul_f32(M, N, K, dA, dB, dC, NULL);
  char what[128];
  snprintf(what, sizeof what, "matmul %ldx%ldx%ld%s", M, N, K, use_entry ? " (entry point)" : "");
  CHECK(rc == kc_OK, "%s -> %d", what, rc);
  double* want = gemm_ref(1, M, N, K, A, B, NULL, 0, 0);
  compare(what, dC, want, M * N);
  free(A), free(B), free(want);
  kc_device_free(dA), kc_device_free(dB), kc_device_free(dC);
}

static void dense_bias_relu(long N, long IN, long OUT, int use_entry) {
  float *x = host_random(N * IN, 6), *W = host_random(OUT * IN, 7), *bias = host_random(OUT, 8);
  float *dx = to_device(x, N * IN), *dW = to_device(W, OUT * IN), *dbias = to_device(bias, OUT);
  float* dy = device_output(N * OUT);
  int rc = use_entry ? kc_dense_bias_relu_f32_N3_IN29_OUT31(dx, dW, dbias, dy, NULL)
                     : kc_dense_bias_relu_f32(N, IN, OUT, dx, dW, dbias, dy, NULL);
  char what[128];
  snprintf(what, sizeof what, "dense_bias_relu N=%ld IN=%ld OUT=%ld%s", N, IN, OUT, use_entry ? " (entry point)" : "");
  CHECK(rc == kc_OK, "%s -> %d", what, rc);
  double* want = gemm_ref(1, N, OUT, IN, x, W, bias, 1, 1);
  compare(what, dy, want, N * OUT);
  free(x), free(W), free(bias), free(want);
  kc_device_free(dx), kc_device_free(dW), kc_device_free(dbias), kc_device_free(dy);
}

static void batch_matmul(long batch, long M, long N, long K, int use_entry) {
  float *A = host_random(batch * M * K, 9), *B = host_random(batch * K * N, 10);
  float *dA = to_device(A, batch * M * K), *dB = to_device(B, batch * K * N), *dC = device_output(batch * M * N);
  int rc = use_entry ? kc_batch_matmul_f32_batch2_M5_N7_K3(dA, dB, dC, NULL)
                     : kc_batch_matmul_f32(batch, M, N, K, dA, dB, dC, NULL);
  char what[128];
  snprintf(what, sizeof what, "batch_matmul %ldx%ldx%ldx%ld%s", batch, M, N, K, use_entry ? " (entry point)" : "");
  CHECK(rc == kc_OK, "%s -> %d", what, rc);
  double* want = gemm_ref(batch, M, N, K, A, B, NULL, 0, 0);
  compare(what, dC, want, batch * M * N);
  free(A), free(B), free(want);
  kc_device_free(dA), kc_device_free(dB), kc_device_free(dC);
}

static void softmax(long M, long N, int use_entry) {
  float* x = host_random(M * N, 11);
  float *dx = to_device(x, M * N), *dy = device_output(M * N);
  int rc = use_entry ? kc_softmax_f32_M8_N64(dx, dy, NULL) : kc_softmax_f32(M, N, dx, dy, NULL);
  char what[128];
  snprintf(what, sizeof what, "softmax %ldx%ld%s", M, N, use_entry ? " (entry point)" : "");
  CHECK(rc == kc_OK, "%s -> %d", what, rc);
  double* want = softmax_ref(M, N, x);
  compare(what, dy, want, M * N);
  free(x), free(want);
  kc_device_free(dx), kc_device_free(dy);
}

static void layer_norm(long M, long N, int use_entry) {
  float *x = host_random(M * N, 12), *g = host_random(N, 13), *b = host_random(N, 14);
  float *dx = to_device(x, M * N), *dg = to_device(g, N), *db = to_device(b, N), *dy = device_output(M * N);
  int rc = use_entry ? kc_layer_norm_f32_M5_N33(dx, dg, db, dy, NULL) : kc_layer_norm_f32(M, N, dx, dg, db, dy, NULL);
  char what[128];
  snprintf(what, sizeof what, "layer_norm %ldx%ld%s", M, N, use_entry ? " (entry point)" : "");
  CHECK(rc == kc_OK, "%s -> %d", what, rc);
  double* want = layer_norm_ref(M, N, x, g, b);
  compare(what, dy, want, M * N);
  free(x), free(g), free(b), free(want);
  kc_device_free(dx), kc_device_free(dg), kc_device_free(db), kc_device_free(dy);
}

static void argument_errors(void) {
  float* d = device_output(16);
  int rc = kc_matmul_f32(-1, 4, 4, d, d, d, NULL);
  CHECK(rc == kc_ERROR_ARGUMENT && strstr(kc_last_error(), "kc_matmul_f32: M is -1"), "negative M -> %d", rc);
  rc = kc_softmax_f32(2, 3, NULL, d, NULL);
  CHECK(rc == kc_ERROR_ARGUMENT && strstr(kc_last_error(), "kc_softmax_f32: data is NULL"), "NULL data -> %d", rc);
  rc = kc_batch_matmul_f32(1L << 40, 1L << 20, 1L << 20, 1, d, d, d, NULL);
  CHECK(rc == kc_ERROR_ARGUMENT && strstr(kc_last_error(), "overflows"), "huge sizes -> %d", rc);
  rc = kc_matmul_f32(0, 4, 4, d, d, d, NULL); /* an empty output: nothing to do */
  CHECK(rc == kc_OK, "M=0 -> %d", rc);
  rc = kc_init(5);
  CHECK(rc == kc_ERROR_ARGUMENT && strstr(kc_last_error(), "already runs on device 0"), "kc_init(5) -> %d", rc);
  rc = kc_device_alloc(NULL, 4);
  CHECK(rc == kc_ERROR_ARGUMENT, "kc_device_alloc(NULL) -> %d", rc);
  kc_device_free(d);
  printf("argument errors checked\n");
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "run";
  if (strcmp(mode, "no-driver") == 0) {
    void* p = NULL;
    int rc = kc_device_alloc(&p, 16);
    CHECK(rc == kc_ERROR_CUDA && strstr(kc_last_error(), "the CUDA driver") && strstr(kc_last_error(), "could not be loaded"),
          "without a driver -> %d", rc);
    printf("%s\n", kc_last_error());
  } else if (strcmp(mode, "wrong-arch") == 0) {
    int rc = kc_init(0);
    CHECK(rc == kc_ERROR_CUDA && strstr(kc_last_error(), "cannot run"), "kc_init on another architecture -> %d", rc);
    printf("%s\n", kc_last_error());
  } else {
    printf("kc for %s\n", kc_ARCH);
    for (int use_entry = 0; use_entry < 2; ++use_entry) {
      matmul_bias_gelu(16, 24, 8, use_entry);
      matmul_plain(9, 10, 11, use_entry);
      dense_bias_relu(3, 29, 31, use_entry);
      batch_matmul(2, 5, 7, 3, use_entry);
      softmax(8, 64, use_entry);
      layer_norm(5, 33, use_entry);
    }
    /* untuned shapes: the fallback kernels */
    matmul_bias_gelu(7, 13, 5, 0);
    matmul_plain(33, 17, 129, 0);
    matmul_plain(4, 3, 0, 0);
    dense_bias_relu(2, 17, 9, 0);
    batch_matmul(3, 4, 9, 6, 0);
    softmax(3, 301, 0);
    layer_norm(7, 19, 0);
    argument_errors();
    CHECK(kc_unload() == kc_OK, "kc_unload");
    matmul_plain(9, 10, 11, 0); /* loads the kernels again */
  }
  puts(failures ? "FAILED" : "all checks passed");
  return failures != 0;
}
