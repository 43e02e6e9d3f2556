#!/usr/bin/env bash
# `kiln lib --target cuda` from the command line: `kiln tune --target cuda`
# on the stand-in driver (emulated images), a cuda library built from its
# records, and a C program linking it that runs the tuned softmax and the
# fallback on an untuned shape, and max_pool2d's fallback on a padded,
# strided shape, under the stand-in, checked against loops on the host; then
# the user errors, each exiting 2 with its message.
# Usage: cli_lib_cuda.sh path/to/kiln
set -u
KILN="$1"
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_expect.sh"
export EXPECT_TIMEOUT=300
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT

have_tools=1
for tool in cc c++; do command -v $tool >/dev/null || have_tools=0; done
command -v clang-14 >/dev/null || command -v clang >/dev/null || have_tools=0
if [ -z "${KILN_TEST_FAKE_LIBCUDA:-}" ] || [ ! -f "$KILN_TEST_FAKE_LIBCUDA" ]; then
  skip "the libcuda stand-in (KILN_TEST_FAKE_LIBCUDA) is not built"
elif [ "$have_tools" = 0 ]; then
  skip "cc, c++ and clang are needed to build and link the library"
else
  DB="$TMPD/gpu.db"
  KILN_LIBCUDA="$KILN_TEST_FAKE_LIBCUDA" KILN_GPU_IMAGE=emulated expect 0 "errors 0" -- \
    tune softmax:M=8,N=64 --target cuda --trials 3 --db "$DB"
  KILN_LIBCUDA="$KILN_TEST_FAKE_LIBCUDA" KILN_GPU_IMAGE=emulated expect 0 "errors 0" -- \
    tune max_pool2d:C=3,H=8,W=8,R=2,S=2,stride=2 --target cuda --trials 2 --db "$DB"
  KILN_GPU_IMAGE=emulated expect 0 "kiln: warning: KILN_GPU_IMAGE=emulated" -- \
    lib --db "$DB" --out "$TMPD/lib" --name sm --target cuda
  grep -q '"arch": "sm_90"' "$TMPD/lib/sm.json" && ok || fail "sm.json has no arch"
  cat >"$TMPD/app.c" <<'C'
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "sm.h"
static int check(long M, long N) {
  float *x = malloc(sizeof(float) * M * N), *y = malloc(sizeof(float) * M * N);
  for (long i = 0; i < M * N; ++i) x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
  void *dx, *dy;
  if (sm_device_alloc(&dx, sizeof(float) * M * N) || sm_device_alloc(&dy, sizeof(float) * M * N) ||
      sm_copy_to_device(dx, x, sizeof(float) * M * N) || sm_softmax_f32(M, N, dx, dy, NULL) ||
      sm_synchronize(NULL) || sm_copy_to_host(y, dy, sizeof(float) * M * N)) {
    printf("error: %s\n", sm_last_error());
    return 1;
  }
  double worst = 0;
  for (long i = 0; i < M; ++i) {
    double m = x[i * N], s = 0;
    for (long j = 0; j < N; ++j) m = x[i * N + j] > m ? x[i * N + j] : m;
    for (long j = 0; j < N; ++j) s += exp(x[i * N + j] - m);
    for (long j = 0; j < N; ++j) worst = fmax(worst, fabs(y[i * N + j] - exp(x[i * N + j] - m) / s));
  }
  printf("softmax %ldx%ld: max error %.2e\n", M, N, worst);
  return worst > 1e-5;
}
/* max_pool2d over 3x3 windows, stride 2, padding 1 (never the maximum) of [2,3,7,6] */
static int check_pool(void) {
  enum { N = 2, C = 3, H = 7, W = 6, R = 3, S = 3, ST = 2, P = 1, OH = 4, OW = 3 };
  float x[N * C * H * W], y[N * C * OH * OW];
  for (long i = 0; i < N * C * H * W; ++i) x[i] = (float)((i * 53) % 97) / 48.0f - 1.0f;
  void *dx, *dy;
  if (sm_device_alloc(&dx, sizeof x) || sm_device_alloc(&dy, sizeof y) || sm_copy_to_device(dx, x, sizeof x) ||
      sm_max_pool2d_f32(N, C, H, W, R, S, ST, P, dx, dy, NULL) || sm_synchronize(NULL) ||
      sm_copy_to_host(y, dy, sizeof y)) {
    printf("error: %s\n", sm_last_error());
    return 1;
  }
  int wrong = 0;
  for (long p = 0; p < N * C; ++p)
    for (long oh = 0; oh < OH; ++oh)
      for (long ow = 0; ow < OW; ++ow) {
        float m = -INFINITY;
        for (long r = 0; r < R; ++r)
          for (long s = 0; s < S; ++s) {
            const long h = oh * ST - P + r, w = ow * ST - P + s;
            if (h >= 0 && h < H && w >= 0 && w < W && x[(p * H + h) * W + w] > m) m = x[(p * H + h) * W + w];
          }
        wrong += y[(p * OH + oh) * OW + ow] != m;
      }
  printf("max_pool2d 2x3x7x6: %d wrong\n", wrong);
  return wrong != 0;
}
int main(void) { return check(8, 64) | check(5, 100) | check_pool(); }
C
  if cc -std=c11 -I "$TMPD/lib" "$TMPD/app.c" "$TMPD/lib/libsm.a" -lpthread -ldl -lm -o "$TMPD/app" 2>"$TMPD/cc.log"; then
    out=$(KILN_LIBCUDA="$KILN_TEST_FAKE_LIBCUDA" "$TMPD/app" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && grep -q "softmax 8x64" <<<"$out" && grep -q "softmax 5x100" <<<"$out" &&
      grep -q "max_pool2d 2x3x7x6: 0 wrong" <<<"$out"; then ok; else
      fail "the program linking the cuda library: $out"
    fi
  else
    fail "compiling the program against the cuda library: $(cat "$TMPD/cc.log")"
  fi

  # User errors.
  cat >"$TMPD/cpu.jsonl" <<'JSONL'
{"workload": "matmul:M=8,N=8,K=8,dtype=f32,bias=0,relu=0", "op": "matmul", "target": "llvm -mtriple=x86_64-linux-gnu", "config": {"no_such_knob": 1}, "config_index": "0", "samples_ms": [0.1], "error": "none"}
JSONL
  "$KILN" import --db "$TMPD/cpu.db" "$TMPD/cpu.jsonl" >/dev/null 2>&1
  expect 2 "has no cuda records: a cuda library is built from configs tuned for a GPU" -- \
    lib --db "$TMPD/cpu.db" --out "$TMPD/out" --target cuda
  expect 2 "has no CPU (llvm) records" -- lib --db "$DB" --out "$TMPD/out"
  expect 2 "grouped convolutions (groups=2) are not in cuda libraries" -- \
    lib --db "$DB" --out "$TMPD/out" --target cuda --workloads conv2d:C=4,H=8,W=8,K=4,R=3,S=3,groups=2
  expect 2 "cuda libraries take f32, f16 and bf16, this is f64" -- \
    lib --db "$DB" --out "$TMPD/out" --target cuda --workloads softmax:M=8,N=64,dtype=f64
  expect 2 "has no error-free cuda record of 'softmax:M=8,N=32" -- \
    lib --db "$DB" --out "$TMPD/out" --target cuda --workloads softmax:M=8,N=32
  KILN_GPU_IMAGE=fatbin expect 2 "KILN_GPU_IMAGE must be 'cubin' or 'emulated'" -- \
    lib --db "$DB" --out "$TMPD/out" --target cuda
fi
expect 2 "unknown CUDA architecture 'sm_61'" -- lib --db "$TMPD/none.db" --out "$TMPD/out" --target "cuda -arch=sm_61"

finish cli_lib_cuda
