// The tensor-core prelude's text (see cuda_mma_prelude.h).
#include "codegen/cuda_mma_prelude.h"

namespace kiln {

const std::string& cuda_mma_prelude() {
  static const std::string text = R"KILN(// ---- kiln tensor-core prelude ----
// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16} with fragments loaded
// from shared memory by ldmatrix (layouts: codegen/cuda_mma_prelude.h).
// The row each lane hands to ldmatrix is computed once, below, for both the
// GPU and the emulation; the emulation then moves the data across the warp
// as the instructions do.

// The shared-array index of the row `lane` supplies to ldmatrix.x4 for A:
// lane l gives row l%8 of 8x8 matrix l/8, and matrix i is the block
// (rows 8*(i&1).., cols 8*(i>>1)..) of A, as the fragment a[2i], a[2i+1]
// expects. Trans=0 stores A's rows (loaded as they are), Trans=1 its
// columns (loaded with .trans).
__device__ __forceinline__ long long kiln_mma_a_row(int trans, unsigned lane, long long offset, long long ld) {
  const long long i = (lane >> 3) & 3, r = lane & 7, m0 = (i & 1) * 8, k0 = (i >> 1) * 8;
  return trans ? offset + (k0 + r) * ld + m0 : offset + (m0 + r) * ld + k0;
}
// The same for B with ldmatrix.x2 (lanes 0-15 count): matrix j is
// B(k 8j.., n 0..7) seen as n x k, since a lane holds B's column g. Trans=0
// stores B's k rows (loaded with .trans), Trans=1 its n rows (as they are).
__device__ __forceinline__ long long kiln_mma_b_row(int trans, unsigned lane, long long offset, long long ld) {
  const long long j = (lane >> 3) & 1, r = lane & 7;
  return trans ? offset + r * ld + 8 * j : offset + (8 * j + r) * ld;
}

__device__ __forceinline__ void kiln_mma_zero(float* acc) {
#ifdef KILN_CUDA_EMULATION
  kiln_emu::wgmma_check_idle(acc, 4, "kiln_mma_zero");
#endif
  for (int i = 0; i < 4; ++i) acc[i] = 0.0f;
}

#ifdef KILN_CUDA_EMULATION
inline unsigned kiln_lane_id() { return (unsigned)kiln_emu::cur_lane; }

// The shared buffer behind a KILN_SHARED array (or a pointer into one) and
// the index its element 0 has there.
template <typename T>
inline kiln_emu::SharedBuffer<T>& kiln_mma_emu_buffer(kiln_emu::SharedBuffer<T>& a, long long& base) {
  base = 0;
  return a;
}
template <typename T>
inline kiln_emu::SharedBuffer<T>& kiln_mma_emu_buffer(const kiln_emu::SharedPtr<T>& p, long long& base) {
  base = p.off;
  return *p.buf;
}

// ldmatrix.sync.aligned.m8n8.x{nmat}(.trans).shared.b16: every lane deposits
// the row it supplies; lane l then reads, of each matrix i, row l/4 at
// elements 2(l%4), 2(l%4)+1 (with .trans: column l/4 at rows 2(l%4),
// 2(l%4)+1) into frag[2i], frag[2i+1].
template <typename T>
inline void kiln_mma_emu_ldmatrix(const char* op, int nmat, bool trans, kiln_emu::SharedBuffer<T>& buf,
                                  long long row, unsigned short* frag) {
  static_assert(sizeof(T) == 2, "ldmatrix loads 16-bit elements (kiln_half, kiln_bfloat16)");
  struct Row {
    const void* buf;
    const char* name;
    long long index;
  } mine{&buf, buf.name(), row}, all[32];
  kiln_emu::warp_exchange(op, &mine, sizeof(Row), all);
  auto fail = [&](const std::string& what) {
    kiln_emu::check_error(std::string(op) + " " + kiln_emu::where() + ", " + kiln_emu::thread_str(kiln_emu::cur_tid) +
                          ": " + what);
  };
  for (int l = 0; l < 32; ++l) {
    if (all[l].buf != &buf)
      fail("lane " + std::to_string(l) + " passes the shared array " + all[l].name + ", lane " +
           std::to_string(kiln_emu::cur_lane) + " passes " + buf.name() +
           "; every lane of the warp must pass the same array");
  }
  for (int l = 0; l < 8 * nmat; ++l) {  // ldmatrix needs 16-byte aligned rows
    if (all[l].index % 8 != 0)
      fail("lane " + std::to_string(l) + " supplies the row at " + buf.name() + "[" + std::to_string(all[l].index) +
           "], which is not 16-byte aligned (a multiple of 8 elements); the GPU would fault");
  }
  const int g = kiln_emu::cur_lane / 4, t = kiln_emu::cur_lane % 4;
  for (int i = 0; i < nmat; ++i) {
    for (int e = 0; e < 2; ++e) {
      const long long at_index = trans ? all[8 * i + 2 * t + e].index + g : all[8 * i + g].index + 2 * t + e;
      frag[2 * i + e] = (unsigned short)buf.read(at_index);
    }
  }
}

template <int Trans, typename S>
inline void kiln_mma_load_a(unsigned short* frag, S& src, long long offset, long long ld) {
  long long base = 0;
  auto& buf = kiln_mma_emu_buffer(src, base);
  kiln_mma_emu_ldmatrix(Trans ? "kiln_mma_load_a (ldmatrix.x4.trans)" : "kiln_mma_load_a (ldmatrix.x4)", 4, Trans != 0,
                        buf, base + kiln_mma_a_row(Trans, kiln_lane_id(), offset, ld), frag);
}
template <int Trans, typename S>
inline void kiln_mma_load_b(unsigned short* frag, S& src, long long offset, long long ld) {
  long long base = 0;
  auto& buf = kiln_mma_emu_buffer(src, base);
  kiln_mma_emu_ldmatrix(Trans ? "kiln_mma_load_b (ldmatrix.x2)" : "kiln_mma_load_b (ldmatrix.x2.trans)", 2, Trans == 0,
                        buf, base + kiln_mma_b_row(Trans, kiln_lane_id(), offset, ld), frag);
}

// mma.sync m16n8k16: the lanes exchange their fragments, each rebuilds A, B
// and C and computes its four elements of D = A*B + C. The products of two
// 16-bit values are exact in f32; they are added onto c in k order in f32.
inline void kiln_mma_emu(const char* op, float (*to_f32)(unsigned short), float* acc, const unsigned short* a,
                         const unsigned short* b) {
  struct Frag {
    unsigned short a[8], b[4];
    float c[4];
  } mine, all[32];
  memcpy(mine.a, a, sizeof(mine.a));
  memcpy(mine.b, b, sizeof(mine.b));
  memcpy(mine.c, acc, sizeof(mine.c));
  kiln_emu::warp_exchange(op, &mine, sizeof(Frag), all);
  float A[16][16], B[16][8], C[16][8];
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    for (int i = 0; i < 8; ++i) A[g + 8 * ((i >> 1) & 1)][2 * t + (i & 1) + 8 * (i >> 2)] = to_f32(all[l].a[i]);
    for (int i = 0; i < 4; ++i) B[2 * t + (i & 1) + 8 * (i >> 1)][g] = to_f32(all[l].b[i]);
    for (int i = 0; i < 4; ++i) C[g + 8 * (i >> 1)][2 * t + (i & 1)] = all[l].c[i];
  }
  const int g = kiln_emu::cur_lane / 4, t = kiln_emu::cur_lane % 4;
  for (int i = 0; i < 4; ++i) {
    const int m = g + 8 * (i >> 1), n = 2 * t + (i & 1);
    float d = C[m][n];
    for (int k = 0; k < 16; ++k) d += A[m][k] * B[k][n];
    acc[i] = d;
  }
}
inline float kiln_mma_emu_f16(unsigned short h) { return kiln_f16_to_f32(h); }
inline float kiln_mma_emu_bf16(unsigned short h) { return kiln_bf16_to_f32(h); }
inline void kiln_mma_f16(float* acc, const unsigned short* a, const unsigned short* b) {
  kiln_mma_emu("kiln_mma_f16 (mma.sync.m16n8k16)", kiln_mma_emu_f16, acc, a, b);
}
inline void kiln_mma_bf16(float* acc, const unsigned short* a, const unsigned short* b) {
  kiln_mma_emu("kiln_mma_bf16 (mma.sync.m16n8k16)", kiln_mma_emu_bf16, acc, a, b);
}
#else
__device__ __forceinline__ unsigned kiln_lane_id() {
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}
// Two 16-bit elements per 32-bit register, the lower index in the low half.
__device__ __forceinline__ unsigned kiln_mma_pack(unsigned short lo, unsigned short hi) {
  return (unsigned)lo | ((unsigned)hi << 16);
}
__device__ __forceinline__ void kiln_mma_unpack(unsigned r, unsigned short* two) {
  two[0] = (unsigned short)(r & 0xffffu);
  two[1] = (unsigned short)(r >> 16);
}

template <int Trans, typename S>
__device__ __forceinline__ void kiln_mma_load_a(unsigned short* frag, S& src, long long offset, long long ld) {
  const unsigned addr = (unsigned)__cvta_generic_to_shared(&src[kiln_mma_a_row(Trans, kiln_lane_id(), offset, ld)]);
  unsigned r[4];
  if (Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
  for (int i = 0; i < 4; ++i) kiln_mma_unpack(r[i], frag + 2 * i);
}
template <int Trans, typename S>
__device__ __forceinline__ void kiln_mma_load_b(unsigned short* frag, S& src, long long offset, long long ld) {
  const unsigned addr = (unsigned)__cvta_generic_to_shared(&src[kiln_mma_b_row(Trans, kiln_lane_id(), offset, ld)]);
  unsigned r[2];
  if (Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(addr) : "memory");
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(addr) : "memory");
  for (int i = 0; i < 2; ++i) kiln_mma_unpack(r[i], frag + 2 * i);
}

// mma.sync m16n8k16 on `type` (f16 or bf16) inputs, f32 accumulators.
#define KILN_MMA_M16N8K16(name, type)                                                                       \
  __device__ __forceinline__ void name(float* acc, const unsigned short* a, const unsigned short* b) {        \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." type "." type                                      \
                 ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"                      \
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])                                    \
                 : "r"(kiln_mma_pack(a[0], a[1])), "r"(kiln_mma_pack(a[2], a[3])),                           \
                   "r"(kiln_mma_pack(a[4], a[5])), "r"(kiln_mma_pack(a[6], a[7])),                           \
                   "r"(kiln_mma_pack(b[0], b[1])), "r"(kiln_mma_pack(b[2], b[3])));                          \
  }
KILN_MMA_M16N8K16(kiln_mma_f16, "f16")
KILN_MMA_M16N8K16(kiln_mma_bf16, "bf16")
#undef KILN_MMA_M16N8K16
#endif

// Each lane stores its four accumulators (rows g, g+8; cols 2t, 2t+1).
template <typename D>
__device__ __forceinline__ void kiln_mma_store(D& dst, long long offset, long long ld, const float* acc) {
#ifdef KILN_CUDA_EMULATION
  kiln_emu::wgmma_check_idle(acc, 4, "kiln_mma_store");
#endif
  const long long g = kiln_lane_id() / 4, t = kiln_lane_id() % 4;
  for (int i = 0; i < 4; ++i) dst[offset + (g + 8 * (i >> 1)) * ld + 2 * t + (i & 1)] = acc[i];
}
// ---- end of kiln tensor-core prelude ----
)KILN";
  return text;
}

}  // namespace kiln
