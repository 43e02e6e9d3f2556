#!/usr/bin/env bash
# kiln-serve, the device server without a compiler: it links no LLVM,
# XGBoost, oneDNN or OpenBLAS (ldd); it reports a target that the tuning
# host accepts (llvm, generic CPU, the features /proc/cpuinfo lists), and a
# `kiln tune --pool` job measures on it; its user errors exit 2 with a
# message; KILN_LOG sets its log level and rejects a bad one.
# Usage: cli_serve.sh path/to/kiln (kiln-serve is built next to it)
set -u
KILN="$1"
SERVE="$(dirname "$KILN")/kiln-serve"
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_expect.sh"
EXPECT_TIMEOUT=60
use_tmpd_and_background


# expect_serve CODE 'substring' -- kiln-serve args...
expect_serve() {
  local code="$1" want="$2"
  shift 3
  local out rc
  out=$(timeout 60 "$SERVE" "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -qF -- "$want" <<<"$out"; then
    fail "kiln-serve $* -> exit $rc (want $code), output:"
    echo "$out" | tail -8
  else
    ok
  fi
}

# --- what it links
[ -x "$SERVE" ] && ok || { fail "no kiln-serve next to $KILN"; exit 1; }
libs=$(ldd "$SERVE")
if grep -qiE 'libLLVM|libclang|liblld|xgboost|dnnl|openblas|libz3|libicu|libxml2|libHalide' <<<"$libs"; then
  fail "kiln-serve links a compiler or a baseline:"
  grep -iE 'libLLVM|libclang|liblld|xgboost|dnnl|openblas|libz3|libicu|libxml2|libHalide' <<<"$libs"
else
  ok
fi

# --- user errors
expect_serve 0 "--tracker" -- --help
expect_serve 0 "kiln-serve 0." -- --version
expect_serve 2 "--tracker is required" -- --key cpu
expect_serve 2 "is not an address" -- --tracker nowhere --key cpu
expect_serve 2 "may only contain letters" -- --tracker 127.0.0.1:1 --key 'a b'
expect_serve 2 "cannot register with the tracker at 127.0.0.1:1" -- --tracker 127.0.0.1:1 --key cpu --connect-timeout 0.3
expect_serve 2 "target is an llvm target (e.g. 'llvm -mcpu=znver4') or a cuda one" -- --tracker 127.0.0.1:1 --key cpu \
  --target "opencl"
KILN_LIBCUDA=/nonexistent/libcuda.so.1 expect_serve 2 "a cuda device server measures on a GPU, and the CUDA driver" -- \
  --tracker 127.0.0.1:1 --key cpu --target "cuda -arch=sm_90"
expect_serve 2 "does not run here" -- --tracker 127.0.0.1:1 --key cpu --target "llvm -mtriple=aarch64-linux-gnu"
out=$(KILN_LOG=chatty timeout 10 "$SERVE" --tracker 127.0.0.1:1 --key cpu 2>&1)
[ $? -eq 2 ] && grep -qF "KILN_LOG='chatty' names no log level; use debug, info, warn or error" <<<"$out" && ok ||
  fail "a bad KILN_LOG: $out"
KILN_LOG=chatty expect 2 "KILN_LOG='chatty' names no log level" -- ops

# --- a tuning job measures on it
"$KILN" tracker --listen 127.0.0.1:0 >"$TMPD/tracker.out" 2>"$TMPD/tracker.log" &
pids+=("$!")
wait_for "$TMPD/tracker.out" "listening on" 10 || { fail "the tracker did not start"; exit 1; }
TRACKER=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$TMPD/tracker.out")
KILN_LOG=debug "$SERVE" --tracker "$TRACKER" --key bare --listen 127.0.0.1:0 >"$TMPD/serve.out" 2>"$TMPD/serve.log" &
pids+=("$!")
wait_for "$TMPD/serve.out" "serving on" 10 || { fail "kiln-serve did not start"; cat "$TMPD/serve.log"; exit 1; }
grep -q "kiln-serve: device .* (key 'bare', llvm -mtriple=[^ ]* -mcpu=generic" "$TMPD/serve.out" && ok ||
  fail "kiln-serve's banner: $(cat "$TMPD/serve.out")"
expect 0 "-mcpu=generic" -- tune matmul:M=16,N=16,K=16 --trials 3 --batch 3 --tuner random --db "$TMPD/t.db" \
  --repeat 1 --min-repeat-ms 1 --pool "$TRACKER" --key bare
n=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(
  \"select count(*) from records where error_kind = 'none' and device like 'bare@%'\").fetchone()[0])" "$TMPD/t.db")
[ "${n:-0}" -eq 3 ] && ok || fail "records measured on kiln-serve: ${n:-0}, want 3"
grep -q "serve: measuring" "$TMPD/serve.log" && ok || fail "KILN_LOG=debug showed no measurement: $(tail -3 "$TMPD/serve.log")"

echo "cli_serve: $pass passed, $fails failed"
[ "$fails" -eq 0 ]
