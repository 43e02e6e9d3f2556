#!/usr/bin/env bash
# The tensor-core GEMM's pipeline stages on a GPU, in one short session from
# kiln's portable bundle (scripts/bundle.sh):
#   1. correctness: every cuda template (bench/suites/cuda-templates.txt) and
#      1024^3 f16 GEMMs with large blocks at each stage count, --check;
#   2. a sweep of hand-picked 4096^3 f16 configs (block shape x stages);
#   3. Hopper's copy engine: the 4096^3 f16 GEMM's 128 x 128 blocks with one
#      or two producer warps, fills by cp.async, by bulk copies per row, or
#      by tensor copies (TMA), with padded and dense slot rows, --check;
#   3b. wgmma (sm_90a): the 4096^3 f16 GEMM on warpgroups, 128 x 256 and
#      128 x 128 blocks, k tiles of 32 and 64, 2 to 4 slots, with and
#      without a producer warp, then swizzled tiles with products in flight
#      filled by cp.async or by swizzled tensor copies, --check, beside the
#      mma default;
#   4. the pipelining knob's own effect: 4096^3 f16 tuned with stages free
#      and with stages held at 1, then both bests re-timed interleaved;
#   5. kiln bench of the cuda-matmul-f16 suite (and f16/bf16 4096^3 and
#      8192^3) at the default configs against cuBLAS;
#   6. kiln bench of the batch-16 f16 ResNet-50 convolutions at the default
#      configs against cuDNN;
#   7. wgmma convolutions (sm_90a; only when STEPS names wgmma_convs):
#      four batch-16 3x3 layers of ResNet-50 tuned with tensor_core held at
#      "wgmma" and at "mma", both bests re-timed interleaved with --check.
#      Each search still varies the other schedule's knobs, which do not
#      change its kernel, so some of its trials measure a kernel again.
# Each step is time-boxed and its output archived as it ends.
#
#   bench/gpu_stage_sweep.sh BUNDLE.tar.xz OUT_DIR
#
# Environment: TRIALS (tuning trials per search, default 64); STEPS, the
# steps to run (default "correctness sweep copies wgmma tune bench convs";
# wgmma_convs, up to 20 minutes, only when named).
set -u
[ $# -eq 2 ] || { echo "usage: $0 BUNDLE.tar.xz OUT_DIR" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/gpu_bundle_lib.sh"
gpu_session_start "$1" "$2" || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
cd "$W" || exit 1

# Blocks of eight warps, k tiles of 32 (16-row A tiles padded by 8):
# 128 x 256 of 64 x 64 warps with 16-byte fills, 128 x 128 of 64 x 32 warps.
big() {  # M N K stages
  echo "{\"tensor_core\":\"mma\",\"mma_m\":[$(($1 / 128)),2,4],\"mma_n\":[$(($2 / 256)),4,8],\"mma_k\":[$(($3 / 32)),2],\"pad\":1,\"fill_vec\":8,\"stages\":$4}"
}
mid() {
  echo "{\"tensor_core\":\"mma\",\"mma_m\":[$(($1 / 128)),2,4],\"mma_n\":[$(($2 / 128)),4,4],\"mma_k\":[$(($3 / 32)),2],\"pad\":1,\"fill_vec\":0,\"stages\":$4}"
}
# 128 x 256 with k tiles of 64.
big_k64() {
  echo "{\"tensor_core\":\"mma\",\"mma_m\":[$(($1 / 128)),2,4],\"mma_n\":[$(($2 / 256)),4,8],\"mma_k\":[$(($3 / 64)),4],\"pad\":1,\"fill_vec\":8,\"stages\":$4}"
}
run() {  # label workload config [--check]
  local label=$1 w=$2 cfg=$3
  shift 3
  out=$(timeout 60 "$K" run "$w" --target cuda --config "$cfg" --repeat 5 --min-repeat-ms 30 "$@" 2>&1)
  echo "$label rc=$? :: $(grep -E "correct|median|error|wrong" <<<"$out" | tr '\n' ' ' | head -c 300)"
}

has() { [[ " ${STEPS:-correctness sweep copies wgmma tune bench convs} " == *" $1 "* ]]; }

if has correctness; then
step "correctness of every cuda template, and big blocks at each stage count"
{
  for w in $(grep -v '^#' "$ROOT/bench/suites/cuda-templates.txt"); do
    out=$(timeout 60 "$K" run "$w" --target cuda --check --repeat 2 --min-repeat-ms 5 2>&1)
    echo "$w rc=$? :: $(grep -E "correct|median|error|wrong" <<<"$out" | tr '\n' ' ' | head -c 300)"
  done
  w=matmul:M=1024,N=1024,K=1024,dtype=f16
  for s in 1 2 3 4; do
    run "128x256 stages $s" "$w" "$(big 1024 1024 1024 $s)" --check
    run "128x128 stages $s" "$w" "$(mid 1024 1024 1024 $s)" --check
  done
  run "bf16 128x256 stages 3" matmul:M=1024,N=1024,K=1024,dtype=bf16 "$(big 1024 1024 1024 3)" --check
  run "128x256 k64 stages 2" "$w" "$(big_k64 1024 1024 1024 2)" --check
} 2>&1 | tee correctness.log
save
fi

if has sweep; then
step "4096^3 f16: block shape x stages"
{
  w=matmul:M=4096,N=4096,K=4096,dtype=f16
  for s in 1 2 3 4; do
    run "128x256 k32 stages $s" "$w" "$(big 4096 4096 4096 $s)"
    run "128x128 k32 stages $s" "$w" "$(mid 4096 4096 4096 $s)"
  done
  for s in 1 2 3; do run "128x256 k64 stages $s" "$w" "$(big_k64 4096 4096 4096 $s)"; done
  k64=$(big_k64 4096 4096 4096 2)
  run "128x256 k64 stages 2, 8-byte fills" "$w" "${k64/\"fill_vec\":8/\"fill_vec\":0}"
  for s in 1 3; do
    k64=$(big_k64 4096 4096 4096 $s)
    run "128x256 k64 stages $s, 8-byte fills" "$w" "${k64/\"fill_vec\":8/\"fill_vec\":0}"
  done
  k32=$(big 4096 4096 4096 2)
  run "128x256 k32 stages 2, 8-byte fills" "$w" "${k32/\"fill_vec\":8/\"fill_vec\":0}"
  for s in 2 3; do
    run "128x128 k64 stages $s" "$w" \
      "{\"tensor_core\":\"mma\",\"mma_m\":[32,2,4],\"mma_n\":[32,4,4],\"mma_k\":[64,4],\"pad\":1,\"stages\":$s}"
  done
  run "256x128 k64 stages 2" "$w" \
    "{\"tensor_core\":\"mma\",\"mma_m\":[16,4,4],\"mma_n\":[32,2,8],\"mma_k\":[64,4],\"pad\":1,\"fill_vec\":8,\"stages\":2}"
  # The defaults, checked against the reference.
  for d in matmul:M=2048,N=2048,K=2048,dtype=f16 matmul:M=4096,N=3072,K=768,dtype=bf16; do
    run "default $d" "$d" "{}" --check
  done
} 2>&1 | tee sweep.log
save
fi

if has copies; then
step "4096^3 f16, 128x128 k32, 3 stages: warp-specialized fills by cp.async, bulk copies and tensor copies"
{
  w=matmul:M=4096,N=4096,K=4096,dtype=f16
  for pad in 1 0; do
    for p in 1 2; do
      for b in 0 1 2; do
        cfg=$(mid 4096 4096 4096 3)
        cfg="${cfg/\"pad\":1/\"pad\":$pad}"
        run "pad $pad, $p producer warps, bulk_copy $b" "$w" "${cfg%\}},\"producer_warps\":$p,\"bulk_copy\":$b}" --check
      done
    done
  done
  cfg=$(mid 4096 4096 4096 3)
  run "pad 0, no producer warps" "$w" "${cfg/\"pad\":1/\"pad\":0}"
} 2>&1 | tee copies.log
save
fi

if has wgmma; then
step "4096^3 f16 on wgmma (cuda -arch=sm_90a): warpgroup blocks, k tiles, slots and a producer warp"
{
  w=matmul:M=4096,N=4096,K=4096,dtype=f16
  run "mma default (sm_90)" "$w" "$(mid 4096 4096 4096 3)"
  for n in 32 16; do      # 8-column groups per warpgroup: 256 or 128 columns
    for k in 4 2; do      # k tiles of 64 or 32
      for s in 2 3 4; do
        for p in 0 1; do
          cfg="{\"tensor_core\":\"wgmma\",\"wgmma_m\":[32,2],\"wgmma_n\":[$((512 / n)),1,$n],\"mma_k\":[$((256 / k)),$k],\"fill_vec\":8,\"stages\":$s,\"producer_warps\":$p}"
          out=$(timeout 60 "$K" run "$w" --target "cuda -arch=sm_90a" --config "$cfg" --repeat 5 --min-repeat-ms 30 --check 2>&1)
          echo "wgmma n=$((8 * n)) k=$((16 * k)) stages $s producers $p rc=$? :: $(grep -E "correct|median|error|wrong" <<<"$out" | tr '\n' ' ' | head -c 300)"
        done
      done
    done
  done
  # 128 x 256 blocks, k tiles of 64, a producer warp, one k tile's products
  # in flight, tiles 128-byte swizzled: filled by cp.async, or by tensor
  # copies that land swizzled (--check also catches a dynamic pool that is
  # not 1024-byte aligned: the swizzle's pattern would be off).
  for s in 3 4; do
    for b in 0 2; do
      cfg="{\"tensor_core\":\"wgmma\",\"wgmma_m\":[32,2],\"wgmma_n\":[16,1,32],\"mma_k\":[64,4],\"fill_vec\":8,\"stages\":$s,\"producer_warps\":1,\"mma_in_flight\":1,\"swizzle\":1,\"bulk_copy\":$b}"
      out=$(timeout 60 "$K" run "$w" --target "cuda -arch=sm_90a" --config "$cfg" --repeat 5 --min-repeat-ms 30 --check 2>&1)
      echo "wgmma swizzled n=256 k=64 stages $s in flight, bulk_copy $b rc=$? :: $(grep -E "correct|median|error|wrong" <<<"$out" | tr '\n' ' ' | head -c 300)"
    done
  done
} 2>&1 | tee wgmma.log
save
fi

if has tune; then
w=matmul:M=4096,N=4096,K=4096,dtype=f16
for search in free held; do
  fix=()
  [ "$search" = held ] && fix=(--fix '{"stages":1}')
  step "tune 4096^3 f16, stages $search (${TRIALS:-64} trials, at most 100 s)"
  timeout -s INT -k 15 100 "$K" tune "$w" --target cuda --db "$search.db" --trials "${TRIALS:-64}" --batch 16 \
    --repeat 2 --min-repeat-ms 10 "${fix[@]}" > "tune_$search.log" 2>&1
  echo "rc=$?"
  tail -3 "tune_$search.log"
  save
done
step "the two bests re-timed, interleaved"
for round in 1 2; do
  for search in free held; do
    out=$(timeout 60 "$K" run "$w" --target cuda --db "$search.db" --repeat 5 --min-repeat-ms 30 --json 2>&1)
    echo "round $round $search :: $(tr '\n' ' ' <<<"$out" | head -c 600)"
  done
done 2>&1 | tee retime.log
save
fi

if has bench; then
step "bench cuda-matmul-f16, and f16/bf16 4096^3 and 8192^3, at the defaults against cuBLAS"
{ grep -v '^#' "$ROOT/bench/suites/cuda-matmul-f16.txt"
  echo matmul:M=4096,N=4096,K=4096,dtype=bf16
  echo matmul:M=8192,N=8192,K=8192,dtype=f16
  echo matmul:M=8192,N=8192,K=8192,dtype=bf16; } > matmul_suite.txt
timeout 240 "$K" bench --suite matmul_suite.txt --target cuda --rounds 3 \
  --min-repeat-ms 20 --json defaults.json --md defaults.md > bench.log 2>&1
echo "rc=$?"
grep -E "geomean|x " bench.log | tail -12
save
fi

if has convs; then
step "bench cuda-resnet50-b16-f16 at the defaults against cuDNN"
timeout 240 "$K" bench --suite "$ROOT/bench/suites/cuda-resnet50-b16-f16.txt" --target cuda --rounds 3 \
  --min-repeat-ms 20 --json convs_b16.json --md convs_b16.md > convs.log 2>&1
echo "rc=$?"
grep -E "geomean|x " convs.log | tail -26
save
fi
if has wgmma_convs; then
# The implicit GEMM over all 16 images' positions on warpgroups
# (kernels/gpu_wgmma_conv2d.h) against the mma schedule, each tuned alone.
for w in conv2d_nhwc:N=16,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1,dtype=f16 \
         conv2d_nhwc:N=16,H=28,W=28,C=128,K=128,R=3,S=3,stride=1,pad=1,dtype=f16 \
         conv2d_nhwc:N=16,H=14,W=14,C=256,K=256,R=3,S=3,stride=1,pad=1,dtype=f16 \
         conv2d_nhwc:N=16,H=7,W=7,C=512,K=512,R=3,S=3,stride=1,pad=1,dtype=f16; do
  tag=$(printf %s "$w" | tr -c 'A-Za-z0-9' _)
  for tc in wgmma mma; do
    step "tune $w, tensor_core $tc (${TRIALS:-64} trials, at most 60 s)"
    timeout -s INT -k 15 60 "$K" tune "$w" --target "cuda -arch=sm_90a" --db "conv_${tc}_$tag.db" \
      --trials "${TRIALS:-64}" --batch 16 --repeat 2 --min-repeat-ms 10 --fix "{\"tensor_core\":\"$tc\"}" \
      > "tune_conv_${tc}_$tag.log" 2>&1
    echo "rc=$?"
    tail -2 "tune_conv_${tc}_$tag.log"
  done 2>&1 | tee -a wgmma_convs.log
  for round in 1 2; do
    for tc in wgmma mma; do
      out=$(timeout 60 "$K" run "$w" --target "cuda -arch=sm_90a" --db "conv_${tc}_$tag.db" --repeat 5 \
        --min-repeat-ms 30 --check 2>&1)
      echo "round $round $tc $w :: $(grep -E "correct|median|error|wrong" <<<"$out" | tr '\n' ' ' | head -c 300)"
    done
  done 2>&1 | tee -a wgmma_convs.log
  save
done
fi
step "done: $OUT/results.tgz"
