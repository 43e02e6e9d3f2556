// kiln: cuda_matmul_128x128x64 for sm_90, 1 kernel
// ---- kiln device prelude ----
// KILN_SHARED(T, name, count): the block's shared array `name` of `count` T,
//   16-byte aligned so that 16-byte vectors may be loaded from it. The CPU
//   emulation defines its own (a race-checked array object), hence the guard.
// KILN_DYNAMIC_SHARED_POOL(align) / KILN_DYNAMIC_SHARED(T, name, count, offset):
//   the same array at byte `offset` of the launch's dynamic shared memory,
//   for blocks that need more than the 48 KiB CUDA allows statically.
// KILN_SHARED_POOL(bytes, align) / KILN_SHARED_AT(T, name, count, offset):
//   the same at byte `offset` of a static pool, where arrays that are never
//   live at once share bytes (schedule/shared_memory_plan.h). Both pools
//   start `align`-byte aligned: 128, as the boxes of tensor copies (TMA)
//   land, or 1024 where wgmma reads, or tensor copies land, swizzled tiles.
// float2/float4 + - * / (and += -= *= /=): element-wise, for vector
//   expressions printed as ordinary operators (CUDA defines none).
// kiln_max/kiln_min: element-wise fmaxf/fminf on float, float2 and float4.
// kiln_ld<V>(p, i) / kiln_st(p, i, v): every vector access goes through
//   these: they read or write a V (float2, float4) at p + i, i counted in
//   elements of *p, which must be aligned to sizeof(V). Under emulation they
//   also check that alignment and, on shared arrays, races and bounds.
#ifndef KILN_SHARED
#define KILN_SHARED(T, name, count) __shared__ __align__(16) T name[count]
#define KILN_DYNAMIC_SHARED_POOL(align) extern __shared__ __align__(align) unsigned char kiln_dynamic_shared[]
#define KILN_DYNAMIC_SHARED(T, name, count, offset) T* const name = reinterpret_cast<T*>(kiln_dynamic_shared + (offset))
#define KILN_SHARED_POOL(bytes, align) __shared__ __align__(align) unsigned char kiln_shared_pool[bytes]
#define KILN_SHARED_AT(T, name, count, offset) T* const name = reinterpret_cast<T*>(kiln_shared_pool + (offset))
#endif

#define KILN_VEC2_OP(op)                                                                        \
  __device__ __forceinline__ float2 operator op(float2 a, float2 b) {                           \
    return make_float2(a.x op b.x, a.y op b.y);                                                 \
  }                                                                                             \
  __device__ __forceinline__ float2& operator op##=(float2& a, float2 b) { return a = a op b; }
#define KILN_VEC4_OP(op)                                                                        \
  __device__ __forceinline__ float4 operator op(float4 a, float4 b) {                           \
    return make_float4(a.x op b.x, a.y op b.y, a.z op b.z, a.w op b.w);                         \
  }                                                                                             \
  __device__ __forceinline__ float4& operator op##=(float4& a, float4 b) { return a = a op b; }
KILN_VEC2_OP(+)
KILN_VEC2_OP(-)
KILN_VEC2_OP(*)
KILN_VEC2_OP(/)
KILN_VEC4_OP(+)
KILN_VEC4_OP(-)
KILN_VEC4_OP(*)
KILN_VEC4_OP(/)
#undef KILN_VEC2_OP
#undef KILN_VEC4_OP

#define KILN_VEC_MINMAX(name, f)                                                                \
  __device__ __forceinline__ float name(float a, float b) { return f(a, b); }                   \
  __device__ __forceinline__ float2 name(float2 a, float2 b) {                                  \
    return make_float2(f(a.x, b.x), f(a.y, b.y));                                               \
  }                                                                                             \
  __device__ __forceinline__ float4 name(float4 a, float4 b) {                                  \
    return make_float4(f(a.x, b.x), f(a.y, b.y), f(a.z, b.z), f(a.w, b.w));                     \
  }
KILN_VEC_MINMAX(kiln_max, fmaxf)
KILN_VEC_MINMAX(kiln_min, fminf)
#undef KILN_VEC_MINMAX

#ifndef KILN_CUDA_EMULATION
template <typename V, typename T>
__device__ __forceinline__ V kiln_ld(const T* p, long long i) {
  return *reinterpret_cast<const V*>(p + i);
}
template <typename V, typename T>
__device__ __forceinline__ void kiln_st(T* p, long long i, V v) {
  *reinterpret_cast<V*>(p + i) = v;
}
#endif
// ---- end of kiln device prelude ----

// kiln: arithmetic as compute/expr.h defines it
template <typename T> __device__ __forceinline__ T kiln_floordiv(T a, T b) {
  T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T> __device__ __forceinline__ T kiln_floormod(T a, T b) {
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <typename T> __device__ __forceinline__ T kiln_imin(T a, T b) { return b < a ? b : a; }
template <typename T> __device__ __forceinline__ T kiln_imax(T a, T b) { return a < b ? b : a; }
template <typename T> __device__ __forceinline__ T kiln_fmin(T a, T b) { return a != a ? a : (b != b ? b : (b < a ? b : a)); }
template <typename T> __device__ __forceinline__ T kiln_fmax(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? b : a)); }
__device__ __forceinline__ float kiln_bits_f32(unsigned int u) { union { unsigned int u; float f; } v; v.u = u; return v.f; }
__device__ __forceinline__ double kiln_bits_f64(unsigned long long u) { union { unsigned long long u; double f; } v; v.u = u; return v.f; }

// grid 2 x 2 x 1, block 16 x 16 x 1, 4096 bytes of shared memory
extern "C" __global__ void __launch_bounds__(256) cuda_matmul_128x128x64_kernel0(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  KILN_SHARED(float, B_shared, 512);
  KILN_SHARED(float, A_shared, 512);
  {
    const int C_i_outer = (int)blockIdx.y;
    {
      const int C_j_outer = (int)blockIdx.x;
      {
        const int C_i_inner_outer = (int)threadIdx.y;
        {
          const int C_j_inner_outer = (int)threadIdx.x;
          __align__(16) float C_local[16];
          C_local[0] = 0.0f;
          C_local[1] = 0.0f;
          C_local[2] = 0.0f;
          C_local[3] = 0.0f;
          C_local[4] = 0.0f;
          C_local[5] = 0.0f;
          C_local[6] = 0.0f;
          C_local[7] = 0.0f;
          C_local[8] = 0.0f;
          C_local[9] = 0.0f;
          C_local[10] = 0.0f;
          C_local[11] = 0.0f;
          C_local[12] = 0.0f;
          C_local[13] = 0.0f;
          C_local[14] = 0.0f;
          C_local[15] = 0.0f;
          for (int k_outer = 0; k_outer < 0 + 8; ++k_outer) {
            __syncthreads();
            {
              const int A_shared_i_A_shared_j_fused_outer_inner_outer = (int)threadIdx.y;
              if (threadIdx.y < 8) {
                {
                  const int A_shared_i_A_shared_j_fused_outer_inner_inner = (int)threadIdx.x;
                  kiln_st(A_shared, ((A_shared_i_A_shared_j_fused_outer_inner_outer * 64) + (A_shared_i_A_shared_j_fused_outer_inner_inner * 4)), kiln_ld<float4>(A, (((((A_shared_i_A_shared_j_fused_outer_inner_outer * 512) + (kiln_floordiv<int>(A_shared_i_A_shared_j_fused_outer_inner_inner, 2) * 64)) + (C_i_outer * 4096)) + (kiln_floormod<int>(A_shared_i_A_shared_j_fused_outer_inner_inner, 2) * 4)) + (k_outer * 8))));
                }
              }
            }
            {
              const int B_shared_i_B_shared_j_fused_outer_inner_outer = (int)threadIdx.y;
              if (threadIdx.y < 8) {
                {
                  const int B_shared_i_B_shared_j_fused_outer_inner_inner = (int)threadIdx.x;
                  kiln_st(B_shared, ((B_shared_i_B_shared_j_fused_outer_inner_outer * 64) + (B_shared_i_B_shared_j_fused_outer_inner_inner * 4)), kiln_ld<float4>(B, ((((B_shared_i_B_shared_j_fused_outer_inner_outer * 128) + (k_outer * 1024)) + (B_shared_i_B_shared_j_fused_outer_inner_inner * 4)) + (C_j_outer * 64))));
                }
              }
            }
            __syncthreads();
            C_local[0] = (C_local[0] + (A_shared[(C_i_inner_outer * 32)] * B_shared[(C_j_inner_outer * 4)]));
            C_local[1] = (C_local[1] + (A_shared[(C_i_inner_outer * 32)] * B_shared[((C_j_inner_outer * 4) + 1)]));
            C_local[2] = (C_local[2] + (A_shared[(C_i_inner_outer * 32)] * B_shared[((C_j_inner_outer * 4) + 2)]));
            C_local[3] = (C_local[3] + (A_shared[(C_i_inner_outer * 32)] * B_shared[((C_j_inner_outer * 4) + 3)]));
            C_local[4] = (C_local[4] + (A_shared[((C_i_inner_outer * 32) + 8)] * B_shared[(C_j_inner_outer * 4)]));
            C_local[5] = (C_local[5] + (A_shared[((C_i_inner_outer * 32) + 8)] * B_shared[((C_j_inner_outer * 4) + 1)]));
            C_local[6] = (C_local[6] + (A_shared[((C_i_inner_outer * 32) + 8)] * B_shared[((C_j_inner_outer * 4) + 2)]));
            C_local[7] = (C_local[7] + (A_shared[((C_i_inner_outer * 32) + 8)] * B_shared[((C_j_inner_outer * 4) + 3)]));
            C_local[8] = (C_local[8] + (A_shared[((C_i_inner_outer * 32) + 16)] * B_shared[(C_j_inner_outer * 4)]));
            C_local[9] = (C_local[9] + (A_shared[((C_i_inner_outer * 32) + 16)] * B_shared[((C_j_inner_outer * 4) + 1)]));
            C_local[10] = (C_local[10] + (A_shared[((C_i_inner_outer * 32) + 16)] * B_shared[((C_j_inner_outer * 4) + 2)]));
            C_local[11] = (C_local[11] + (A_shared[((C_i_inner_outer * 32) + 16)] * B_shared[((C_j_inner_outer * 4) + 3)]));
            C_local[12] = (C_local[12] + (A_shared[((C_i_inner_outer * 32) + 24)] * B_shared[(C_j_inner_outer * 4)]));
            C_local[13] = (C_local[13] + (A_shared[((C_i_inner_outer * 32) + 24)] * B_shared[((C_j_inner_outer * 4) + 1)]));
            C_local[14] = (C_local[14] + (A_shared[((C_i_inner_outer * 32) + 24)] * B_shared[((C_j_inner_outer * 4) + 2)]));
            C_local[15] = (C_local[15] + (A_shared[((C_i_inner_outer * 32) + 24)] * B_shared[((C_j_inner_outer * 4) + 3)]));
            C_local[0] = (C_local[0] + (A_shared[((C_i_inner_outer * 32) + 1)] * B_shared[((C_j_inner_outer * 4) + 64)]));
            C_local[1] = (C_local[1] + (A_shared[((C_i_inner_outer * 32) + 1)] * B_shared[((C_j_inner_outer * 4) + 65)]));
            C_local[2] = (C_local[2] + (A_shared[((C_i_inner_outer * 32) + 1)] * B_shared[((C_j_inner_outer * 4) + 66)]));
            C_local[3] = (C_local[3] + (A_shared[((C_i_inner_outer * 32) + 1)] * B_shared[((C_j_inner_outer * 4) + 67)]));
            C_local[4] = (C_local[4] + (A_shared[((C_i_inner_outer * 32) + 9)] * B_shared[((C_j_inner_outer * 4) + 64)]));
            C_local[5] = (C_local[5] + (A_shared[((C_i_inner_outer * 32) + 9)] * B_shared[((C_j_inner_outer * 4) + 65)]));
            C_local[6] = (C_local[6] + (A_shared[((C_i_inner_outer * 32) + 9)] * B_shared[((C_j_inner_outer * 4) + 66)]));
            C_local[7] = (C_local[7] + (A_shared[((C_i_inner_outer * 32) + 9)] * B_shared[((C_j_inner_outer * 4) + 67)]));
            C_local[8] = (C_local[8] + (A_shared[((C_i_inner_outer * 32) + 17)] * B_shared[((C_j_inner_outer * 4) + 64)]));
            C_local[9] = (C_local[9] + (A_shared[((C_i_inner_outer * 32) + 17)] * B_shared[((C_j_inner_outer * 4) + 65)]));
            C_local[10] = (C_local[10] + (A_shared[((C_i_inner_outer * 32) + 17)] * B_shared[((C_j_inner_outer * 4) + 66)]));
            C_local[11] = (C_local[11] + (A_shared[((C_i_inner_outer * 32) + 17)] * B_shared[((C_j_inner_outer * 4) + 67)]));
            C_local[12] = (C_local[12] + (A_shared[((C_i_inner_outer * 32) + 25)] * B_shared[((C_j_inner_outer * 4) + 64)]));
            C_local[13] = (C_local[13] + (A_shared[((C_i_inner_outer * 32) + 25)] * B_shared[((C_j_inner_outer * 4) + 65)]));
            C_local[14] = (C_local[14] + (A_shared[((C_i_inner_outer * 32) + 25)] * B_shared[((C_j_inner_outer * 4) + 66)]));
            C_local[15] = (C_local[15] + (A_shared[((C_i_inner_outer * 32) + 25)] * B_shared[((C_j_inner_outer * 4) + 67)]));
            C_local[0] = (C_local[0] + (A_shared[((C_i_inner_outer * 32) + 2)] * B_shared[((C_j_inner_outer * 4) + 128)]));
            C_local[1] = (C_local[1] + (A_shared[((C_i_inner_outer * 32) + 2)] * B_shared[((C_j_inner_outer * 4) + 129)]));
            C_local[2] = (C_local[2] + (A_shared[((C_i_inner_outer * 32) + 2)] * B_shared[((C_j_inner_outer * 4) + 130)]));
            C_local[3] = (C_local[3] + (A_shared[((C_i_inner_outer * 32) + 2)] * B_shared[((C_j_inner_outer * 4) + 131)]));
            C_local[4] = (C_local[4] + (A_shared[((C_i_inner_outer * 32) + 10)] * B_shared[((C_j_inner_outer * 4) + 128)]));
            C_local[5] = (C_local[5] + (A_shared[((C_i_inner_outer * 32) + 10)] * B_shared[((C_j_inner_outer * 4) + 129)]));
            C_local[6] = (C_local[6] + (A_shared[((C_i_inner_outer * 32) + 10)] * B_shared[((C_j_inner_outer * 4) + 130)]));
            C_local[7] = (C_local[7] + (A_shared[((C_i_inner_outer * 32) + 10)] * B_shared[((C_j_inner_outer * 4) + 131)]));
            C_local[8] = (C_local[8] + (A_shared[((C_i_inner_outer * 32) + 18)] * B_shared[((C_j_inner_outer * 4) + 128)]));
            C_local[9] = (C_local[9] + (A_shared[((C_i_inner_outer * 32) + 18)] * B_shared[((C_j_inner_outer * 4) + 129)]));
            C_local[10] = (C_local[10] + (A_shared[((C_i_inner_outer * 32) + 18)] * B_shared[((C_j_inner_outer * 4) + 130)]));
            C_local[11] = (C_local[11] + (A_shared[((C_i_inner_outer * 32) + 18)] * B_shared[((C_j_inner_outer * 4) + 131)]));
            C_local[12] = (C_local[12] + (A_shared[((C_i_inner_outer * 32) + 26)] * B_shared[((C_j_inner_outer * 4) + 128)]));
            C_local[13] = (C_local[13] + (A_shared[((C_i_inner_outer * 32) + 26)] * B_shared[((C_j_inner_outer * 4) + 129)]));
            C_local[14] = (C_local[14] + (A_shared[((C_i_inner_outer * 32) + 26)] * B_shared[((C_j_inner_outer * 4) + 130)]));
            C_local[15] = (C_local[15] + (A_shared[((C_i_inner_outer * 32) + 26)] * B_shared[((C_j_inner_outer * 4) + 131)]));
            C_local[0] = (C_local[0] + (A_shared[((C_i_inner_outer * 32) + 3)] * B_shared[((C_j_inner_outer * 4) + 192)]));
            C_local[1] = (C_local[1] + (A_shared[((C_i_inner_outer * 32) + 3)] * B_shared[((C_j_inner_outer * 4) + 193)]));
            C_local[2] = (C_local[2] + (A_shared[((C_i_inner_outer * 32) + 3)] * B_shared[((C_j_inner_outer * 4) + 194)]));
            C_local[3] = (C_local[3] + (A_shared[((C_i_inner_outer * 32) + 3)] * B_shared[((C_j_inner_outer * 4) + 195)]));
            C_local[4] = (C_local[4] + (A_shared[((C_i_inner_outer * 32) + 11)] * B_shared[((C_j_inner_outer * 4) + 192)]));
            C_local[5] = (C_local[5] + (A_shared[((C_i_inner_outer * 32) + 11)] * B_shared[((C_j_inner_outer * 4) + 193)]));
            C_local[6] = (C_local[6] + (A_shared[((C_i_inner_outer * 32) + 11)] * B_shared[((C_j_inner_outer * 4) + 194)]));
            C_local[7] = (C_local[7] + (A_shared[((C_i_inner_outer * 32) + 11)] * B_shared[((C_j_inner_outer * 4) + 195)]));
            C_local[8] = (C_local[8] + (A_shared[((C_i_inner_outer * 32) + 19)] * B_shared[((C_j_inner_outer * 4) + 192)]));
            C_local[9] = (C_local[9] + (A_shared[((C_i_inner_outer * 32) + 19)] * B_shared[((C_j_inner_outer * 4) + 193)]));
            C_local[10] = (C_local[10] + (A_shared[((C_i_inner_outer * 32) + 19)] * B_shared[((C_j_inner_outer * 4) + 194)]));
            C_local[11] = (C_local[11] + (A_shared[((C_i_inner_outer * 32) + 19)] * B_shared[((C_j_inner_outer * 4) + 195)]));
            C_local[12] = (C_local[12] + (A_shared[((C_i_inner_outer * 32) + 27)] * B_shared[((C_j_inner_outer * 4) + 192)]));
            C_local[13] = (C_local[13] + (A_shared[((C_i_inner_outer * 32) + 27)] * B_shared[((C_j_inner_outer * 4) + 193)]));
            C_local[14] = (C_local[14] + (A_shared[((C_i_inner_outer * 32) + 27)] * B_shared[((C_j_inner_outer * 4) + 194)]));
            C_local[15] = (C_local[15] + (A_shared[((C_i_inner_outer * 32) + 27)] * B_shared[((C_j_inner_outer * 4) + 195)]));
            C_local[0] = (C_local[0] + (A_shared[((C_i_inner_outer * 32) + 4)] * B_shared[((C_j_inner_outer * 4) + 256)]));
            C_local[1] = (C_local[1] + (A_shared[((C_i_inner_outer * 32) + 4)] * B_shared[((C_j_inner_outer * 4) + 257)]));
            C_local[2] = (C_local[2] + (A_shared[((C_i_inner_outer * 32) + 4)] * B_shared[((C_j_inner_outer * 4) + 258)]));
            C_local[3] = (C_local[3] + (A_shared[((C_i_inner_outer * 32) + 4)] * B_shared[((C_j_inner_outer * 4) + 259)]));
            C_local[4] = (C_local[4] + (A_shared[((C_i_inner_outer * 32) + 12)] * B_shared[((C_j_inner_outer * 4) + 256)]));
            C_local[5] = (C_local[5] + (A_shared[((C_i_inner_outer * 32) + 12)] * B_shared[((C_j_inner_outer * 4) + 257)]));
            C_local[6] = (C_local[6] + (A_shared[((C_i_inner_outer * 32) + 12)] * B_shared[((C_j_inner_outer * 4) + 258)]));
            C_local[7] = (C_local[7] + (A_shared[((C_i_inner_outer * 32) + 12)] * B_shared[((C_j_inner_outer * 4) + 259)]));
            C_local[8] = (C_local[8] + (A_shared[((C_i_inner_outer * 32) + 20)] * B_shared[((C_j_inner_outer * 4) + 256)]));
            C_local[9] = (C_local[9] + (A_shared[((C_i_inner_outer * 32) + 20)] * B_shared[((C_j_inner_outer * 4) + 257)]));
            C_local[10] = (C_local[10] + (A_shared[((C_i_inner_outer * 32) + 20)] * B_shared[((C_j_inner_outer * 4) + 258)]));
            C_local[11] = (C_local[11] + (A_shared[((C_i_inner_outer * 32) + 20)] * B_shared[((C_j_inner_outer * 4) + 259)]));
            C_local[12] = (C_local[12] + (A_shared[((C_i_inner_outer * 32) + 28)] * B_shared[((C_j_inner_outer * 4) + 256)]));
            C_local[13] = (C_local[13] + (A_shared[((C_i_inner_outer * 32) + 28)] * B_shared[((C_j_inner_outer * 4) + 257)]));
            C_local[14] = (C_local[14] + (A_shared[((C_i_inner_outer * 32) + 28)] * B_shared[((C_j_inner_outer * 4) + 258)]));
            C_local[15] = (C_local[15] + (A_shared[((C_i_inner_outer * 32) + 28)] * B_shared[((C_j_inner_outer * 4) + 259)]));
            C_local[0] = (C_local[0] + (A_shared[((C_i_inner_outer * 32) + 5)] * B_shared[((C_j_inner_outer * 4) + 320)]));
            C_local[1] = (C_local[1] + (A_shared[((C_i_inner_outer * 32) + 5)] * B_shared[((C_j_inner_outer * 4) + 321)]));
            C_local[2] = (C_local[2] + (A_shared[((C_i_inner_outer * 32) + 5)] * B_shared[((C_j_inner_outer * 4) + 322)]));
            C_local[3] = (C_local[3] + (A_shared[((C_i_inner_outer * 32) + 5)] * B_shared[((C_j_inner_outer * 4) + 323)]));
            C_local[4] = (C_local[4] + (A_shared[((C_i_inner_outer * 32) + 13)] * B_shared[((C_j_inner_outer * 4) + 320)]));
            C_local[5] = (C_local[5] + (A_shared[((C_i_inner_outer * 32) + 13)] * B_shared[((C_j_inner_outer * 4) + 321)]));
            C_local[6] = (C_local[6] + (A_shared[((C_i_inner_outer * 32) + 13)] * B_shared[((C_j_inner_outer * 4) + 322)]));
            C_local[7] = (C_local[7] + (A_shared[((C_i_inner_outer * 32) + 13)] * B_shared[((C_j_inner_outer * 4) + 323)]));
            C_local[8] = (C_local[8] + (A_shared[((C_i_inner_outer * 32) + 21)] * B_shared[((C_j_inner_outer * 4) + 320)]));
            C_local[9] = (C_local[9] + (A_shared[((C_i_inner_outer * 32) + 21)] * B_shared[((C_j_inner_outer * 4) + 321)]));
            C_local[10] = (C_local[10] + (A_shared[((C_i_inner_outer * 32) + 21)] * B_shared[((C_j_inner_outer * 4) + 322)]));
            C_local[11] = (C_local[11] + (A_shared[((C_i_inner_outer * 32) + 21)] * B_shared[((C_j_inner_outer * 4) + 323)]));
            C_local[12] = (C_local[12] + (A_shared[((C_i_inner_outer * 32) + 29)] * B_shared[((C_j_inner_outer * 4) + 320)]));
            C_local[13] = (C_local[13] + (A_shared[((C_i_inner_outer * 32) + 29)] * B_shared[((C_j_inner_outer * 4) + 321)]));
            C_local[14] = (C_local[14] + (A_shared[((C_i_inner_outer * 32) + 29)] * B_shared[((C_j_inner_outer * 4) + 322)]));
            C_local[15] = (C_local[15] + (A_shared[((C_i_inner_outer * 32) + 29)] * B_shared[((C_j_inner_outer * 4) + 323)]));
            C_local[0] = (C_local[0] + (A_shared[((C_i_inner_outer * 32) + 6)] * B_shared[((C_j_inner_outer * 4) + 384)]));
            C_local[1] = (C_local[1] + (A_shared[((C_i_inner_outer * 32) + 6)] * B_shared[((C_j_inner_outer * 4) + 385)]));
            C_local[2] = (C_local[2] + (A_shared[((C_i_inner_outer * 32) + 6)] * B_shared[((C_j_inner_outer * 4) + 386)]));
            C_local[3] = (C_local[3] + (A_shared[((C_i_inner_outer * 32) + 6)] * B_shared[((C_j_inner_outer * 4) + 387)]));
            C_local[4] = (C_local[4] + (A_shared[((C_i_inner_outer * 32) + 14)] * B_shared[((C_j_inner_outer * 4) + 384)]));
            C_local[5] = (C_local[5] + (A_shared[((C_i_inner_outer * 32) + 14)] * B_shared[((C_j_inner_outer * 4) + 385)]));
            C_local[6] = (C_local[6] + (A_shared[((C_i_inner_outer * 32) + 14)] * B_shared[((C_j_inner_outer * 4) + 386)]));
            C_local[7] = (C_local[7] + (A_shared[((C_i_inner_outer * 32) + 14)] * B_shared[((C_j_inner_outer * 4) + 387)]));
            C_local[8] = (C_local[8] + (A_shared[((C_i_inner_outer * 32) + 22)] * B_shared[((C_j_inner_outer * 4) + 384)]));
            C_local[9] = (C_local[9] + (A_shared[((C_i_inner_outer * 32) + 22)] * B_shared[((C_j_inner_outer * 4) + 385)]));
            C_local[10] = (C_local[10] + (A_shared[((C_i_inner_outer * 32) + 22)] * B_shared[((C_j_inner_outer * 4) + 386)]));
            C_local[11] = (C_local[11] + (A_shared[((C_i_inner_outer * 32) + 22)] * B_shared[((C_j_inner_outer * 4) + 387)]));
            C_local[12] = (C_local[12] + (A_shared[((C_i_inner_outer * 32) + 30)] * B_shared[((C_j_inner_outer * 4) + 384)]));
            C_local[13] = (C_local[13] + (A_shared[((C_i_inner_outer * 32) + 30)] * B_shared[((C_j_inner_outer * 4) + 385)]));
            C_local[14] = (C_local[14] + (A_shared[((C_i_inner_outer * 32) + 30)] * B_shared[((C_j_inner_outer * 4) + 386)]));
            C_local[15] = (C_local[15] + (A_shared[((C_i_inner_outer * 32) + 30)] * B_shared[((C_j_inner_outer * 4) + 387)]));
            C_local[0] = (C_local[0] + (A_shared[((C_i_inner_outer * 32) + 7)] * B_shared[((C_j_inner_outer * 4) + 448)]));
            C_local[1] = (C_local[1] + (A_shared[((C_i_inner_outer * 32) + 7)] * B_shared[((C_j_inner_outer * 4) + 449)]));
            C_local[2] = (C_local[2] + (A_shared[((C_i_inner_outer * 32) + 7)] * B_shared[((C_j_inner_outer * 4) + 450)]));
            C_local[3] = (C_local[3] + (A_shared[((C_i_inner_outer * 32) + 7)] * B_shared[((C_j_inner_outer * 4) + 451)]));
            C_local[4] = (C_local[4] + (A_shared[((C_i_inner_outer * 32) + 15)] * B_shared[((C_j_inner_outer * 4) + 448)]));
            C_local[5] = (C_local[5] + (A_shared[((C_i_inner_outer * 32) + 15)] * B_shared[((C_j_inner_outer * 4) + 449)]));
            C_local[6] = (C_local[6] + (A_shared[((C_i_inner_outer * 32) + 15)] * B_shared[((C_j_inner_outer * 4) + 450)]));
            C_local[7] = (C_local[7] + (A_shared[((C_i_inner_outer * 32) + 15)] * B_shared[((C_j_inner_outer * 4) + 451)]));
            C_local[8] = (C_local[8] + (A_shared[((C_i_inner_outer * 32) + 23)] * B_shared[((C_j_inner_outer * 4) + 448)]));
            C_local[9] = (C_local[9] + (A_shared[((C_i_inner_outer * 32) + 23)] * B_shared[((C_j_inner_outer * 4) + 449)]));
            C_local[10] = (C_local[10] + (A_shared[((C_i_inner_outer * 32) + 23)] * B_shared[((C_j_inner_outer * 4) + 450)]));
            C_local[11] = (C_local[11] + (A_shared[((C_i_inner_outer * 32) + 23)] * B_shared[((C_j_inner_outer * 4) + 451)]));
            C_local[12] = (C_local[12] + (A_shared[((C_i_inner_outer * 32) + 31)] * B_shared[((C_j_inner_outer * 4) + 448)]));
            C_local[13] = (C_local[13] + (A_shared[((C_i_inner_outer * 32) + 31)] * B_shared[((C_j_inner_outer * 4) + 449)]));
            C_local[14] = (C_local[14] + (A_shared[((C_i_inner_outer * 32) + 31)] * B_shared[((C_j_inner_outer * 4) + 450)]));
            C_local[15] = (C_local[15] + (A_shared[((C_i_inner_outer * 32) + 31)] * B_shared[((C_j_inner_outer * 4) + 451)]));
          }
          kiln_st(C, ((((C_i_outer * 8192) + (C_i_inner_outer * 512)) + (C_j_outer * 64)) + (C_j_inner_outer * 4)), kiln_ld<float4>(C_local, 0));
          kiln_st(C, (((((C_i_outer * 8192) + (C_i_inner_outer * 512)) + (C_j_outer * 64)) + (C_j_inner_outer * 4)) + 128), kiln_ld<float4>(C_local, 4));
          kiln_st(C, (((((C_i_outer * 8192) + (C_i_inner_outer * 512)) + (C_j_outer * 64)) + (C_j_inner_outer * 4)) + 256), kiln_ld<float4>(C_local, 8));
          kiln_st(C, (((((C_i_outer * 8192) + (C_i_inner_outer * 512)) + (C_j_outer * 64)) + (C_j_inner_outer * 4)) + 384), kiln_ld<float4>(C_local, 12));
        }
      }
    }
  }
}

