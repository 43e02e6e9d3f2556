# Sourced by the GPU session scripts (bench/gpu_session.sh,
# bench/gpu_stage_sweep.sh): the session's folders and helpers, and kiln
# from its portable bundle (scripts/bundle.sh) with the GPU machine's CUDA
# 13 and cuDNN 9 on LD_LIBRARY_PATH (found under /usr/local and /opt: the
# CUDA toolkit, pip's nvidia-* wheels).
#
#   gpu_session_start BUNDLE.tar.xz OUT_DIR
#
# sets OUT (the results folder), W (what the session writes, archived by
# `save` into OUT/results.tgz), K (bin/kiln), and defines `step` (a line
# with the seconds since the start) and `save`.
gpu_session_start() {
  OUT=$(mkdir -p "$2" && cd "$2" && pwd)
  W=$(mktemp -d)
  local bundle_dir
  bundle_dir=$(mktemp -d)
  T0=$(date +%s)
  tar -C "$bundle_dir" -xJf "$1" || return 1
  K=$(echo "$bundle_dir"/kiln-*/bin/kiln)
  [ -x "$K" ] || { echo "no bin/kiln in $1" >&2; return 1; }
  local libs
  libs=$(find /usr/local /opt -maxdepth 9 \( -name 'libcudnn.so.9' -o -name 'libcublas.so.13' \
    -o -name 'libcudart.so.13' -o -name 'libnvrtc.so.13' \) -printf '%h\n' 2>/dev/null | sort -u | paste -sd:)
  export LD_LIBRARY_PATH="${libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
step() { echo "[$(($(date +%s) - T0))s] $*"; }
save() { tar -C "$W" -czf "$OUT/results.tgz" .; }
