// The text of kiln_allreduce (see cuda_allreduce.h).
#include "codegen/cuda_allreduce.h"

namespace kiln {

const std::string& cuda_allreduce_helpers() {
  // Strategies (their numbers are AllreduceStrategy's):
  //   0: the group is a power-of-two run of at most 32 lanes of one warp: a
  //      butterfly of xor shuffles. Both lanes of a pair combine the same two
  //      values, so every lane ends with the same bits.
  //   1: the group is whole warps along threadIdx.x: a butterfly in each
  //      warp, lane 0 of each writes its warp's value to the scratch, and
  //      after a barrier every thread combines its group's warps in order.
  //   2: any group: a tree in the shared scratch (one slot per thread), a
  //      barrier per level; every thread then reads its group's slot 0.
  // Strategies 1 and 2 end with a barrier, so that the next reduction may
  // reuse the scratch.
  static const std::string text = R"KILN(// kiln: reductions across the threads of a block
struct kiln_sum_op { template <typename T> __device__ __forceinline__ static T apply(T a, T b) { return a + b; } };
struct kiln_prod_op { template <typename T> __device__ __forceinline__ static T apply(T a, T b) { return a * b; } };
struct kiln_max_op { template <typename T> __device__ __forceinline__ static T apply(T a, T b) { return kiln_fmax(a, b); } };
struct kiln_min_op { template <typename T> __device__ __forceinline__ static T apply(T a, T b) { return kiln_fmin(a, b); } };
__host__ __device__ constexpr int kiln_pow2_at_least(int n) { int p = 1; while (p < n) p <<= 1; return p; }
// v combined with Op over the threads that differ only in their index along
// block dimension kDim (of a kBx x kBy x kBz block); every one of them gets
// the result. Every thread of the block must call it.
template <typename Op, int kStrategy, int kDim, int kBx, int kBy, int kBz, typename T, typename S>
__device__ __forceinline__ T kiln_allreduce(T v, S&& scratch) {
  constexpr int kGroup = kDim == 0 ? kBx : (kDim == 1 ? kBy : kBz);
  constexpr int kStride = kDim == 0 ? 1 : (kDim == 1 ? kBx : kBx * kBy);
  constexpr int kThreads = kBx * kBy * kBz;
  const int tid = (int)threadIdx.x + kBx * ((int)threadIdx.y + kBy * (int)threadIdx.z);
  if constexpr (kStrategy == 0) {
    const int lanes = kThreads - (tid & ~31) < 32 ? kThreads - (tid & ~31) : 32;
    const unsigned mask = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
    for (int o = kGroup / 2; o > 0; o >>= 1) v = Op::apply(v, __shfl_xor_sync(mask, v, o, kGroup));
    return v;
  } else if constexpr (kStrategy == 1) {
    for (int o = 16; o > 0; o >>= 1) v = Op::apply(v, __shfl_xor_sync(0xffffffffu, v, o));
    if ((tid & 31) == 0) scratch[tid >> 5] = v;
    __syncthreads();
    const int first = tid / kGroup * (kGroup / 32);
    T r = scratch[first];
    for (int w = 1; w < kGroup / 32; ++w) {
      const T next = scratch[first + w];
      r = Op::apply(r, next);
    }
    __syncthreads();
    return r;
  } else {
    constexpr int kPow2 = kiln_pow2_at_least(kGroup);
    const int r = tid / kStride % kGroup;
    scratch[tid] = v;
    __syncthreads();
    for (int s = kPow2 / 2; s > 0; s >>= 1) {
      if (r < s && r + s < kGroup) {
        const T a = scratch[tid], b = scratch[tid + s * kStride];
        scratch[tid] = Op::apply(a, b);
      }
      __syncthreads();
    }
    const T out = scratch[tid - r * kStride];
    __syncthreads();
    return out;
  }
}

)KILN";
  return text;
}

}  // namespace kiln
