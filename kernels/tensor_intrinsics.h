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

// The intrinsics a CPU target offers: VNNI where it has avx512vnni, BF16
// where it has avx512bf16.
std::vector<TensorIntrin> cpu_tensor_intrinsics(const CpuInfo& cpu);

}  // namespace kiln
