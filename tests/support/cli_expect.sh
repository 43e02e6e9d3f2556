# Shared by the tests/cli_*.sh scripts (sourced, after KILN is set): the
# pass / fail counters and `expect`, which runs kiln and checks its exit
# code and that its output contains a string.
#   expect CODE 'substring' -- kiln-args...
# EXPECT_TIMEOUT (seconds) bounds each run when set (a hung kiln fails).
fails=0
pass=0

ok() { pass=$((pass + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

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
