#!/usr/bin/env bash
# Idempotent set-up: installs the Debian packages kiln needs (only those
# missing), then configures and builds kiln into build/ (CLI: build/kiln).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build git pkg-config
  llvm-14-dev libzstd-dev zlib1g-dev libtinfo-dev libxml2-dev libedit-dev libffi-dev
  # LLD's ELF linker as a library (static): kiln links kernels in-process
  liblld-14-dev
  # ld.lld: links kiln's executables (CMake option KILN_USE_LLD)
  lld
  # scripts/bundle.sh: the portable tar.xz
  patchelf xz-utils
  libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev catch2
  libsqlite3-dev libxgboost-dev
  libdnnl-dev ocl-icd-opencl-dev libopenblas-dev
  # kiln lib: C glue compiled with clang, aarch64 libc headers for cross-target libraries
  clang-14 libc6-dev-arm64-cross
  # the libFuzzer build of fuzz/ (-DKILN_FUZZ=ON with clang-14)
  libclang-rt-14-dev
  # device pool (rpc/)
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  # the pool's TLS test makes a throwaway certificate with it
  openssl
  # kiln bench's Halide baseline (Adams2019 autoscheduler), kiln report's charts
  # (Chart.js, inlined) and its browser checks
  libhalide14-0-dev chromium libjs-chart.js
  # kiln run-model: ONNX models parsed with the onnx.proto of libonnx-dev;
  # ONNX's per-operator conformance cases (tests/onnx_conformance.cpp)
  libonnx-dev libonnx-testdata
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The report's browser checks (tests/browser): playwright-core, from its lock
# file; it drives the chromium above and downloads no browser. Node.js (20 or
# later) comes with the base machine; without it those checks show as skipped.
if [ ! -d tests/browser/node_modules/playwright-core ]; then
  if command -v npm >/dev/null; then
    echo "setup: installing tests/browser's npm packages"
    npm ci --prefix tests/browser --no-audit --no-fund --loglevel=error
  else
    echo "setup: npm not found: the browser checks of kiln report (ctest -L browser) will show as skipped"
  fi
fi

# The ONNX Runtime baseline's helper (ort/ort_helper.mjs): onnxruntime-node
# (its CPU add-on is in the package; =skip downloads no CUDA add-on) and the
# PaddleOCR models its tests run, from ort/'s lock file.
if [ ! -d ort/node_modules/onnxruntime-node ]; then
  if command -v npm >/dev/null; then
    echo "setup: installing ort's npm packages"
    npm ci --prefix ort --no-audit --no-fund --loglevel=error --onnxruntime-node-install=skip
  else
    echo "setup: npm not found: the ONNX Runtime baseline and its tests will show as skipped"
  fi
fi

BUILD_TYPE="${KILN_BUILD_TYPE:-RelWithDebInfo}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" >/dev/null
ninja -C build -j "${KILN_JOBS:-$(nproc)}"
