// The GEMM machinery shared by matmul, batch_matmul and dense: one
// description of a (batched, possibly transposed) matrix product with its
// fused epilogue, its plain definition, and the tunable CPU template
// (ConfigSpace, default config, schedule) of matmul_template.h applied to
// it. An optional batch axis stays the outermost loop, fused into the
// parallel loop; everything inside a batch is scheduled exactly as matmul.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/op_registry.h"
#include "schedule/config_space.h"

namespace kiln {

// out[b, i, j] = epilogue(sum_k A[b, i, k] * B[b, k, j]) (no b without a
// batch axis). A is stored [.., K, M] when trans_a, B [.., N, K] when
// trans_b; bias has N elements (shared by every batch).
struct GemmShape {
  int64_t batch = 0;  // 0: no batch axis
  int64_t M = 1, N = 1, K = 1;
  bool trans_a = false, trans_b = false;
  bool bias = false, relu = false, gelu = false;
  // > 0: B is given packed into panels of this many columns, as
  // PB[.., ceil(N / b_panel), K, b_panel] (zero past N; see
  // kernels/matmul_packed_b.h), and never transposed.
  int64_t b_panel = 0;
  // > 1 (with b_panel): each panel row holds this many consecutive k values
  // of every column, PB[.., ceil(N / b_panel), K / b_kstep, b_panel, b_kstep]:
  // the blocked layout of the tensor intrinsics' B operand (4 for int8, 2
  // for bf16), so that a tensorized kernel reads it without packing.
  int64_t b_kstep = 1;
  // Quantized (qmatmul, qdense): A holds u8 and B i8 whatever the dtype; the
  // i32 sums (plus an i32 bias) are multiplied by a per-column f32 scale
  // (input "scale") and requantized into out_type: u8 or i8 rounded to
  // nearest even and saturated (relu: at 0), f32 as they are (relu: max 0),
  // or i32 without the scale.
  bool quantized = false;
  DType out_type = DType::u8();
  std::string a_name = "A", b_name = "B", bias_name = "bias";
};

// A config's values, decoded (also what the legacy MatmulSchedule maps to).
struct MatmulParams {
  std::vector<int64_t> tile_y{1, 1, 1}, tile_x{1, 1, 1}, tile_k{1, 1};
  std::vector<int64_t> order{0, 1, 2, 3};  // permutation of band {yo, xo, ym, xm}
  int acc_at = 3;                          // band position the accumulator is computed at
  bool k_outer = false;                    // ko outside the accumulator's register-tile loops
  int pack_b = 0;                          // -2: no packing, -1: root, else band position
  int64_t unroll_k = 1;                    // unrolled k steps
  bool unroll_y = true;                    // unroll the register tile's rows
  int parallel = 1;                        // band loops fused into the parallel loop
  // trans_b only (B's rows are contiguous along k): 0, or each output
  // element reduces k in vectors of this many lanes, combined at the end
  // (a dot product per element; for few rows, e.g. dense with N=1).
  int64_t reduce_vector = 0;
  // The tensor intrinsic the register tile is computed with: "none", "vnni"
  // (u8 x i8, kernels/tensor_intrinsics.h) or "bf16". B is then packed in the
  // intrinsic's blocked layout, 16 columns by its k steps per block.
  std::string tensorize = "none";
  // 0, or each iteration of the register tile's k loop (a group of
  // unroll_k steps) prefetches the B (or packed B) rows that the iteration
  // this many ahead reads (Stage::prefetch; not with AMX or reduce_vector).
  int prefetch = 0;
  // The output written with streaming (non-temporal) stores
  // (Stage::stream_stores): a large result then costs no read for
  // ownership and evicts nothing.
  bool stream_out = false;
  // trans_b, packed, not tensorized: each 16 x 16 block of a B panel moved
  // by a register transpose (x86_transpose_16x16: 16 row loads, shuffles,
  // 16 stores) instead of one strided gather per 16 columns. Needs AVX-512
  // (the knob is offered only there), f32, whole 16-column blocks per panel,
  // N a multiple of the panel and K of 16; otherwise the gathers stay.
  bool transpose_pack = false;
  // 1, or 2: B packed per tile (pack_b at a serial band loop outside the
  // accumulator's) into two slots, the panel of that loop's next iteration
  // packed before the tiles of this one are computed (Stage::double_buffer,
  // a two-slot software pipeline). Where the pack sits at the parallel loop,
  // at the root or at the accumulator's loop, there is nothing to overlap
  // and it packs into one buffer.
  int pack_buffers = 1;
};

// The plain definition: inputs A, B (and bias, and scale when quantized to
// another type than i32), output C (or "out" when an epilogue stage follows
// C: an epilogue, a quantized op, or 16-bit floats, whose f32 sums are
// rounded to 16 bits there). user_error for relu with gelu, or gelu on
// integers.
OpInstance gemm_define(const GemmShape& g, DType dtype);

std::shared_ptr<ConfigSpace> gemm_space(const GemmShape& g, DType dtype, const CpuInfo& cpu);
Config gemm_default(const GemmShape& g, DType dtype, const CpuInfo& cpu, const ConfigSpace& space);
MatmulParams gemm_decode(const Config& cfg);
// The schedule of `op` (built by gemm_define from `g`) for the given params.
ScheduledOp gemm_schedule(const OpInstance& op, const GemmShape& g, const MatmulParams& p);

// Sets d's template (space, default config, schedule) to the GEMM
// template over the shape `shape` reads from an instance's parameters; the
// schedule is a user_error for an instance of another op.
void set_gemm_template(OpDef& d, std::function<GemmShape(const OpInstance&)> shape);

// Erf-based GELU: 0.5 * x * (1 + erf(x / sqrt(2))).
Expr gelu(Expr x);

}  // namespace kiln
