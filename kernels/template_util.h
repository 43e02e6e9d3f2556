// Helpers shared by the CPU schedule templates (matmul_template,
// conv2d_template): the accumulator type and vector lanes, candidate tile
// sizes for split knobs, and LoopBand, the band of outer loops of a stage
// that a template reorders, fuses into one parallel loop and attaches other
// stages to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/op_registry.h"
#include "schedule/config_space.h"

namespace kiln {

// What a reduction over `t` inputs sums in: integers in i32, 16-bit floats
// (f16, bf16) in f32, rounded once when the result is stored, and other
// floats in their own type. Every backend then agrees with the interpreter
// (a 16-bit accumulator would round after each step, differently per
// backend and per summation order).
DType accumulator_type(DType t);
// The type of a bias added to such a sum: the input's own type for floats
// (16-bit ones too), i32 for integers.
DType bias_type(DType t);
// f32 lanes of one native vector register for `acc` (at least 1).
int vector_lanes(const CpuInfo& cpu, DType acc);
// Architectural vector registers (AVX-512: 32, narrower x86 vectors: 16).
int vector_registers(const CpuInfo& cpu);

// Powers of two and divisors of `extent`, at most `max_value` (1 included).
std::vector<int64_t> block_candidates(int64_t extent, int64_t max_value);
// Register-tile widths of a vectorized axis: half a vector, then one to
// four whole vectors, those at most `extent`, plus `extent` itself when it
// is narrower than four vectors (a whole narrow axis in one tile).
std::vector<int64_t> vector_tile_candidates(int64_t extent, int lanes);
// The values of `wanted` that are at most `extent`, plus `extent` itself
// when it is below the largest wanted value.
std::vector<int64_t> capped_candidates(int64_t extent, const std::vector<int64_t>& wanted);
// The option of split knob `name` whose inner factors are closest (in
// log scale, inner-most first) to `want_inner`: for default configs.
const std::vector<int64_t>& nearest_split(const ConfigSpace& space, const std::string& name,
                                          const std::vector<int64_t>& want_inner);

// A band of leaf loops of one stage (given in a canonical order): reordered
// by a permutation of their canonical indices, then the first `fused` of
// the new order fused into one loop (parallel when `parallel`). The band
// must be the outermost leaves of the stage, `inner` the leaves after it.
class LoopBand {
 public:
  LoopBand(Stage stage, const std::vector<IterVar>& loops, const std::vector<int64_t>& order,
           const std::vector<IterVar>& inner, int fused, bool parallel);
  // The leaf loop at `position` of the new order (the fused loop for the
  // positions it absorbed).
  IterVar at(int position) const;
  // Position in the new order of the loop with canonical index `index`.
  int position_of(int index) const;
  int size() const { return static_cast<int>(order_.size()); }

 private:
  std::vector<IterVar> ordered_;
  std::vector<int64_t> order_;
  IterVar fused_loop_;
  int fused_ = 0;
};

}  // namespace kiln
