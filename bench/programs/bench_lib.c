/* Times a kernel of a library built by `kiln lib --name benchlib` through
 * its dispatcher, with the protocol of `kiln run` (one warm-up call, `number`
 * calls per measurement grown until a measurement lasts --min-repeat-ms,
 * --repeat measurements), and checks sampled outputs against a naive
 * reference. Prints one JSON object: workload, gflops (median), gflops_best,
 * median_ms, number, correct. Used by bench/bench_lib.sh.
 *
 *   bench_lib [--repeat R] [--min-repeat-ms T] matmul M N K
 *   bench_lib [--repeat R] [--min-repeat-ms T] conv2d N C H W K R S stride pad dilation
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchlib.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static float* make(int64_t n) {
  float* p = (float*)aligned_alloc(64, ((size_t)n * sizeof(float) + 63) / 64 * 64);
  if (!p) {
    fprintf(stderr, "bench_lib: out of memory\n");
    exit(1);
  }
  uint32_t s = (uint32_t)n * 2654435761u;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  return p;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static int64_t p[10];
static float *in0, *in1, *out;
static int is_conv;

static int call(void) {
#ifdef benchlib_HAVE_conv2d_f32
  if (is_conv) return benchlib_conv2d_f32(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], in0, in1, out);
#endif
#ifdef benchlib_HAVE_matmul_f32
  if (!is_conv) return benchlib_matmul_f32(p[0], p[1], p[2], in0, in1, out);
#endif
  fprintf(stderr, "bench_lib: the library has no f32 %s dispatcher\n", is_conv ? "conv2d" : "matmul");
  exit(2);
}

static double measure_ms(int number) {
  double t0 = now_ms();
  for (int i = 0; i < number; ++i) {
    if (call() != 0) {
      fprintf(stderr, "bench_lib: the kernel failed\n");
      exit(1);
    }
  }
  return now_ms() - t0;
}

/* The reference value of flat output element `e`. */
static double reference(int64_t e) {
  double s = 0;
  if (!is_conv) {
    int64_t N = p[1], K = p[2], i = e / N, j = e % N;
    for (int64_t k = 0; k < K; ++k) s += (double)in0[i * K + k] * in1[k * N + j];
    return s;
  }
  int64_t C = p[1], H = p[2], W = p[3], K = p[4], R = p[5], S = p[6], st = p[7], pad = p[8], dil = p[9];
  int64_t OH = (H + 2 * pad - dil * (R - 1) - 1) / st + 1, OW = (W + 2 * pad - dil * (S - 1) - 1) / st + 1;
  int64_t ow = e % OW, oh = e / OW % OH, k = e / (OW * OH) % K, n = e / (OW * OH * K);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t q = 0; q < S; ++q) {
        int64_t ih = oh * st - pad + r * dil, iw = ow * st - pad + q * dil;
        if (ih >= 0 && ih < H && iw >= 0 && iw < W)
          s += (double)in0[((n * C + c) * H + ih) * W + iw] * in1[((k * C + c) * R + r) * S + q];
      }
  return s;
}

int main(int argc, char** argv) {
  int repeat = 10;
  double min_repeat_ms = 100;
  int a = 1;
  for (; a + 1 < argc && strncmp(argv[a], "--", 2) == 0; a += 2) {
    if (strcmp(argv[a], "--repeat") == 0) repeat = atoi(argv[a + 1]);
    else if (strcmp(argv[a], "--min-repeat-ms") == 0) min_repeat_ms = atof(argv[a + 1]);
  }
  if (a >= argc || (strcmp(argv[a], "matmul") != 0 && strcmp(argv[a], "conv2d") != 0) || repeat < 1) {
    fprintf(stderr, "usage: bench_lib [--repeat R] [--min-repeat-ms T] matmul M N K | conv2d N C H W K R S stride pad dilation\n");
    return 2;
  }
  is_conv = strcmp(argv[a], "conv2d") == 0;
  const int nparams = is_conv ? 10 : 3;
  if (argc - a - 1 != nparams) {
    fprintf(stderr, "bench_lib: %s takes %d sizes\n", argv[a], nparams);
    return 2;
  }
  for (int i = 0; i < nparams; ++i) p[i] = atoll(argv[a + 1 + i]);

  int64_t outputs;
  double flops;
  if (is_conv) {
    int64_t OH = (p[2] + 2 * p[8] - p[9] * (p[5] - 1) - 1) / p[7] + 1;
    int64_t OW = (p[3] + 2 * p[8] - p[9] * (p[6] - 1) - 1) / p[7] + 1;
    in0 = make(p[0] * p[1] * p[2] * p[3]);
    in1 = make(p[4] * p[1] * p[5] * p[6]);
    outputs = p[0] * p[4] * OH * OW;
    flops = 2.0 * (double)outputs * (double)(p[1] * p[5] * p[6]);
  } else {
    in0 = make(p[0] * p[2]);
    in1 = make(p[2] * p[1]);
    outputs = p[0] * p[1];
    flops = 2.0 * (double)p[0] * (double)p[1] * (double)p[2];
  }
  out = make(outputs);

  if (call() != 0) {
    fprintf(stderr, "bench_lib: the kernel failed\n");
    return 1;
  }
  int correct = 1;
  for (int i = 0; i < 256; ++i) {
    int64_t e = i == 0 ? 0 : (i == 1 ? outputs - 1 : (int64_t)((uint64_t)i * 2654435761u % (uint64_t)outputs));
    double want = reference(e);
    if (fabs(out[e] - want) > 1e-3 * (1 + fabs(want))) correct = 0;
  }

  int number = 1;
  for (;;) { /* calibration, as kiln's time evaluator */
    double ms = measure_ms(number);
    if (ms >= min_repeat_ms || number >= (1 << 30)) break;
    double per_call = ms / number;
    double estimate = per_call > 0 ? min_repeat_ms / per_call + 1 : (double)(1 << 30);
    double grown = ceil(number * 1.618);
    number = (int)fmin(estimate > grown ? estimate : grown, (double)(1 << 30));
  }
  double* samples = (double*)malloc(sizeof(double) * (size_t)repeat);
  for (int r = 0; r < repeat; ++r) samples[r] = measure_ms(number) / number;
  qsort(samples, (size_t)repeat, sizeof(double), cmp_double);
  double median = repeat % 2 ? samples[repeat / 2] : (samples[repeat / 2 - 1] + samples[repeat / 2]) / 2;
  printf("{\"op\":\"%s\",\"gflops\":%.3f,\"gflops_best\":%.3f,\"median_ms\":%.6f,\"number\":%d,\"threads\":%d,"
         "\"correct\":%s}\n",
         argv[a], flops / (median * 1e6), flops / (samples[0] * 1e6), median, number, benchlib_num_threads(),
         correct ? "true" : "false");
  return correct ? 0 : 1;
}
