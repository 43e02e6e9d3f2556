// The mbarrier prelude's text (see cuda_mbarrier_prelude.h).
#include "codegen/cuda_mbarrier_prelude.h"

namespace kiln {

const std::string& cuda_mbarrier_prelude() {
  static const std::string text = R"KILN(// ---- kiln mbarrier prelude ----
// Shared-memory barriers with phases (sm_80 and later; transaction bytes
// and bulk copies sm_90; API: codegen/cuda_mbarrier_prelude.h).
#ifdef KILN_CUDA_EMULATION
#define KILN_SHARED_MBARRIER(name, count) static ::kiln_emu::MbarrierArray<(count)> name(#name)
template <long long N> inline void kiln_mbarrier_init(kiln_emu::MbarrierArray<N>& b, int i, unsigned count) {
  b.init(i, count);
}
template <long long N> inline void kiln_mbarrier_arrive(kiln_emu::MbarrierArray<N>& b, int i) { b.arrive(i); }
template <long long N> inline void kiln_mbarrier_wait(kiln_emu::MbarrierArray<N>& b, int i, unsigned parity) {
  b.wait(i, parity);
}
template <long long N> inline void kiln_cp_async_mbarrier_arrive(kiln_emu::MbarrierArray<N>& b, int i) {
  kiln_emu::cp_async_mbarrier_arrive(b, i);
}
// The emulated barriers are one memory: nothing to make visible.
inline void kiln_fence_mbarrier_init() {}
template <long long N>
inline void kiln_mbarrier_arrive_expect_tx(kiln_emu::MbarrierArray<N>& b, int i, unsigned bytes) {
  b.arrive_expect_tx(i, bytes);
}
template <typename T, long long N>
inline void kiln_bulk_copy(kiln_emu::SharedBuffer<T>& dst, long long dst_index, const T* src, unsigned bytes,
                           kiln_emu::MbarrierArray<N>& b, int i) {
  b.bulk_copy(dst, dst_index, src, bytes, i);
}
template <typename T, long long N>
inline void kiln_bulk_copy(const kiln_emu::SharedPtr<T>& dst, long long dst_index, const T* src, unsigned bytes,
                           kiln_emu::MbarrierArray<N>& b, int i) {
  b.bulk_copy(*dst.buf, dst.off + dst_index, src, bytes, i);
}
// A tensor map parameter: filled at launch (kiln_emu::TensorMap).
using kiln_tensor_map = kiln_emu::TensorMap;
#define __grid_constant__
// kiln_tensor_copy_Rd(dst, dst_index, map, c0, .., c(R-1), barriers, i):
// the box at those coordinates (R = 2 to 5), into a shared array or a view
// into the block's pool.
#define KILN_EMU_TENSOR_COPY(R, PARAMS, ARGS)                                                                  \
  template <typename T, long long N>                                                                          \
  inline void kiln_tensor_copy_##R##d(kiln_emu::SharedBuffer<T>& dst, long long dst_index,                   \
                                      const kiln_tensor_map& map, PARAMS, kiln_emu::MbarrierArray<N>& b, int i) { \
    const int c[R] = {ARGS};                                                                                  \
    b.tensor_copy(dst, dst_index, map, c, R, i);                                                              \
  }                                                                                                           \
  template <typename T, long long N>                                                                          \
  inline void kiln_tensor_copy_##R##d(const kiln_emu::SharedPtr<T>& dst, long long dst_index,                \
                                      const kiln_tensor_map& map, PARAMS, kiln_emu::MbarrierArray<N>& b, int i) { \
    const int c[R] = {ARGS};                                                                                  \
    b.tensor_copy(*dst.buf, dst.off + dst_index, map, c, R, i);                                               \
  }
#define KILN_COMMA ,
KILN_EMU_TENSOR_COPY(2, int c0 KILN_COMMA int c1, c0 KILN_COMMA c1)
KILN_EMU_TENSOR_COPY(3, int c0 KILN_COMMA int c1 KILN_COMMA int c2, c0 KILN_COMMA c1 KILN_COMMA c2)
KILN_EMU_TENSOR_COPY(4, int c0 KILN_COMMA int c1 KILN_COMMA int c2 KILN_COMMA int c3,
                     c0 KILN_COMMA c1 KILN_COMMA c2 KILN_COMMA c3)
KILN_EMU_TENSOR_COPY(5, int c0 KILN_COMMA int c1 KILN_COMMA int c2 KILN_COMMA int c3 KILN_COMMA int c4,
                     c0 KILN_COMMA c1 KILN_COMMA c2 KILN_COMMA c3 KILN_COMMA c4)
#undef KILN_EMU_TENSOR_COPY
#undef KILN_COMMA
#else
#define KILN_SHARED_MBARRIER(name, count) __shared__ __align__(8) unsigned long long name[count]
// A tensor map parameter (a CUtensorMap, encoded at launch), passed as a
// const __grid_constant__ kernel parameter so that its address is usable.
struct __align__(64) kiln_tensor_map {
  unsigned long long opaque[16];
};
__device__ __forceinline__ unsigned kiln_mbarrier_address(unsigned long long* b, int i) {
  return (unsigned)__cvta_generic_to_shared(b + i);
}
__device__ __forceinline__ void kiln_mbarrier_init(unsigned long long* b, int i, unsigned count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(kiln_mbarrier_address(b, i)), "r"(count) : "memory");
}
__device__ __forceinline__ void kiln_mbarrier_arrive(unsigned long long* b, int i) {
  asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.shared.b64 state, [%0];\n}\n" ::"r"(kiln_mbarrier_address(b, i))
               : "memory");
}
__device__ __forceinline__ void kiln_mbarrier_wait(unsigned long long* b, int i, unsigned parity) {
  const unsigned addr = kiln_mbarrier_address(b, i);
  unsigned done = 0;
  do {
    asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(addr), "r"(parity)
                 : "memory");
  } while (!done);
}
__device__ __forceinline__ void kiln_cp_async_mbarrier_arrive(unsigned long long* b, int i) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];\n" ::"r"(kiln_mbarrier_address(b, i)) : "memory");
}
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ void kiln_fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void kiln_mbarrier_arrive_expect_tx(unsigned long long* b, int i, unsigned bytes) {
  asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}\n" ::"r"(
                   kiln_mbarrier_address(b, i)),
               "r"(bytes)
               : "memory");
}
template <typename T>
__device__ __forceinline__ void kiln_bulk_copy(T* dst, long long dst_index, const T* src, unsigned bytes,
                                               unsigned long long* b, int i) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   (unsigned)__cvta_generic_to_shared(dst + dst_index)),
               "l"(src), "r"(bytes), "r"(kiln_mbarrier_address(b, i))
               : "memory");
}
// cp.async.bulk.tensor.Rd: the box at coordinates c0.. of the map (R = 2
// to 5), its bytes completing on barrier i.
template <typename T>
__device__ __forceinline__ void kiln_tensor_copy_2d(T* dst, long long dst_index, const kiln_tensor_map& map, int c0,
                                                    int c1, unsigned long long* b, int i) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          (unsigned)__cvta_generic_to_shared(dst + dst_index)),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(c1), "r"(kiln_mbarrier_address(b, i))
      : "memory");
}
template <typename T>
__device__ __forceinline__ void kiln_tensor_copy_3d(T* dst, long long dst_index, const kiln_tensor_map& map, int c0,
                                                    int c1, int c2, unsigned long long* b, int i) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"((unsigned)__cvta_generic_to_shared(dst + dst_index)),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(c1), "r"(c2), "r"(kiln_mbarrier_address(b, i))
      : "memory");
}
template <typename T>
__device__ __forceinline__ void kiln_tensor_copy_4d(T* dst, long long dst_index, const kiln_tensor_map& map, int c0,
                                                    int c1, int c2, int c3, unsigned long long* b, int i) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];\n" ::"r"((unsigned)__cvta_generic_to_shared(dst + dst_index)),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
      "r"(kiln_mbarrier_address(b, i))
      : "memory");
}
template <typename T>
__device__ __forceinline__ void kiln_tensor_copy_5d(T* dst, long long dst_index, const kiln_tensor_map& map, int c0,
                                                    int c1, int c2, int c3, int c4, unsigned long long* b, int i) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, "
      "%6}], [%7];\n" ::"r"((unsigned)__cvta_generic_to_shared(dst + dst_index)),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4),
      "r"(kiln_mbarrier_address(b, i))
      : "memory");
}
#endif
#endif
// ---- end of kiln mbarrier prelude ----
)KILN";
  return text;
}

}  // namespace kiln
