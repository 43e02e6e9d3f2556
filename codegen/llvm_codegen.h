// Lowered loop IR -> LLVM IR (internal header: exposes LLVM types; the public
// entry points are in codegen/build.h).
//
// Per LoweredFunc NAME the module gets
//   internal i32 @NAME_compute(T0* noalias align 64 %A, ...)   the kernel body
//   i32 @NAME(i8** %args)                                      packed entry (runtime/c_api.h)
// and once per module the writable slot `i8* @__kiln_parallel_for` through
// which parallel loops reach the runtime's thread pool.
//
// Representation choices (the rest of codegen relies on them):
// - bool is i1 in registers and i8 in memory.
// - bf16 is i16 (its bit pattern) in registers and memory. Arithmetic converts
//   to f32, computes there and rounds back to nearest even after every
//   operation; LLVM 14's x86 backend cannot select bfloat arithmetic, and f32
//   has enough precision that the double rounding is exact for + - * / sqrt.
// - f16 is LLVM `half` (the backend promotes to f32 where it must).
// - Float operations carry only the `contract` fast-math flag (so a*b+c
//   becomes an FMA); everything else stays IEEE. Float min/max are
//   select(a < b, a, b), which is what x86 minps/maxps compute. NE on floats is
//   unordered (NaN != NaN, as in C), the other comparisons are ordered.
// - Signed i32/i64 add/sub/mul are `nsw` (overflow is undefined, as for C int,
//   which lets LLVM widen index arithmetic); 8- and 16-bit integers wrap.
// - libm calls (tanh, erf, and what the intrinsics lower to) are assumed not
//   to set errno.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "codegen/build.h"
#include "codegen/target.h"
#include "compute/analyzer.h"
#include "compute/function.h"

namespace kiln {

class CodeGenLLVM {
 public:
  CodeGenLLVM(llvm::LLVMContext& ctx, const Target& target, llvm::TargetMachine& tm);

  // Translates the functions into one verified, unoptimized module.
  std::unique_ptr<llvm::Module> compile(const std::vector<LoweredFunc>& funcs);

 private:
  // ---- llvm_codegen.cpp: functions, entry points, shared helpers
  void add_function(const LoweredFunc& f);
  llvm::AllocaInst* create_entry_alloca(llvm::Type* type, const std::string& name);
  // Returns rc from the current function when it is non-zero (frees live heap buffers first).
  void emit_return_on_error(llvm::Value* rc);
  llvm::Value* lookup(const VarNode* v) const;
  void bind(const VarNode* v, llvm::Value* value);
  void unbind(const VarNode* v, llvm::Value* previous);
  DType buffer_elem_type(const Var& buffer) const;
  // A pure libm function (no errno, no memory access), or any other C function.
  llvm::Function* declare_libm(const std::string& name, llvm::Type* ret, std::vector<llvm::Type*> args);
  llvm::Function* declare_extern(const std::string& name, llvm::Type* ret, std::vector<llvm::Type*> args);
  struct HeapBlock {
    llvm::Value* ptr;
    llvm::Value* bytes;
  };
  // A heap block through the module's workspace slots (runtime/c_api.h), or
  // aligned_alloc / free while the slots are null. `bytes`: an i64 multiple of 64.
  llvm::Value* emit_workspace_alloc(llvm::Value* bytes, const std::string& name);
  // Calls the function a module slot points at, or `fallback`'s code while
  // the slot is null; the call's result (nullptr for void).
  llvm::Value* call_slot_or(llvm::GlobalVariable* slot, llvm::FunctionType* type, const std::vector<llvm::Value*>& args,
                            const std::function<llvm::Value*()>& fallback, const std::string& name);
  void emit_workspace_free(const HeapBlock& block);

  // ---- llvm_types.cpp: types, constants and conversions
  llvm::Type* llvm_type(DType t);    // register type
  llvm::Type* memory_type(DType t);  // in-memory type (bool -> i8)
  llvm::Value* to_memory(llvm::Value* v, DType t);
  llvm::Value* from_memory(llvm::Value* v, DType t);
  llvm::Value* bf16_to_f32(llvm::Value* v);
  llvm::Value* f32_to_bf16(llvm::Value* v);
  llvm::Value* cast_value(llvm::Value* v, DType from, DType to);
  llvm::Value* int_to_i64(llvm::Value* v, DType t);
  llvm::Value* make_int(llvm::Type* t, int64_t v);

  // ---- codegen_expr.cpp
  llvm::Value* emit(const Expr& e);
  llvm::Value* emit_binary(const BinaryNode* op);
  llvm::Value* emit_float_arith(NodeKind k, llvm::Value* a, llvm::Value* b);
  llvm::Value* emit_int_arith(NodeKind k, DType t, const Expr& lhs, const Expr& rhs, llvm::Value* a, llvm::Value* b);
  llvm::Value* emit_floor_div_mod(bool is_div, const Expr& rhs, llvm::Value* a, llvm::Value* b);
  llvm::Value* emit_compare(NodeKind k, DType t, llvm::Value* a, llvm::Value* b);
  llvm::Value* emit_call(const CallNode* op);
  llvm::Value* emit_math(MathOp op, DType t, const std::vector<llvm::Value*>& args);
  llvm::Value* emit_libm_per_lane(const std::string& name, DType t, llvm::Value* x);
  llvm::Value* emit_erf(DType t, llvm::Value* x);
  llvm::Value* emit_exp(DType t, llvm::Value* x);
  llvm::Value* emit_ramp(const RampNode* op);
  llvm::Value* emit_let(const LetNode* op);

  // ---- codegen_memory.cpp: loads, stores, alignment
  llvm::Value* emit_load(const LoadNode* op);
  void emit_store(const StoreNode* op);
  void emit_prefetch(const PrefetchNode* op);
  // A vector access at a ramp of small constant stride s, as one masked
  // access of lanes*s contiguous elements and a shuffle (nullptr/false where
  // the target has no masked accesses of that element size).
  llvm::Value* emit_strided_load(const LoadNode* op, llvm::Value* mask);
  bool emit_strided_store(const StoreNode* op, llvm::Value* value, llvm::Value* mask);
  llvm::Value* spread_mask(llvm::Value* mask, int lanes, int64_t s);
  // A hardware instruction call (compute/hw_instructions.h): the x86 ones,
  // for targets with their feature (codegen_intrin.cpp).
  void emit_tensor_intrin(const TensorIntrinCallNode* op);
  // An AMX tile product: one or two row groups of a (rows[g] rows each)
  // against two 16-column tiles of b, over steps1 x steps2 x steps3 k steps, the
  // strides in bytes; three nested step loops (steps[2] innermost).
  struct AmxTiles {
    int64_t rows[2];
    int64_t steps[3];
    int64_t k_bytes;  // a's bytes per tile row and product; b's tile rows are k_bytes / 4
    llvm::Value *acc_row, *acc_group, *a_row, *a_group, *b_row;
    llvm::Value *a_step[3], *b_step[3];
  };
  AmxTiles amx_tiles_of(const TensorIntrinCallNode* op, int64_t steps);
  // The 16 x 16 word transpose (x86.transpose.16x16.*): sixteen row loads,
  // four stages of two-source shuffles, sixteen row stores.
  void emit_transpose_16x16(const TensorIntrinCallNode* op);
  // The interleave of g rows of 16 elements into 16 words (x86.interleave.16.*).
  void emit_interleave_16(const TensorIntrinCallNode* op);
  // The row alignment of an instruction operand of rows `stride` elements
  // apart, and a pointer to its row r as `row_ty`.
  llvm::Align operand_row_align(const TensorIntrinCallNode::Operand& o);
  llvm::Value* operand_row(const TensorIntrinCallNode::Operand& o, int r, llvm::Type* row_ty);
  void emit_amx_tile_product(const TensorIntrinCallNode* op, llvm::Intrinsic::ID product, const AmxTiles& t,
                             bool from_zero);
  // Pointer to element `index` (scalar) of buffer, or vector of pointers for a vector index.
  llvm::Value* element_pointer(const Var& buffer, llvm::Value* index, DType index_type);
  // Alignment in bytes of element `index` of a 64-byte-aligned buffer.
  unsigned alignment_of(const Expr& index, DType elem);
  // Whether `e` is data: it reads memory (a load, or a let variable bound to
  // data). Signed integer arithmetic on anything else (loop variables,
  // constants: index computations) cannot overflow and carries nsw, which
  // lets LLVM widen and strength-reduce addresses; arithmetic on data wraps
  // (compute/expr.h).
  bool is_data(const Expr& e) const;
  // select: a branch that may fault (may_fault) is evaluated only when
  // chosen (compute/expr.h).
  llvm::Value* emit_select(const SelectNode* op);
  // Whether evaluating `e` may fault: a load not provably inside its buffer,
  // an integer division whose divisor may be zero.
  bool may_fault(const Expr& e);
  llvm::Value* emit_scalar_predicated(const Expr& predicate, const std::function<llvm::Value*()>& body,
                                      llvm::Type* result_type);

  // ---- codegen_stmt.cpp
  void emit(const Stmt& s);
  void emit_for(const ForNode* op);
  void emit_serial_loop(const Var& var, llvm::Value* min, llvm::Value* extent, const Stmt& body, bool unroll);
  void emit_if(const IfThenElseNode* op);
  void emit_let_stmt(const LetStmtNode* op);
  void emit_allocate(const AllocateNode* op);

  // ---- codegen_parallel.cpp
  void emit_parallel_for(const ForNode* op);

  llvm::LLVMContext& ctx_;
  Target target_;
  // Whether the target has masked vector loads and stores of 1- and 2-byte
  // (AVX512-BW) and of 4- and 8-byte elements (AVX-512F).
  bool masked_bytes_ = false;
  bool masked_words_ = false;
  llvm::TargetMachine& tm_;
  std::unique_ptr<llvm::Module> module_;
  llvm::IRBuilder<> builder_;
  llvm::GlobalVariable* parallel_slot_ = nullptr;
  llvm::GlobalVariable* workspace_alloc_slot_ = nullptr;
  llvm::GlobalVariable* workspace_free_slot_ = nullptr;

  // State of the function being emitted (saved and restored around outlining).
  llvm::Function* func_ = nullptr;
  std::string func_name_;                  // the LoweredFunc's name, for naming outlined functions
  std::vector<HeapBlock> heap_allocs_;  // live workspace blocks, freed on early return

  std::unordered_map<const VarNode*, llvm::Value*> values_;
  std::unordered_map<const VarNode*, DType> buffer_types_;  // element type of each buffer variable
  std::unordered_map<const VarNode*, int64_t> buffer_elems_;  // elements of each buffer of known size
  // Let-bound integer vars (for the alignment of accesses) and loop ranges
  // (for proving that a select's branch cannot fault).
  Analyzer analyzer_;
  int outlined_count_ = 0;
  std::unordered_set<const VarNode*> data_vars_;  // let variables bound to data (is_data)
  // Buffers whose stores stream (inside an AttrStmt stream_stores), with
  // how many such regions enclose the code being emitted.
  std::unordered_map<const VarNode*, int> streamed_buffers_;
  bool streams(const VarNode* buffer) const;
  // Orders the streaming stores before everything after (x86: sfence).
  void emit_store_fence();
};

// Lowers, verifies and optimizes (O3 for tm's target) the functions into a
// module of ctx. Names must be unique C identifiers (user_error otherwise).
std::unique_ptr<llvm::Module> build_optimized_module(const std::vector<LoweredFunc>& funcs, const Target& target,
                                                     llvm::LLVMContext& ctx, llvm::TargetMachine& tm);

}  // namespace kiln
