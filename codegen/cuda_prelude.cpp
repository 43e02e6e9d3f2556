// The CUDA device prelude's text (see cuda_prelude.h).
#include "codegen/cuda_prelude.h"

namespace kiln {

const std::string& cuda_prelude() {
  static const std::string text = R"KILN(// ---- kiln device prelude ----
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
)KILN";
  return text;
}

const std::string& cuda_narrow_float_prelude() {
  static const std::string text = R"KILN(// ---- kiln f16/bf16 prelude ----
// kiln_half / kiln_bfloat16: f16 and bf16 in memory, as 16-bit patterns;
//   values in registers are f32. kiln_f16_to_f32 / kiln_f32_to_f16 (and
//   bf16) convert, rounding to nearest even as compute/interpreter.h states;
//   kiln_round_f16 rounds an f32 value to f16's precision (a cast). The
//   x2/x4 forms convert packed kiln_u16x2/kiln_u16x4 vectors (half2 accesses);
//   kiln_u16x8 is a 16-byte copy of eight.

typedef unsigned short kiln_half;
typedef unsigned short kiln_bfloat16;
struct __align__(4) kiln_u16x2 { unsigned short x, y; };
struct __align__(8) kiln_u16x4 { unsigned short x, y, z, w; };
// Eight 16-bit values: only ever copied whole (16-byte tile fills).
struct __align__(16) kiln_u16x8 { unsigned short v[8]; };

__device__ __forceinline__ unsigned int kiln_f32_bits(float f) { union { float f; unsigned int u; } v; v.f = f; return v.u; }
__device__ __forceinline__ float kiln_f32_from_bits(unsigned int u) { union { unsigned int u; float f; } v; v.u = u; return v.f; }

#ifdef KILN_CUDA_EMULATION
// The host's conversions, bit for bit those of the GPU's cvt.rn.f16.f32 and
// cvt.f32.f16 (and of the interpreter).
inline kiln_half kiln_f32_to_f16(float f) {
  const unsigned int x = kiln_f32_bits(f);
  const unsigned int sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu;
  unsigned int mant = x & 0x7fffffu;
  if (exp == 0xff) return (kiln_half)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
  const int e = (int)exp - 127 + 15;
  if (e >= 31) return (kiln_half)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (kiln_half)sign;
    mant |= 0x800000u;
    const int shift = 14 - e;
    unsigned int h = mant >> shift;
    const unsigned int rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return (kiln_half)(sign | h);
  }
  unsigned int h = ((unsigned int)e << 10) | (mant >> 13);
  const unsigned int rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return (kiln_half)(sign | h);
}
inline float kiln_f16_to_f32(kiln_half h) {
  const unsigned int sign = ((unsigned int)h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = (float)mant * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exp == 31) return kiln_f32_from_bits(sign | 0x7f800000u | (mant << 13));
  return kiln_f32_from_bits(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}
#else
__device__ __forceinline__ kiln_half kiln_f32_to_f16(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float kiln_f16_to_f32(kiln_half h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
#endif
// bf16 is f32's upper half: round to nearest even, NaN stays a quiet NaN.
__device__ __forceinline__ kiln_bfloat16 kiln_f32_to_bf16(float f) {
  unsigned int x = kiln_f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (kiln_bfloat16)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (kiln_bfloat16)(x >> 16);
}
__device__ __forceinline__ float kiln_bf16_to_f32(kiln_bfloat16 b) { return kiln_f32_from_bits((unsigned int)b << 16); }
__device__ __forceinline__ float kiln_round_f16(float f) { return kiln_f16_to_f32(kiln_f32_to_f16(f)); }
__device__ __forceinline__ float kiln_round_bf16(float f) { return kiln_bf16_to_f32(kiln_f32_to_bf16(f)); }

#define KILN_NARROW_VECTORS(t)                                                                  \
  __device__ __forceinline__ float2 kiln_##t##x2_to_f32(kiln_u16x2 v) {                         \
    return make_float2(kiln_##t##_to_f32(v.x), kiln_##t##_to_f32(v.y));                         \
  }                                                                                             \
  __device__ __forceinline__ float4 kiln_##t##x4_to_f32(kiln_u16x4 v) {                         \
    return make_float4(kiln_##t##_to_f32(v.x), kiln_##t##_to_f32(v.y), kiln_##t##_to_f32(v.z),  \
                       kiln_##t##_to_f32(v.w));                                                 \
  }                                                                                             \
  __device__ __forceinline__ kiln_u16x2 kiln_f32_to_##t##x2(float2 v) {                         \
    kiln_u16x2 r;                                                                               \
    r.x = kiln_f32_to_##t(v.x);                                                                 \
    r.y = kiln_f32_to_##t(v.y);                                                                 \
    return r;                                                                                   \
  }                                                                                             \
  __device__ __forceinline__ kiln_u16x4 kiln_f32_to_##t##x4(float4 v) {                         \
    kiln_u16x4 r;                                                                               \
    r.x = kiln_f32_to_##t(v.x);                                                                 \
    r.y = kiln_f32_to_##t(v.y);                                                                 \
    r.z = kiln_f32_to_##t(v.z);                                                                 \
    r.w = kiln_f32_to_##t(v.w);                                                                 \
    return r;                                                                                   \
  }
KILN_NARROW_VECTORS(f16)
KILN_NARROW_VECTORS(bf16)
#undef KILN_NARROW_VECTORS
// ---- end of kiln f16/bf16 prelude ----
)KILN";
  return text;
}

}  // namespace kiln
