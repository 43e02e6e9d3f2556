#!/usr/bin/env bash
# Set-up (scripts/setup.sh), then every test under ctest. Tests labelled
# "slow" (long property sweeps) run only with KILN_SLOW_TESTS=1.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd build
exclude=()
[ "${KILN_SLOW_TESTS:-0}" = "1" ] || exclude=(-LE slow)
ctest --output-on-failure -j "${KILN_JOBS:-$(nproc)}" "${exclude[@]}"
