// kiln: cuda_dense_5x70x37_bias_gelu for sm_90, 1 kernel
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

// grid 2 x 2 x 1, block 16 x 1 x 1, 2176 bytes of shared memory
extern "C" __global__ void __launch_bounds__(16) cuda_dense_5x70x37_bias_gelu_kernel0(const float* __restrict__ data, const float* __restrict__ weight, const float* __restrict__ bias, float* __restrict__ out) {
  KILN_SHARED(float, weight_shared, 512);
  KILN_SHARED(float, data_shared, 32);
  {
    const int out_i_outer = (int)blockIdx.y;
    {
      const int out_j_outer = (int)blockIdx.x;
      {
        const int out_i_inner_outer = (int)threadIdx.y;
        {
          const int out_j_inner_outer = (int)threadIdx.x;
          __align__(16) float C_local[16];
          for (int C_i = 0; C_i < 0 + kiln_imin<int>(4, (5 - (out_i_outer * 4))); ++C_i) {
            if ((C_i < kiln_imin<int>(4, (5 - (out_i_outer * 4))))) {
              for (int C_j = 0; C_j < 0 + kiln_imin<int>(4, ((70 - (out_j_outer * 64)) - (out_j_inner_outer * 4))); ++C_j) {
                if ((C_j < kiln_imin<int>(4, ((70 - (out_j_outer * 64)) - (out_j_inner_outer * 4))))) {
                  C_local[((C_i * 4) + C_j)] = 0.0f;
                }
              }
            }
          }
          for (int k_outer = 0; k_outer < 0 + 5; ++k_outer) {
            __syncthreads();
            for (int data_shared_i_data_shared_j_fused_outer = 0; data_shared_i_data_shared_j_fused_outer < 0 + kiln_floordiv<int>(((kiln_imin<int>(kiln_imin<int>(4, (5 - (out_i_outer * 4))), (5 - (out_i_outer * 4))) * kiln_imin<int>(8, (37 - (k_outer * 8)))) + 15), 16); ++data_shared_i_data_shared_j_fused_outer) {
              {
                const int data_shared_i_data_shared_j_fused_inner_outer = (int)threadIdx.y;
                {
                  const int data_shared_i_data_shared_j_fused_inner_inner = (int)threadIdx.x;
                  if ((((data_shared_i_data_shared_j_fused_outer * 16) + data_shared_i_data_shared_j_fused_inner_inner) < (kiln_imin<int>(kiln_imin<int>(4, (5 - (out_i_outer * 4))), (5 - (out_i_outer * 4))) * kiln_imin<int>(8, (37 - (k_outer * 8)))))) {
                    if ((kiln_floormod<int>(((data_shared_i_data_shared_j_fused_outer * 16) + data_shared_i_data_shared_j_fused_inner_inner), kiln_imin<int>(8, (37 - (k_outer * 8)))) < kiln_imin<int>(8, (37 - (k_outer * 8))))) {
                      if ((kiln_floordiv<int>(((data_shared_i_data_shared_j_fused_outer * 16) + data_shared_i_data_shared_j_fused_inner_inner), kiln_imin<int>(8, (37 - (k_outer * 8)))) < kiln_imin<int>(kiln_imin<int>(4, (5 - (out_i_outer * 4))), (5 - (out_i_outer * 4))))) {
                        data_shared[((kiln_floordiv<int>(((data_shared_i_data_shared_j_fused_outer * 16) + data_shared_i_data_shared_j_fused_inner_inner), kiln_imin<int>(8, (37 - (k_outer * 8)))) * 8) + kiln_floormod<int>(((data_shared_i_data_shared_j_fused_outer * 16) + data_shared_i_data_shared_j_fused_inner_inner), kiln_imin<int>(8, (37 - (k_outer * 8)))))] = data[((((kiln_floordiv<int>(((data_shared_i_data_shared_j_fused_outer * 16) + data_shared_i_data_shared_j_fused_inner_inner), kiln_imin<int>(8, (37 - (k_outer * 8)))) * 37) + (out_i_outer * 148)) + kiln_floormod<int>(((data_shared_i_data_shared_j_fused_outer * 16) + data_shared_i_data_shared_j_fused_inner_inner), kiln_imin<int>(8, (37 - (k_outer * 8))))) + (k_outer * 8))];
                      }
                    }
                  }
                }
              }
            }
            for (int weight_shared_i_weight_shared_j_fused_outer = 0; weight_shared_i_weight_shared_j_fused_outer < 0 + kiln_floordiv<int>(((kiln_imin<int>(64, (70 - (out_j_outer * 64))) * kiln_imin<int>(8, (37 - (k_outer * 8)))) + 15), 16); ++weight_shared_i_weight_shared_j_fused_outer) {
              {
                const int weight_shared_i_weight_shared_j_fused_inner_outer = (int)threadIdx.y;
                {
                  const int weight_shared_i_weight_shared_j_fused_inner_inner = (int)threadIdx.x;
                  if ((((weight_shared_i_weight_shared_j_fused_outer * 16) + weight_shared_i_weight_shared_j_fused_inner_inner) < (kiln_imin<int>(64, (70 - (out_j_outer * 64))) * kiln_imin<int>(8, (37 - (k_outer * 8)))))) {
                    if ((kiln_floormod<int>(((weight_shared_i_weight_shared_j_fused_outer * 16) + weight_shared_i_weight_shared_j_fused_inner_inner), kiln_imin<int>(8, (37 - (k_outer * 8)))) < kiln_imin<int>(8, (37 - (k_outer * 8))))) {
                      if ((kiln_floordiv<int>(((weight_shared_i_weight_shared_j_fused_outer * 16) + weight_shared_i_weight_shared_j_fused_inner_inner), kiln_imin<int>(8, (37 - (k_outer * 8)))) < kiln_imin<int>(64, (70 - (out_j_outer * 64))))) {
                        weight_shared[((kiln_floordiv<int>(((weight_shared_i_weight_shared_j_fused_outer * 16) + weight_shared_i_weight_shared_j_fused_inner_inner), kiln_imin<int>(8, (37 - (k_outer * 8)))) * 8) + kiln_floormod<int>(((weight_shared_i_weight_shared_j_fused_outer * 16) + weight_shared_i_weight_shared_j_fused_inner_inner), kiln_imin<int>(8, (37 - (k_outer * 8)))))] = weight[((((kiln_floordiv<int>(((weight_shared_i_weight_shared_j_fused_outer * 16) + weight_shared_i_weight_shared_j_fused_inner_inner), kiln_imin<int>(8, (37 - (k_outer * 8)))) * 37) + (out_j_outer * 2368)) + kiln_floormod<int>(((weight_shared_i_weight_shared_j_fused_outer * 16) + weight_shared_i_weight_shared_j_fused_inner_inner), kiln_imin<int>(8, (37 - (k_outer * 8))))) + (k_outer * 8))];
                      }
                    }
                  }
                }
              }
            }
            __syncthreads();
            for (int C_i = 0; C_i < 0 + kiln_imin<int>(4, (5 - (out_i_outer * 4))); ++C_i) {
              if ((C_i < kiln_imin<int>(4, (5 - (out_i_outer * 4))))) {
                for (int C_j = 0; C_j < 0 + kiln_imin<int>(4, ((70 - (out_j_outer * 64)) - (out_j_inner_outer * 4))); ++C_j) {
                  if ((C_j < kiln_imin<int>(4, ((70 - (out_j_outer * 64)) - (out_j_inner_outer * 4))))) {
                    C_local[((C_i * 4) + C_j)] = (C_local[((C_i * 4) + C_j)] + (data_shared[(C_i * 8)] * weight_shared[((C_j * 8) + (out_j_inner_outer * 32))]));
                  }
                }
              }
            }
            for (int C_i = 0; C_i < 0 + kiln_imin<int>(4, (5 - (out_i_outer * 4))); ++C_i) {
              if ((C_i < kiln_imin<int>(4, (5 - (out_i_outer * 4))))) {
                for (int C_j = 0; C_j < 0 + kiln_imin<int>(4, ((70 - (out_j_outer * 64)) - (out_j_inner_outer * 4))); ++C_j) {
                  if ((C_j < kiln_imin<int>(4, ((70 - (out_j_outer * 64)) - (out_j_inner_outer * 4))))) {
                    C_local[((C_i * 4) + C_j)] = (C_local[((C_i * 4) + C_j)] + (data_shared[((C_i * 8) + 1)] * weight_shared[(((C_j * 8) + (out_j_inner_outer * 32)) + 1)]));
                  }
                }
              }
            }
            for (int C_i = 0; C_i < 0 + kiln_imin<int>(4, (5 - (out_i_outer * 4))); ++C_i) {
              if ((C_i < kiln_imin<int>(4, (5 - (out_i_outer * 4))))) {
                for (int C_j = 0; C_j < 0 + kiln_imin<int>(4, ((70 - (out_j_outer * 64)) - (out_j_inner_outer * 4))); ++C_j) {
                  if ((C_j < kiln_imin<int>(4, ((70 - (out_j_outer * 64)) - (out_j_inner_outer * 4))))) {
                    C_local[((C_i * 4) + C_j)] = (C_local[((C_i * 4) + C_j)] + (data_shared[((C_i * 8) + 2)] * weight_shared[(((C_j * 8) + (out_j_inner_outer * 32)) + 2)]));
                  }
                }
              }
            }
            for (int C_i = 0; C_i < 0 + kiln_imin<int>(4, (5 - (out_i_outer * 4))); ++C_i) {
              if ((C_i < kiln_imin<int>(4, (5 - (out_i_outer * 4))))) {
                for (int C_j = 0; C_j < 0 + kiln_imin<int>(4, ((70 - (out_j_outer * 64)) - (out_j_inner_outer * 4))); ++C_j) {
                  if ((C_j < kiln_imin<int>(4, ((70 - (out_j_outer * 64)) - (out_j_inner_outer * 4))))) {
                    C_local[((C_i * 4) + C_j)] = (C_local[((C_i * 4) + C_j)] + (data_shared[((C_i * 8) + 3)] * weight_shared[(((C_j * 8) + (out_j_inner_outer * 32)) + 3)]));
                  }
                }
              }
            }
            for (int C_i = 0; C_i < 0 + kiln_imin<int>(4, (5 - (out_i_outer * 4))); ++C_i) {
              if ((C_i < kiln_imin<int>(4, (5 - (out_i_outer * 4))))) {
                for (int C_j = 0; C_j < 0 + kiln_imin<int>(4, ((70 - (out_j_outer * 64)) - (out_j_inner_outer * 4))); ++C_j) {
                  if ((C_j < kiln_imin<int>(4, ((70 - (out_j_outer * 64)) - (out_j_inner_outer * 4))))) {
                    C_local[((C_i * 4) + C_j)] = (C_local[((C_i * 4) + C_j)] + (data_shared[((C_i * 8) + 4)] * weight_shared[(((C_j * 8) + (out_j_inner_outer * 32)) + 4)]));
                  }
                }
              }
            }
            if ((((k_outer * 8) + 5) < 37)) {
              for (int C_i = 0; C_i < 0 + kiln_imin<int>(4, (5 - (out_i_outer * 4))); ++C_i) {
                if ((C_i < kiln_imin<int>(4, (5 - (out_i_outer * 4))))) {
                  for (int C_j = 0; C_j < 0 + kiln_imin<int>(4, ((70 - (out_j_outer * 64)) - (out_j_inner_outer * 4))); ++C_j) {
                    if ((C_j < kiln_imin<int>(4, ((70 - (out_j_outer * 64)) - (out_j_inner_outer * 4))))) {
                      C_local[((C_i * 4) + C_j)] = (C_local[((C_i * 4) + C_j)] + (data_shared[((C_i * 8) + 5)] * weight_shared[(((C_j * 8) + (out_j_inner_outer * 32)) + 5)]));
                    }
                  }
                }
              }
            }
            if ((((k_outer * 8) + 6) < 37)) {
              for (int C_i = 0; C_i < 0 + kiln_imin<int>(4, (5 - (out_i_outer * 4))); ++C_i) {
                if ((C_i < kiln_imin<int>(4, (5 - (out_i_outer * 4))))) {
                  for (int C_j = 0; C_j < 0 + kiln_imin<int>(4, ((70 - (out_j_outer * 64)) - (out_j_inner_outer * 4))); ++C_j) {
                    if ((C_j < kiln_imin<int>(4, ((70 - (out_j_outer * 64)) - (out_j_inner_outer * 4))))) {
                      C_local[((C_i * 4) + C_j)] = (C_local[((C_i * 4) + C_j)] + (data_shared[((C_i * 8) + 6)] * weight_shared[(((C_j * 8) + (out_j_inner_outer * 32)) + 6)]));
                    }
                  }
                }
              }
            }
            if ((((k_outer * 8) + 7) < 37)) {
              for (int C_i = 0; C_i < 0 + kiln_imin<int>(4, (5 - (out_i_outer * 4))); ++C_i) {
                if ((C_i < kiln_imin<int>(4, (5 - (out_i_outer * 4))))) {
                  for (int C_j = 0; C_j < 0 + kiln_imin<int>(4, ((70 - (out_j_outer * 64)) - (out_j_inner_outer * 4))); ++C_j) {
                    if ((C_j < kiln_imin<int>(4, ((70 - (out_j_outer * 64)) - (out_j_inner_outer * 4))))) {
                      C_local[((C_i * 4) + C_j)] = (C_local[((C_i * 4) + C_j)] + (data_shared[((C_i * 8) + 7)] * weight_shared[(((C_j * 8) + (out_j_inner_outer * 32)) + 7)]));
                    }
                  }
                }
              }
            }
          }
          if ((((out_j_outer * 64) + (out_j_inner_outer * 4)) < 70)) {
            out[(((out_i_outer * 280) + (out_j_outer * 64)) + (out_j_inner_outer * 4))] = ((0.5f * (C_local[0] + bias[((out_j_outer * 64) + (out_j_inner_outer * 4))])) * (1.0f + erff(((C_local[0] + bias[((out_j_outer * 64) + (out_j_inner_outer * 4))]) * 0.707106781f))));
          }
          if (((((out_j_outer * 64) + (out_j_inner_outer * 4)) + 1) < 70)) {
            out[((((out_i_outer * 280) + (out_j_outer * 64)) + (out_j_inner_outer * 4)) + 1)] = ((0.5f * (C_local[1] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 1)])) * (1.0f + erff(((C_local[1] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 1)]) * 0.707106781f))));
          }
          if (((((out_j_outer * 64) + (out_j_inner_outer * 4)) + 2) < 70)) {
            out[((((out_i_outer * 280) + (out_j_outer * 64)) + (out_j_inner_outer * 4)) + 2)] = ((0.5f * (C_local[2] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 2)])) * (1.0f + erff(((C_local[2] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 2)]) * 0.707106781f))));
          }
          if (((((out_j_outer * 64) + (out_j_inner_outer * 4)) + 3) < 70)) {
            out[((((out_i_outer * 280) + (out_j_outer * 64)) + (out_j_inner_outer * 4)) + 3)] = ((0.5f * (C_local[3] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 3)])) * (1.0f + erff(((C_local[3] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 3)]) * 0.707106781f))));
          }
          if ((((out_i_outer * 4) + 1) < 5)) {
            if ((((out_j_outer * 64) + (out_j_inner_outer * 4)) < 70)) {
              out[((((out_i_outer * 280) + (out_j_outer * 64)) + (out_j_inner_outer * 4)) + 70)] = ((0.5f * (C_local[4] + bias[((out_j_outer * 64) + (out_j_inner_outer * 4))])) * (1.0f + erff(((C_local[4] + bias[((out_j_outer * 64) + (out_j_inner_outer * 4))]) * 0.707106781f))));
            }
            if (((((out_j_outer * 64) + (out_j_inner_outer * 4)) + 1) < 70)) {
              out[((((out_i_outer * 280) + (out_j_outer * 64)) + (out_j_inner_outer * 4)) + 71)] = ((0.5f * (C_local[5] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 1)])) * (1.0f + erff(((C_local[5] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 1)]) * 0.707106781f))));
            }
            if (((((out_j_outer * 64) + (out_j_inner_outer * 4)) + 2) < 70)) {
              out[((((out_i_outer * 280) + (out_j_outer * 64)) + (out_j_inner_outer * 4)) + 72)] = ((0.5f * (C_local[6] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 2)])) * (1.0f + erff(((C_local[6] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 2)]) * 0.707106781f))));
            }
            if (((((out_j_outer * 64) + (out_j_inner_outer * 4)) + 3) < 70)) {
              out[((((out_i_outer * 280) + (out_j_outer * 64)) + (out_j_inner_outer * 4)) + 73)] = ((0.5f * (C_local[7] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 3)])) * (1.0f + erff(((C_local[7] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 3)]) * 0.707106781f))));
            }
          }
          if ((((out_i_outer * 4) + 2) < 5)) {
            if ((((out_j_outer * 64) + (out_j_inner_outer * 4)) < 70)) {
              out[((((out_i_outer * 280) + (out_j_outer * 64)) + (out_j_inner_outer * 4)) + 140)] = ((0.5f * (C_local[8] + bias[((out_j_outer * 64) + (out_j_inner_outer * 4))])) * (1.0f + erff(((C_local[8] + bias[((out_j_outer * 64) + (out_j_inner_outer * 4))]) * 0.707106781f))));
            }
            if (((((out_j_outer * 64) + (out_j_inner_outer * 4)) + 1) < 70)) {
              out[((((out_i_outer * 280) + (out_j_outer * 64)) + (out_j_inner_outer * 4)) + 141)] = ((0.5f * (C_local[9] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 1)])) * (1.0f + erff(((C_local[9] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 1)]) * 0.707106781f))));
            }
            if (((((out_j_outer * 64) + (out_j_inner_outer * 4)) + 2) < 70)) {
              out[((((out_i_outer * 280) + (out_j_outer * 64)) + (out_j_inner_outer * 4)) + 142)] = ((0.5f * (C_local[10] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 2)])) * (1.0f + erff(((C_local[10] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 2)]) * 0.707106781f))));
            }
            if (((((out_j_outer * 64) + (out_j_inner_outer * 4)) + 3) < 70)) {
              out[((((out_i_outer * 280) + (out_j_outer * 64)) + (out_j_inner_outer * 4)) + 143)] = ((0.5f * (C_local[11] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 3)])) * (1.0f + erff(((C_local[11] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 3)]) * 0.707106781f))));
            }
          }
          if ((((out_i_outer * 4) + 3) < 5)) {
            if ((((out_j_outer * 64) + (out_j_inner_outer * 4)) < 70)) {
              out[((((out_i_outer * 280) + (out_j_outer * 64)) + (out_j_inner_outer * 4)) + 210)] = ((0.5f * (C_local[12] + bias[((out_j_outer * 64) + (out_j_inner_outer * 4))])) * (1.0f + erff(((C_local[12] + bias[((out_j_outer * 64) + (out_j_inner_outer * 4))]) * 0.707106781f))));
            }
            if (((((out_j_outer * 64) + (out_j_inner_outer * 4)) + 1) < 70)) {
              out[((((out_i_outer * 280) + (out_j_outer * 64)) + (out_j_inner_outer * 4)) + 211)] = ((0.5f * (C_local[13] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 1)])) * (1.0f + erff(((C_local[13] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 1)]) * 0.707106781f))));
            }
            if (((((out_j_outer * 64) + (out_j_inner_outer * 4)) + 2) < 70)) {
              out[((((out_i_outer * 280) + (out_j_outer * 64)) + (out_j_inner_outer * 4)) + 212)] = ((0.5f * (C_local[14] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 2)])) * (1.0f + erff(((C_local[14] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 2)]) * 0.707106781f))));
            }
            if (((((out_j_outer * 64) + (out_j_inner_outer * 4)) + 3) < 70)) {
              out[((((out_i_outer * 280) + (out_j_outer * 64)) + (out_j_inner_outer * 4)) + 213)] = ((0.5f * (C_local[15] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 3)])) * (1.0f + erff(((C_local[15] + bias[(((out_j_outer * 64) + (out_j_inner_outer * 4)) + 3)]) * 0.707106781f))));
            }
          }
        }
      }
    }
  }
}

