// IR printer: readable, stable pseudo-code for expressions, statements and
// lowered functions. Golden tests compare against this text, so any change to
// the format below is a visible change.
//
// Expressions
//   binary ops       fully parenthesized, TVM style: (a + b), (a - b), (a*b),
//                    (a / b), (a % b) [C division/modulo], (a == b), (a != b),
//                    (a < b), (a <= b), (a > b), (a >= b), (a && b), (a || b), !a
//   floor ops        floordiv(a, b), floormod(a, b); min(a, b), max(a, b)
//   immediates       i32: 16, -3; other integers suffixed: 16i64, 3u8, 7i8;
//                    bool: true / false;
//                    f32: 1.5f, 0f; f64: 1.5, 2.0 (always has '.', 'e', inf or nan);
//                    f16: 1.5f16; bf16: 1.5bf16 (shortest text that round-trips);
//                    strings: "text"
//   vectors          ramp(base, stride, lanes), x16(v) (broadcast to 16 lanes)
//   cast             f32(x), i32x16(v) (the target type's name)
//   select / math    select(c, t, f), exp(x), pow(x, y)
//   tensor read      A[i, k]
//   load             A[idx], predicated: A[idx if pred]
//   reduction        sum(src, axis=[k: 0..16, l: 2..(n + 2)], where cond)
//                    (each axis prints min..min+extent, half-open)
//   let              (let x = value in body)
//
// Statements (two-space indentation)
//   for              for (i, 0, 16) { ... }, and likewise parallel / vectorized /
//                    unrolled, thread_binding(threadIdx.x) (i, 0, 16) { ... }
//   if               if (cond) { ... } else { ... }
//   store            A[idx] = value, predicated: A[idx if pred] = value
//   provide          C[i, j] = value
//   scope statements print one header line and their body at the SAME
//   indentation (no braces):
//     allocate C.local[f32 * 4 * 16] @local
//     realize C([0, 64], [0, 16]) @global      (per dimension [min, extent];
//                                                " align=[(f, o), ...]" when aligned)
//     let x = value
//     // attr [node] key = value               ("// attr key = value" with no node)
//   other            evaluate: the expression alone; barrier(shared);
//                    tensor_intrin NAME(C[off, stride=16], A[off, stride=32], scalar...)
//
// Lowered function
//   func NAME(A: f32[64, 32], C: f32[64, 16]) {
//     ...body...
//   }
//
// Variables print by name. Within one printed tree, variables are identified
// by object: the first distinct object with a name keeps it, each further
// distinct object with the same name is printed name_1, name_2, ... (skipping
// names already taken), in order of first appearance in the output.
#pragma once

#include <ostream>
#include <string>

#include "compute/dtype.h"
#include "compute/expr.h"
#include "compute/function.h"
#include "compute/stmt.h"

namespace kiln {

std::string to_string(const Expr& e);
std::string to_string(const Stmt& s);
std::string to_string(const LoweredFunc& f);

std::ostream& operator<<(std::ostream& os, const Expr& e);
std::ostream& operator<<(std::ostream& os, const Stmt& s);
std::ostream& operator<<(std::ostream& os, const DType& t);
std::ostream& operator<<(std::ostream& os, const LoweredFunc& f);

}  // namespace kiln
