// Tensor intrinsics (TVM's decl_tensor_intrin): a hardware instruction, or a
// hand-written microkernel, declared as
//   - what it computes: a tensor expression over placeholders of fixed
//     shape (the shapes, the dtypes and the reduction);
//   - how to emit it: lowerings of its body (the whole computation), its
//     reset (the output set to the reduction's identity) and its update
//     (the computation added onto the output), each a function of the flat
//     operands (IntrinBuffer) that returns IR;
//   - what it needs of its operands (IntrinRequirement): memory scope,
//     alignment of the first element, dense or unit-stride rows.
// `Stage::tensorize(axis, intrin)` (schedule/) replaces the loop nest below
// `axis` by the intrinsic after matching the two structurally; the
// lowerings run in storage_flatten, when the operands' buffers, offsets and
// strides are known. Built-in intrinsics are listed per target in
// kernels/tensor_intrinsics.h; the instructions their lowerings call are in
// compute/hw_instructions.h.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compute/stmt.h"
#include "compute/tensor.h"

namespace kiln {

// One operand of a tensorized call, as a lowering sees it (flat memory).
struct IntrinBuffer {
  Var data;                    // the buffer (a handle Var)
  DType dtype;                 // its element type
  MemScope scope = MemScope::kGlobal;
  Expr offset;                 // flat index of the operand's element [0, ..., 0]
  std::vector<Expr> strides;   // per dimension of the declared operand, in elements
  std::vector<int64_t> shape;  // the declared operand's shape
  // A buffer stored in tiles (Stage::storage_tile): per declared dimension,
  // the tile's extent and the stride from one tile to the next (`strides`
  // then step within a tile). Empty for other buffers.
  std::vector<int64_t> tile;
  std::vector<Expr> tile_steps;
  // A buffer stored 128-byte swizzled (Stage::storage_swizzle): the bytes
  // of a swizzled row (128) and the elements from one strip of rows to the
  // next; 0 and undefined for other buffers. `offset` is then the element's
  // place before the swizzle (a strip's rows one after another), which is
  // what the hardware's descriptors name (it applies the swizzle itself),
  // and `strides` step within a strip.
  int64_t swizzle_bytes = 0;
  Expr swizzle_strip;

  // The flat index of element idx: offset + sum(idx[d] * strides[d]).
  Expr index(const std::vector<Expr>& idx) const;
  // An instruction operand (hw_instructions.h): the elements from idx on,
  // `extent` of them, with the stride of dimension `stride_dim` as its row
  // stride (1 when stride_dim < 0).
  TensorIntrinCallNode::Operand at(const std::vector<Expr>& idx, int64_t extent, int stride_dim = -1) const;
  // Element idx as an expression (a scalar load).
  Expr load(const std::vector<Expr>& idx) const;
  // Element idx = value (a scalar store).
  Stmt store(const std::vector<Expr>& idx, Expr value) const;
};

// What a declared operand asks of the data a loop nest binds to it. A region
// that does not satisfy it is a user error when the schedule is lowered.
struct IntrinRequirement {
  std::optional<MemScope> scope;  // where it must live; any scope when empty
  int64_t offset_factor = 1;      // its first element's flat index is a multiple of this
  int64_t stride_factor = 1;      // so is every stride but a unit innermost one (row alignment)
  bool unit_inner = false;        // the innermost dimension has stride 1
  bool dense = false;             // the strides are the declared shape's row-major strides
  // So are the innermost `dense_inner` dimensions' (each row of them one
  // contiguous block; the outer strides are free).
  int dense_inner = 0;
  // A warp-scope operand that is a row of fragments of this shape, one after
  // another along its last dimension (the fragments' tiles are contiguous);
  // empty: the operand is one fragment.
  std::vector<int64_t> fragment;
  // The buffer is stored in tiles of core x core elements (Stage::storage_tile)
  // and the data starts at a tile's corner; 0: any layout.
  int64_t core = 0;
  // With core > 0: the buffer may instead be stored 128-byte swizzled
  // (Stage::storage_swizzle), the data starting at a 16-byte chunk.
  bool swizzle_ok = false;
};

struct TensorIntrinLowering {
  // out = the whole computation, the reduction starting from its identity.
  // May be empty when reset and update are given (the body is then reset
  // followed by update).
  std::function<Stmt(const std::vector<IntrinBuffer>& operands)> body;
  // out = the reduction's identity (the output operand only).
  std::function<Stmt(const IntrinBuffer& out)> reset;
  // out = out (+) the computation: one step of a reduction split into steps.
  std::function<Stmt(const std::vector<IntrinBuffer>& operands)> update;
};

enum class IntrinPhase : uint8_t { kBody, kReset, kUpdate };
const char* intrin_phase_name(IntrinPhase p);

struct TensorIntrinDecl {
  std::string name;
  Tensor output;               // what it computes: a compute op reading `inputs` only
  std::vector<Tensor> inputs;  // its placeholders, in operand order
  // Per operand: the inputs, then the output.
  std::vector<IntrinRequirement> requirements;
  TensorIntrinLowering lowering;
  bool is_reduction() const;
  // The operands' declared shapes (inputs, then the output).
  std::vector<int64_t> shape_of(size_t operand) const;
  // The IR of a phase: body falls back to reset + update.
  Stmt lower(IntrinPhase phase, const std::vector<IntrinBuffer>& operands) const;
};

// Declares an intrinsic. user_error when `output` is not a compute op, when
// `inputs` are not exactly the placeholders it reads, when a reduction axis
// does not run over a constant range from 0, when the requirements are not one per operand (empty: none), or
// when the lowerings cannot produce every phase (a reduction needs a body
// or reset + update, anything else a body).
TensorIntrin decl_tensor_intrin(std::string name, const Tensor& output, std::vector<Tensor> inputs,
                                TensorIntrinLowering lowering, std::vector<IntrinRequirement> requirements = {});

}  // namespace kiln
