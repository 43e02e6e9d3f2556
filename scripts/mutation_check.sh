#!/usr/bin/env bash
# Mutation check: plants one bug at a time in a copy of kiln's compiler (a tail guard
# off by one, a wrong vector stride, a dropped loop-partition region, a wrong
# reduction init, a swapped select, ...), rebuilds, runs the tests that guard
# lowering and code generation, and prints whether the suite caught it. The
# copy (BUILD_DIR/src: the checkout's files, never the checkout itself) is
# restored after each mutation. Too slow for CI (a rebuild and a test run
# per mutation, a few minutes each on 2 cores); each test executable gets 120 s.
#
# Usage: scripts/mutation_check.sh [BUILD_DIR]   (default: build-mutation)
#        MUTATION_ONLY=REGEX plants only the bugs whose names match (grep -E).
# Exit status: 0 when every planted bug was caught, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD="$(realpath -m "${1:-build-mutation}")"
TARGETS=(test_lowering_property test_templates test_codegen test_semantics test_passes test_passes_exec
         test_builder_runner test_ops_gemm test_ops_conv test_ops_norm test_ops_pool test_golden_ir
         test_schedule_primitives test_large_index test_simplify)

# name | file | exact text | replacement   (python replaces the text once; it must occur exactly once)
MUTATIONS=(
  "tail guard off by one|schedule/schedule_ops.cpp|Expr cond = ana.simplify(offset < r.extent);|Expr cond = ana.simplify(offset <= r.extent);"
  "wrong vector stride|schedule/passes/vectorize.cpp|ramp_(RampNode::make(min, make_const(min.dtype(), int64_t{1}), lanes))|ramp_(RampNode::make(min, make_const(min.dtype(), int64_t{2}), lanes))"
  "dropped loop-partition region|schedule/passes/loop_partition.cpp|if (main_hi < hi) pieces.push_back(make_piece(op, main_hi + 1, hi, peeled));|(void)peeled;"
  "wrong reduction init (sum starts at 1)|compute/expr.cpp|    case Combiner::kSum:\n      return make_zero(t);\n    case Combiner::kProd:|    case Combiner::kSum:\n      return make_const(t, int64_t{1});\n    case Combiner::kProd:"
  "swapped select|codegen/codegen_expr.cpp|    return builder_.CreateSelect(c, t, f);|    return builder_.CreateSelect(c, f, t);"
  "select evaluated eagerly|codegen/codegen_expr.cpp|const bool lazy = op->condition|const bool lazy = false \&\& op->condition"
  "max/min drop NaN|codegen/codegen_expr.cpp|return builder_.CreateSelect(builder_.CreateFCmpUNO(a, b), builder_.CreateFAdd(a, b), r);|return r;"
  "row-major stride off by one|schedule/passes/storage_flatten.cpp|    stride = stride * widen(extents[i], index_type);|    stride = stride * widen(extents[i], index_type) + make_const(stride.dtype(), int64_t{1});"
  "flat index of a 2^31-element buffer in i32|schedule/passes/storage_flatten.cpp|constexpr int64_t kLimit = std::numeric_limits<int32_t>::max();|constexpr int64_t kLimit = std::numeric_limits<int64_t>::max();"
  "unroll drops the last iteration|schedule/passes/unroll.cpp|for (int64_t k = 0; k < *ext; ++k) {|for (int64_t k = 0; k + 1 < *ext; ++k) {"
  "candidate check samples the output|runtime/measure_worker.cpp|const size_t count = ref.expected.size();|const size_t count = std::min<size_t>(ref.expected.size(), 512);"
)

# The file being mutated is saved here and put back after each mutation.
SAVED=$(mktemp)
current=""
restore() { if [ -n "$current" ]; then cp "$SAVED" "$current"; touch "$current"; current=""; fi; }
trap 'restore; rm -f "$SAVED"' EXIT

ROOT=$PWD
SRC="$BUILD/src"
OBJ="$BUILD/obj"
mkdir -p "$SRC"
# Copies only the files whose content differs, with a new modification time:
# ninja then rebuilds exactly what changed (tar would keep the checkout's
# older times, and an object built from a mutated file could look current).
git ls-files -co --exclude-standard | python3 -c '
import filecmp, os, shutil, sys
dst = sys.argv[1]
for f in sys.stdin.read().splitlines():
    d = os.path.join(dst, f)
    if not os.path.isfile(f) or (os.path.isfile(d) and filecmp.cmp(f, d, shallow=False)):
        continue
    os.makedirs(os.path.dirname(d) or dst, exist_ok=True)
    shutil.copy(f, d)
' "$SRC"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S "$SRC" -B "$OBJ" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null || exit 2
cd "$SRC"

# Runs every test executable (120 s each); 0 when all pass.
run_tests() {
  local t rc=0
  for t in "${TARGETS[@]}"; do
    # In a shell of its own, so that a crash is reported in the log, not here.
    bash -c 'timeout 120 "$0"; exit $?' "$OBJ/tests/$t" >>"$OBJ/mutation.log" 2>&1 ||
      { rc=1; echo "FAILED: $t" >>"$OBJ/mutation.log"; }
  done
  return $rc
}

echo "mutation_check: building the tests in $OBJ"
ninja -C "$OBJ" "${TARGETS[@]}" >/dev/null || { echo "mutation_check: the unmutated build fails" >&2; exit 2; }
: >"$OBJ/mutation.log"
run_tests || { echo "mutation_check: the tests fail without any mutation (see $OBJ/mutation.log)" >&2; exit 2; }

caught=0
total=0
printf '%-42s %s\n' "planted bug" "result"
for m in "${MUTATIONS[@]}"; do
  IFS='|' read -r name file text repl <<<"$m"
  if [ -n "${MUTATION_ONLY:-}" ] && ! grep -qE "$MUTATION_ONLY" <<<"$name"; then continue; fi
  total=$((total + 1))
  cp "$file" "$SAVED"
  current="$file"
  if ! python3 - "$file" "$text" "$repl" <<'PY'
import sys
path, text, repl = sys.argv[1], sys.argv[2].replace('\\n', '\n'), sys.argv[3].replace('\\n', '\n').replace('\\&', '&')
src = open(path).read()
if src.count(text) != 1:
    sys.exit(f"the text to mutate occurs {src.count(text)} times in {path}")
open(path, 'w').write(src.replace(text, repl))
PY
  then
    printf '%-42s %s\n' "$name" "NOT APPLIED (source changed; update this script)"
    restore
    continue
  fi
  if ! ninja -C "$OBJ" "${TARGETS[@]}" >"$OBJ/mutation.log" 2>&1; then
    result="caught (does not compile)"
    caught=$((caught + 1))
  elif run_tests; then
    result="NOT CAUGHT"
  else
    result="caught by $(grep "^FAILED: " "$OBJ/mutation.log" | sed 's/FAILED: //' | tr '\n' ' ')"
    caught=$((caught + 1))
  fi
  printf '%-42s %s\n' "$name" "$result"
  restore
done
echo "mutation_check: $caught of $total planted bugs caught"
[ "$caught" -eq "$total" ]
