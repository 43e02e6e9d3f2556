// How kiln's element types, names, literals and math functions are spelled
// in the CUDA C that codegen/cuda_codegen.h prints.
#pragma once

#include <string>

#include "compute/dtype.h"
#include "compute/expr.h"

namespace kiln {
namespace cuda_c {

// f16 and bf16: stored in 16 bits (kiln_half / kiln_bfloat16 bit patterns
// in global and shared memory), computed in f32. Registers (local arrays,
// lets, expressions) hold f32, so a reduction over f16 data accumulates in
// f32, as the interpreter computes it; only a store to memory rounds.
bool is_narrow_float(DType t);
// The type of a value in registers (user error for a type CUDA C lacks).
std::string c_type(DType t);
// The type of an element in global or shared memory.
std::string storage_type(DType t);
// The suffix of the prelude's conversions between f32 values and 16-bit
// storage: "bf16" or "f16".
std::string narrow_suffix(DType t);
// A C identifier for an IR name.
std::string sanitize(const std::string& name);
// A literal of `v` in `t`'s register type (f16/bf16 values rounded to the
// type first; NaN and infinities as bit patterns).
std::string float_literal(double v, DType t);
// The CUDA math function of `op` for float (f32) or double, "" for sigmoid
// (printed as an expression).
const char* math_name(MathOp op, bool f32);

}  // namespace cuda_c
}  // namespace kiln
