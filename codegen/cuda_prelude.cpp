// The CUDA device prelude's text (see cuda_prelude.h).
#include "codegen/cuda_prelude.h"

namespace kiln {

const std::string& cuda_prelude() {
  static const std::string text = R"KILN(// ---- kiln device prelude ----
// KILN_SHARED(T, name, count): the block's shared array `name` of `count` T,
//   16-byte aligned so that 16-byte vectors may be loaded from it. The CPU
//   emulation defines its own (a race-checked array object), hence the guard.
// float2/float4 + - * / (and += -= *= /=): element-wise, for vector
//   expressions printed as ordinary operators (CUDA defines none).
// kiln_max/kiln_min: element-wise fmaxf/fminf on float, float2 and float4.
// kiln_ld<V>(p, i) / kiln_st(p, i, v): every vector access goes through
//   these: they read or write a V (float2, float4) at p + i, i counted in
//   elements of *p, which must be aligned to sizeof(V). Under emulation they
//   also check that alignment and, on shared arrays, races and bounds.
#ifndef KILN_SHARED
#define KILN_SHARED(T, name, count) __shared__ __align__(16) T name[count]
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
)KILN";
  return text;
}

}  // namespace kiln
