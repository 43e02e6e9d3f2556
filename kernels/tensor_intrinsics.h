// kiln's declared tensor intrinsics (compute/tensor_intrin.h), listed
// explicitly per target. Templates tensorize with them where the target
// has the instruction; a CPU without it is offered none of its intrinsics.
#pragma once

#include <string>
#include <vector>

#include "compute/tensor_intrin.h"
#include "kernels/op_registry.h"

namespace kiln {

// AVX512-VNNI (vpdpbusd): c[i] += sum_k i32(a[k]) * i32(b[i, k]) over 16
// lanes i and 4 steps k, a u8[4], b i8[16, 4] (one dense 64-byte block),
// c i32[16] (contiguous). Reset: c = 0.
TensorIntrin x86_vnni_dot_16x4();
// AVX512-BF16 (vdpbf16ps): c[i] += sum_k f32(a[k]) * f32(b[i, k]) over 16
// lanes and 2 steps, a bf16[2], b bf16[16, 2] (dense), c f32[16]. The
// instruction adds the two products in its own order, rounding each sum
// and flushing subnormals (compute/hw_instructions.h): results differ from
// a plain f32 loop in the last bits, as any reordered float sum does.
TensorIntrin x86_bf16_dot_16x2();

// AMX (tdpbusd / tdpbf16ps over four tile registers): a 32 x 32 block of
// sums over `kt` k (a multiple of 64 for int8, of 32 for bf16),
//   c[i, j] (+)= sum_{kq, kk} acc(a[i, kq*s + kk]) * acc(b[kq, j, kk])
// with s = 4 (u8 a x i8 b into i32 c) or 2 (bf16 a and b into f32 c): a's
// rows contiguous along k (any row pitch), b one dense block [kt/s, 32, s],
// c's rows contiguous. One call runs the whole k range with the sums in
// tile registers. bf16 sums in the instruction's own order.
TensorIntrin x86_amx_int8_32x32(int64_t kt);
TensorIntrin x86_amx_bf16_32x32(int64_t kt);

// AMX over a convolution's output pixels (u8 x i8 into i32, or bf16 into
// f32): per call, `groups` output rows (1 or 2) of `pixels` output pixels
// each by 32 output channels, summed over `steps_c` input channel blocks
// of kt = 64 (int8) or 32 (bf16) channels and the kernel's `steps_r` rows
// and `steps_s` columns:
//   c[g, i, j] (+)= sum_{t1, t2, t3, kq, kk} acc(a[t1, g*stride + t2*dilation, i*stride + t3*dilation, kq*s + kk]) *
//                                            acc(b[t1, t2, t3, kq, j, kk])
// with s = 4 (int8) or 2 (bf16), kq < 16, j < 32; dimensions of one
// element (groups, steps of 1) are left out of the declaration. a's
// channels are contiguous, b's 32 x s of each kq contiguous, c's 32
// channels contiguous; every other stride is free. pixels is at most 16
// with two groups and 32 with one (split 16 + the rest over two tile
// rows).
// `cb` input channels per block: 0 (or 16 * s), a full tile row of 64
// bytes; fewer (a stem's 4) fold a kernel row's steps_s taps into one
// product's k (kq < cb / s; steps_s * cb elements of at most 64 bytes;
// dilation 1): a's pixels then lie cb elements apart, so that a pixel's taps
// and channels are contiguous, and b's taps cb / s rows of kq apart.
// `flat`: 2 to 64 rows whose pixels lie one pitch P apart in both a and c
// (a stride-1 layer's padded rows, with the sums' rows padded to P by
// storage_align): the call runs over the (groups - 1) * P + pixels tile rows
// as one run, 32 at a time, so that a 7x7 image fills 61 of 64 tile rows
// rather than 7 of 16; the P - pixels rows between output rows are computed
// and left unused.
struct AmxConvTile {
  int64_t groups = 1, pixels = 16, steps_c = 1, steps_r = 1, steps_s = 1, stride = 1, dilation = 1, cb = 0;
  bool bf16 = false, flat = false;
};
TensorIntrin x86_amx_conv(const AmxConvTile& tile);

// The 16 x 16 transpose of 32-bit words (AVX-512 shuffles in registers),
// a data movement for packing: dst[i, j, e] = src[j, i * g + e] for i, j <
// 16 and e < g = 4 / bytes(t) (dst[i, j] = src[j, i] for f32, g = 1), t
// f32, bf16, i8 or u8. src's rows (16 words each) and dst's [16, g] rows
// are contiguous, at any row stride. It packs a matrix stored along k into
// the dot instructions' blocks of 16 columns by a word of k.
TensorIntrin x86_transpose_16x16(DType t);
// The interleave of g = 4 / bytes(t) rows of 16 elements into 16 words
// (AVX-512 shuffles): dst[j, e] = src[e, j] for j < 16 and e < g, t bf16,
// i8 or u8. src's rows are contiguous at any stride, dst is one dense
// [16, g] block. It packs a matrix stored along its columns (B[K, N]) into
// the dot instructions' blocks, one block row per call.
TensorIntrin x86_interleave_16(DType t);

// The intrinsics a CPU target offers: VNNI where it has avx512vnni, BF16
// where it has avx512bf16 (the AMX ones are made per k tile).
std::vector<TensorIntrin> cpu_tensor_intrinsics(const CpuInfo& cpu);

}  // namespace kiln
