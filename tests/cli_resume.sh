#!/usr/bin/env bash
# No record lost to a kill: `kiln tune` commits each measurement as soon as
# it is measured and prints progress with it, so a job killed with SIGKILL
# after a few measurements leaves them in the database; the resumed job
# measures no recorded config again and ends with exactly --trials distinct
# configs.
# Usage: cli_resume.sh path/to/kiln
set -u
KILN="$1"
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_expect.sh"
TMPD=$(mktemp -d)
job=
trap '[ -n "$job" ] && kill -9 "$job" 2>/dev/null; rm -rf "$TMPD"' EXIT
DB="$TMPD/k.db"
W=matmul:M=48,N=40,K=36
TUNE=(tune "$W" --trials 24 --batch 12 --tuner random --db "$DB" --repeat 2 --min-repeat-ms 2)

sql() {
  python3 -c "import sqlite3,sys; print(*sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone())" "$DB" "$1"
}

progress_lines() { grep -c "/24 trials" "$TMPD/err" 2>/dev/null || true; }

# Progress lines ("W: N/24 trials, ...") come one per measured candidate.
"$KILN" "${TUNE[@]}" >"$TMPD/out" 2>"$TMPD/err" &
job=$!
for ((i = 0; i < 1200; i++)); do
  [ "$(progress_lines)" -ge 4 ] && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.05
done
kill -9 "$job" 2>/dev/null
wait "$job" 2>/dev/null
job=
seen=$(progress_lines)
[ "$seen" -ge 4 ] && ok || fail "only $seen progress lines before the kill: $(tail -3 "$TMPD/err")"
grep -q "^$W[^ ]*: 1/24 trials, [01] errors, best [0-9.]* GFLOP/s, ETA" "$TMPD/err" && ok ||
  fail "the first progress line: $(head -1 "$TMPD/err")"
kept=$(sql "select count(*) from records")
# Every candidate whose progress line was printed was committed first.
[ "$kept" -ge "$seen" ] && [ "$kept" -lt 24 ] && ok || fail "$kept records after a kill at $seen progress lines"

expect 0 "trials 24 ($((24 - kept)) new)" -- "${TUNE[@]}"
[ "$(sql "select count(*) from records")" -eq 24 ] && ok || fail "records after resuming: $(sql "select count(*) from records")"
[ "$(sql "select count(distinct config_index) from records")" -eq 24 ] && ok ||
  fail "distinct configs after resuming: $(sql "select count(distinct config_index) from records")"

echo "cli_resume: $pass passed, $fails failed"
[ "$fails" -eq 0 ]
