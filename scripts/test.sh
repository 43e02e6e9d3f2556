#!/usr/bin/env bash
# Set-up (scripts/setup.sh), then every test under ctest. Tests labelled
# "slow" (long property sweeps) run only with KILN_SLOW_TESTS=1, those
# labelled "large" (tensors of 2^31 elements, about 7 GiB of memory) only
# with KILN_LARGE_TESTS=1.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd build
left_out=()
[ "${KILN_SLOW_TESTS:-0}" = "1" ] || left_out+=(slow)
[ "${KILN_LARGE_TESTS:-0}" = "1" ] || left_out+=(large)
exclude=()
[ ${#left_out[@]} -eq 0 ] || exclude=(-LE "^($(IFS='|'; echo "${left_out[*]}"))\$")
ctest --output-on-failure -j "${KILN_JOBS:-$(nproc)}" "${exclude[@]}"
