# Shared by the tests/cli_*.sh scripts (sourced, after KILN is set): the
# pass / fail counters and `expect`, which runs kiln and checks its exit
# code and that its output contains a string.
#   expect CODE 'substring' -- kiln-args...
# EXPECT_TIMEOUT (seconds) bounds each run when set (a hung kiln fails).
# `skip REASON` records a check that cannot run here; `finish NAME` ends
# the script: exit 1 on any failure, else 77 (ctest: Skipped, the tests'
# SKIP_RETURN_CODE) when a check was skipped, else 0.
fails=0
pass=0
skipped=0

ok() { pass=$((pass + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
skip() { echo "kiln-test-skipped: $*"; skipped=$((skipped + 1)); }
finish() {
  echo "$1: $pass passed, $fails failed, $skipped skipped"
  [ "$fails" -eq 0 ] || exit 1
  [ "$skipped" -eq 0 ] || exit 77
  exit 0
}

expect() {
  local code="$1" want="$2"
  shift 3
  local out rc
  if [ -n "${EXPECT_TIMEOUT:-}" ]; then
    out=$(timeout "$EXPECT_TIMEOUT" "$KILN" "$@" 2>&1)
  else
    out=$("$KILN" "$@" 2>&1)
  fi
  rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -qF -- "$want" <<<"$out"; then
    fail "kiln $* -> exit $rc (want $code), output:"
    echo "$out" | tail -8
    echo "  (expected to contain: $want)"
  else
    ok
  fi
}

# wait_for FILE PATTERN SECONDS: until FILE contains PATTERN (1 on time-out).
wait_for() {
  local i
  for ((i = 0; i < $3 * 20; i++)); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# use_tmpd_and_background: a temporary folder TMPD, and `pids` for the
# processes the script starts in the background; when the script exits, they
# are SIGKILLed and TMPD is removed.
cleanup_tmpd_and_background() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$TMPD"
}
use_tmpd_and_background() {
  TMPD=$(mktemp -d)
  pids=()
  trap cleanup_tmpd_and_background EXIT
}
