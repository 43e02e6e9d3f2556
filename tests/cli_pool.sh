#!/usr/bin/env bash
# The device pool end to end on loopback: a tracker, two device servers, two
# tuning jobs sharing them at once; one server is killed with SIGKILL in the
# middle of a batch and both jobs must still record every trial (no device
# errors: the lost measurements are retried on the other server); the
# tracker is killed and restarted and the surviving server registers again;
# wrong tokens, unknown keys and bad addresses give clear messages, exit 2.
# Usage: cli_pool.sh path/to/kiln
set -u
KILN="$1"
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_expect.sh"
EXPECT_TIMEOUT=60
use_tmpd_and_background
export KILN_TOKEN=pool-secret

count() { grep -c -- "$2" "$1" 2>/dev/null || true; }

sql() {  # sql DB QUERY
  python3 -c "import sqlite3,sys; print(*sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone())" "$1" "$2" 2>/dev/null
}

devices_at() {  # number of devices the tracker knows, -1 when it does not answer
  timeout 10 "$KILN" pool status --tracker "$TRACKER" --json 2>/dev/null |
    python3 -c "import json,sys; print(len(json.load(sys.stdin)['devices']))" 2>/dev/null || echo -1
}

start_tracker() {  # start_tracker LISTEN
  rm -f "$TMPD/tracker.out"
  "$KILN" tracker --listen "$1" --heartbeat-timeout 1.5 --lease-timeout 6 >"$TMPD/tracker.out" 2>"$TMPD/tracker.log" &
  tracker_pid=$!
  pids+=("$tracker_pid")
  wait_for "$TMPD/tracker.out" "listening on" 10 || { fail "the tracker did not start"; cat "$TMPD/tracker.log"; exit 1; }
  TRACKER=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$TMPD/tracker.out")
}

start_server() {  # start_server NAME [ARGS...]
  local name="$1"
  shift
  # KILN_LOG=debug: the fault test below follows the measurements in the log.
  KILN_LOG=debug "$KILN" serve --tracker "$TRACKER" --key cpu "$@" >"$TMPD/$name.out" 2>"$TMPD/$name.log" &
  local pid=$!
  pids+=("$pid")
  eval "${name}_pid=$pid"
  wait_for "$TMPD/$name.out" "serving on" 10 || { fail "server $name did not start"; cat "$TMPD/$name.log"; exit 1; }
}

# --- user errors
expect 2 "is not an address" -- tracker --listen nowhere
expect 2 "is not an address" -- serve --tracker nowhere --key cpu
expect 2 "cannot register with the tracker at 127.0.0.1:1" -- serve --tracker 127.0.0.1:1 --key cpu --connect-timeout 0.3
expect 2 "cannot reach the tracker at 127.0.0.1:1" -- pool status --tracker 127.0.0.1:1
expect 2 "--pool needs --key" -- tune matmul:M=8,N=8,K=8 --trials 2 --pool 127.0.0.1:1 --db "$TMPD/x.db"
expect 2 "need --pool" -- tune matmul:M=8,N=8,K=8 --trials 2 --key cpu --db "$TMPD/x.db"
expect 2 "TLS needs both --tls-cert and --tls-key" -- tracker --listen 127.0.0.1:0 --tls-cert /etc/hostname

# --- the pool
start_tracker 127.0.0.1:0
start_server s1 --listen 127.0.0.1:0
start_server s2  # listens on every interface: advertises the address that reaches the tracker
grep -q "serving on 127.0.0.1:" "$TMPD/s2.out" && ok || fail "s2 advertises $(cat "$TMPD/s2.out")"
expect 0 "2 device(s), 1 key(s)" -- pool status --tracker "$TRACKER"
expect 0 '"keys":{"cpu":{"devices":2,"leased":0}}' -- pool status --tracker "$TRACKER" --json
expect 2 "wrong token" -- pool status --tracker "$TRACKER" --token guess
KILN_TOKEN= expect 2 "requires a token" -- pool status --tracker "$TRACKER"
KILN_TOKEN=guess expect 2 "refused this server" -- serve --tracker "$TRACKER" --key cpu --listen 127.0.0.1:0
t0=$(date +%s)
expect 2 "no device with key 'gpu'" -- tune matmul:M=8,N=8,K=8 --trials 2 --pool "$TRACKER" --key gpu --pool-wait 1 --db "$TMPD/x.db"
[ $(($(date +%s) - t0)) -le 10 ] && ok || fail "an unknown key took more than 10 s to report"
expect 2 "cannot be combined with --pool" -- tune matmul:M=8,N=8,K=8 --trials 2 --pool "$TRACKER" --key cpu --target llvm --db "$TMPD/x.db"

# Two jobs at once; server s1 is killed in the middle of a batch.
TRIALS=48
tune_job() {  # tune_job NAME WORKLOAD
  timeout 180 "$KILN" tune "$2" --trials $TRIALS --batch 8 --tuner random --seed 3 --db "$TMPD/$1.db" --json \
    --repeat 2 --min-repeat-ms 10 --pool "$TRACKER" --key cpu --job "$1" >"$TMPD/$1.json" 2>"$TMPD/$1.log"
}
tune_job j1 matmul:M=32,N=32,K=32 &
j1=$!
pids+=("$j1")
tune_job j2 matmul:M=32,N=48,K=32 &
j2=$!
pids+=("$j2")
# Both jobs have measured on s1 once its log names both; the jobs take
# turns on the two devices batch by batch, so one of them is in the middle
# of a batch when s1 dies.
for _ in $(seq 600); do
  grep -q "job 'j1'" "$TMPD/s1.log" && grep -q "job 'j2'" "$TMPD/s1.log" && break
  sleep 0.05
done
before1=$(sql "$TMPD/j1.db" "select count(*) from records")
before2=$(sql "$TMPD/j2.db" "select count(*) from records")
s1_measured=$(count "$TMPD/s1.log" "measuring")
S1_ADDR=$(sed -n 's/.*serving on \([^,]*\),.*/\1/p' "$TMPD/s1.out")
kill -9 "$s1_pid"
wait "$s1_pid" 2>/dev/null
wait "$j1"
rc1=$?
wait "$j2"
rc2=$?
for j in j1 j2; do
  n=$(sql "$TMPD/$j.db" "select count(*) from records")
  dev_err=$(sql "$TMPD/$j.db" "select count(*) from records where error_kind = 'device_error'")
  on_s1=$(sql "$TMPD/$j.db" "select count(*) from records where device = 'cpu@$S1_ADDR'")
  echo "pool fault test: job $j recorded ${n:-0}/$TRIALS trials, ${dev_err:-?} device errors, $on_s1 measured on the killed server"
  if [ "${n:-0}" -eq $TRIALS ] && [ "${dev_err:-1}" -eq 0 ]; then ok; else fail "job $j: ${n:-0} records, ${dev_err:-?} device errors"; cat "$TMPD/$j.log" | tail -5; fi
done
echo "pool fault test: s1 killed (SIGKILL) after starting $s1_measured measurements; the jobs had $before1 and $before2 of $TRIALS records then"
[ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ] && ok || fail "tuning jobs exited $rc1 and $rc2"
grep -q "\"new_trials\":$TRIALS" "$TMPD/j1.json" && grep -q "\"new_trials\":$TRIALS" "$TMPD/j2.json" && ok || fail "jobs did not report $TRIALS new trials"
[ "${before1:-0}" -lt $TRIALS ] && [ "${before2:-0}" -lt $TRIALS ] && ok || fail "s1 was killed after a job had finished"
grep -q "lost a measurement\|does not answer" "$TMPD/j1.log" "$TMPD/j2.log" && ok || fail "no job noticed the killed server"

# The tracker drops the killed server once it misses its heartbeats.
left=-1
for _ in $(seq 100); do
  left=$(devices_at)
  [ "$left" -eq 1 ] && break
  sleep 0.1
done
[ "$left" -eq 1 ] && ok || fail "the tracker still lists $left devices after s1 died, want 1"

# The tracker dies and comes back on the same address: s2 registers again.
kill -9 "$tracker_pid"
wait "$tracker_pid" 2>/dev/null
start_tracker "$TRACKER"
back=-1
for _ in $(seq 100); do
  back=$(devices_at)
  [ "$back" -ge 1 ] && break
  sleep 0.1
done
[ "$back" -eq 1 ] && ok || fail "after a tracker restart it knows $back devices, want 1 (s2)"
grep -q "registered again" "$TMPD/s2.log" && ok || fail "s2 did not say it registered again"
expect 0 '"new_trials":4' -- tune matmul:M=16,N=16,K=16 --trials 4 --batch 4 --tuner random --db "$TMPD/j3.db" --json \
  --repeat 1 --min-repeat-ms 1 --pool "$TRACKER" --key cpu

# The devices' target decides what the tuning host compiles for: a server
# reporting generic x86-64 gets artifacts built for it.
GENERIC="llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=x86-64"
"$KILN" serve --tracker "$TRACKER" --key generic --target "$GENERIC" --listen 127.0.0.1:0 >"$TMPD/s3.out" 2>"$TMPD/s3.log" &
pids+=("$!")
wait_for "$TMPD/s3.out" "serving on" 10 || fail "server s3 did not start"
expect 0 "target 'llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=x86-64" -- tune matmul:M=16,N=16,K=16 --trials 2 --batch 2 \
  --tuner random --db "$TMPD/j4.db" --repeat 1 --min-repeat-ms 1 --pool "$TRACKER" --key generic
t4=$(sql "$TMPD/j4.db" "select count(*) from records where target like '%-mcpu=x86-64%' and error_kind = 'none'")
[ "${t4:-0}" -eq 2 ] && ok || fail "records of the generic device: ${t4:-0} with its target, want 2"
expect 2 "does not run here" -- serve --tracker "$TRACKER" --key arm --target "llvm -mtriple=aarch64-linux-gnu"

echo "cli_pool: $pass passed, $fails failed"
[ "$fails" -eq 0 ]
