// The asynchronous-copy prelude's text (see cuda_async_prelude.h).
#include "codegen/cuda_async_prelude.h"

namespace kiln {

const std::string& cuda_async_prelude() {
  static const std::string text = R"KILN(// ---- kiln async-copy prelude ----
// cp.async global -> shared, in groups that each thread commits and waits
// for (sm_80 and later; API: codegen/cuda_async_prelude.h).
#ifdef KILN_CUDA_EMULATION
// The emulation (kiln_emu::cp_async and friends) checks alignment and
// bounds, marks the destination pending until a wait lands the copy, and
// counts the copy as the issuing thread's write for race detection.
template <int Bytes, typename T>
inline void kiln_cp_async(kiln_emu::SharedBuffer<T>& dst, long long dst_index, const T* src, bool copy = true) {
  kiln_emu::cp_async<Bytes>(dst, dst_index, src, copy);
}
template <int Bytes, typename T>
inline void kiln_cp_async(const kiln_emu::SharedPtr<T>& dst, long long dst_index, const T* src, bool copy = true) {
  kiln_emu::cp_async<Bytes>(*dst.buf, dst.off + dst_index, src, copy);
}
inline void kiln_cp_async_commit() { kiln_emu::cp_async_commit(); }
inline void kiln_cp_async_wait(int n) { kiln_emu::cp_async_wait(n); }
#else
template <int Bytes, typename T>
__device__ __forceinline__ void kiln_cp_async(T* dst, long long dst_index, const T* src) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  static_assert(Bytes % sizeof(T) == 0, "cp.async copies whole elements");
  const unsigned addr = (unsigned)__cvta_generic_to_shared(dst + dst_index);
  if (Bytes == 16)  // .cg: cached in L2 only, the only form for 16 bytes that skips L1
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(addr), "l"(src) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(addr), "l"(src), "n"(Bytes) : "memory");
}
// copy false: src-size 0, so nothing is read and the bytes are zeros.
template <int Bytes, typename T>
__device__ __forceinline__ void kiln_cp_async(T* dst, long long dst_index, const T* src, bool copy) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  static_assert(Bytes % sizeof(T) == 0, "cp.async copies whole elements");
  const unsigned addr = (unsigned)__cvta_generic_to_shared(dst + dst_index);
  const unsigned src_size = copy ? Bytes : 0;
  if (Bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(addr), "l"(src), "r"(src_size) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(addr), "l"(src), "n"(Bytes), "r"(src_size)
                 : "memory");
}
__device__ __forceinline__ void kiln_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// wait_group takes an immediate: one case per count. Outside 0..7, wait for
// everything (always correct, only slower).
#define KILN_CP_ASYNC_WAIT(k) \
  case k: asm volatile("cp.async.wait_group " #k ";\n" ::: "memory"); break;
__device__ __forceinline__ void kiln_cp_async_wait(int n) {
  switch (n) {
    KILN_CP_ASYNC_WAIT(1)
    KILN_CP_ASYNC_WAIT(2)
    KILN_CP_ASYNC_WAIT(3)
    KILN_CP_ASYNC_WAIT(4)
    KILN_CP_ASYNC_WAIT(5)
    KILN_CP_ASYNC_WAIT(6)
    KILN_CP_ASYNC_WAIT(7)
    default: asm volatile("cp.async.wait_group 0;\n" ::: "memory"); break;
  }
}
#undef KILN_CP_ASYNC_WAIT
#endif
// ---- end of kiln async-copy prelude ----
)KILN";
  return text;
}

}  // namespace kiln
