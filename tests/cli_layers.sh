#!/usr/bin/env bash
# The layering check of cmake/kiln_layers.cmake refuses an include that points
# up (the configure step fails with a message naming the file and layers),
# and accepts one that points down.
# Usage: cli_layers.sh path/to/kiln (unused: the check is CMake's)
set -u
KILN="$1"
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_expect.sh"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT

check() {  # check LAYER FILE: runs the check alone, as the configure step does
  cat >"$TMPD/run.cmake" <<CMAKE
cmake_minimum_required(VERSION 3.20)
set(CMAKE_SOURCE_DIR "$ROOT")
include("$ROOT/cmake/kiln_layers.cmake")
kiln_check_includes($1 "$2")
CMAKE
  cmake -P "$TMPD/run.cmake" 2>&1 | tr -s ' \n' '  '
  return "${PIPESTATUS[0]}"
}

printf '#include "tuner/task.h"\n#include "kernels/op_registry.h"\n' >"$TMPD/up.cpp"
out=$(check tuner "$TMPD/up.cpp")
[ $? -ne 0 ] && grep -qF '(layer tuner) includes "kernels/op_registry.h" (layer kernels)' <<<"$out" && ok ||
  fail "an upward include was not refused: $out"
printf '#include "runtime/ndarray.h"\n#include "codegen/target.h"\n' >"$TMPD/serve.cpp"
out=$(check rpc "$TMPD/serve.cpp")
[ $? -ne 0 ] && grep -qF 'includes "codegen/target.h" (layer codegen)' <<<"$out" && ok ||
  fail "the device server's side may not include the compiler: $out"
printf '#include "rpc/net.h"\n#include "rpc/client/pool_runner.h"\n' >"$TMPD/cli.cpp"
out=$(check rpc "$TMPD/cli.cpp")
[ $? -ne 0 ] && grep -qF '(layer rpc_client)' <<<"$out" && ok || fail "rpc may not include its client side: $out"
printf '#include "kernels/op_registry.h"\n#include <vector>\n#include "tasks/task_factory.h"\n' >"$TMPD/down.cpp"
out=$(check tasks "$TMPD/down.cpp")
[ $? -eq 0 ] && ok || fail "a downward include was refused: $out"

echo "cli_layers: $pass passed, $fails failed"
[ "$fails" -eq 0 ]
