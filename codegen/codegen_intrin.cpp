// Hardware instruction calls (TensorIntrinCallNode) -> LLVM's x86
// intrinsics. Each instruction of compute/hw_instructions.h with the llvm
// backend. The broadcast dots (VNNI, BF16): the accumulator loaded as one
// vector and stored back, the broadcast operand loaded as one 32-bit word
// and splat, the other operand loaded as one 64-byte vector. The AMX tile
// products: two or four accumulator tiles (one or two row groups of up to
// 16 rows, by two 16-column tiles) loaded into tile registers (or zeroed,
// for a call that covers the whole reduction), one loop over the k steps
// loading a tile of a per row group and two of b per step, the
// accumulators stored back after it (LLVM configures the tiles from the
// shapes of its .internal intrinsics). The 32 x 32 instructions take their
// geometry from the operands, the tiles instructions from their scalars.
// The 16 x 16 word transposes and the interleaves of 2 or 4 rows into
// words: shuffles in registers (no LLVM intrinsic: generic shufflevectors).
// The calls' operands were matched against the instruction's entry
// (element types and extents) first, and the target must have the
// instruction's CPU feature.
#include <llvm/IR/IntrinsicsX86.h>

#include "base/error.h"
#include "codegen/llvm_codegen.h"
#include "compute/hw_instructions.h"

namespace kiln {

namespace {

llvm::Intrinsic::ID x86_intrinsic(const std::string& name) {
  if (name == "x86.vpdpbusd.512") return llvm::Intrinsic::x86_avx512_vpdpbusd_512;
  if (name == "x86.vdpbf16ps.512") return llvm::Intrinsic::x86_avx512bf16_dpbf16ps_512;
  if (name.rfind("x86.amx.dpbusd.", 0) == 0) return llvm::Intrinsic::x86_tdpbusd_internal;
  if (name.rfind("x86.amx.dpbf16ps.", 0) == 0) return llvm::Intrinsic::x86_tdpbf16ps_internal;
  return llvm::Intrinsic::not_intrinsic;
}

}  // namespace

void CodeGenLLVM::emit_tensor_intrin(const TensorIntrinCallNode* op) {
  const std::string problem = hw_call_problem(*op);
  user_check(problem.empty()) << "a tensor intrinsic's lowering calls an instruction wrongly: " << problem;
  const HwInstruction& h = find_hw_instruction(op->intrin);
  const bool transpose = h.name.rfind("x86.transpose.", 0) == 0;
  const bool interleave = h.name.rfind("x86.interleave.", 0) == 0;
  const llvm::Intrinsic::ID id = x86_intrinsic(h.name);
  user_check(h.backend == "llvm" && (transpose || interleave || id != llvm::Intrinsic::not_intrinsic))
      << h.name << " is a " << h.backend << " instruction; the llvm backend cannot emit it";
  user_check(target_.has_feature(h.feature))
      << h.name << " needs the CPU feature '" << h.feature << "', which target '" << target_.str()
      << "' does not have (name a CPU that has it, or add -mattr=+" << h.feature << ")";

  if (transpose) return emit_transpose_16x16(op);
  if (interleave) return emit_interleave_16(op);
  if (h.name.rfind("x86.amx.", 0) == 0) {
    const bool from_zero = h.name.size() > 4 && h.name.compare(h.name.size() - 4, 4, ".set") == 0;
    return emit_amx_tile_product(op, id, amx_tiles_of(op, h.steps_of(*op)), from_zero);
  }

  // Both instructions: acc (16 x 32-bit lanes), a (one 32-bit word, splat),
  // b (64 bytes), as the intrinsic's declared parameter types.
  llvm::Function* f = llvm::Intrinsic::getDeclaration(module_.get(), id);
  llvm::FunctionType* ft = f->getFunctionType();
  internal_assert(ft->getNumParams() == 3) << h.name << ": LLVM's declaration has " << ft->getNumParams() << " parameters";
  auto pointer_to = [&](const TensorIntrinCallNode::Operand& o) {
    return element_pointer(o.buffer, emit(o.offset), o.offset.dtype());
  };
  auto align_of = [&](const TensorIntrinCallNode::Operand& o) {
    return llvm::Align(alignment_of(o.offset, o.buffer->pointee));
  };
  const auto& acc = op->operands[0];
  const auto& a = op->operands[1];
  const auto& b = op->operands[2];

  llvm::Type* acc_ty = ft->getParamType(0);
  llvm::Value* acc_ptr = builder_.CreateBitCast(pointer_to(acc), acc_ty->getPointerTo());
  llvm::Value* acc_v = builder_.CreateAlignedLoad(acc_ty, acc_ptr, align_of(acc));

  llvm::Type* a_ty = ft->getParamType(1);
  auto* a_vec = llvm::cast<llvm::FixedVectorType>(a_ty);
  llvm::Type* word = builder_.getInt32Ty();
  llvm::Value* a_ptr = builder_.CreateBitCast(pointer_to(a), word->getPointerTo());
  llvm::Value* a_word = builder_.CreateAlignedLoad(word, a_ptr, align_of(a));
  llvm::Value* a_splat = builder_.CreateVectorSplat(16, a_word);
  llvm::Value* a_v = builder_.CreateBitCast(a_splat, a_vec);

  llvm::Type* b_ty = ft->getParamType(2);
  llvm::Value* b_ptr = builder_.CreateBitCast(pointer_to(b), b_ty->getPointerTo());
  llvm::Value* b_v = builder_.CreateAlignedLoad(b_ty, b_ptr, align_of(b));

  llvm::Value* r = builder_.CreateCall(f, {acc_v, a_v, b_v});
  builder_.CreateAlignedStore(r, acc_ptr, align_of(acc));
}

// A row's alignment: the first element's, unless the row stride (when
// constant) lowers it; the element size otherwise.
llvm::Align CodeGenLLVM::operand_row_align(const TensorIntrinCallNode::Operand& o) {
  const unsigned elem_bytes = static_cast<unsigned>(o.buffer->pointee.bytes());
  int64_t stride = 0;
  if (!as_const_int(o.stride, &stride)) return llvm::Align(elem_bytes);
  unsigned a = alignment_of(o.offset, o.buffer->pointee);
  while (a > elem_bytes && (stride * elem_bytes) % a != 0) a /= 2;
  return llvm::Align(a);
}

llvm::Value* CodeGenLLVM::operand_row(const TensorIntrinCallNode::Operand& o, int r, llvm::Type* row_ty) {
  llvm::Value* first = element_pointer(o.buffer, emit(o.offset), o.offset.dtype());
  llvm::Value* stride = int_to_i64(emit(o.stride), o.stride.dtype());
  llvm::Value* at = builder_.CreateMul(stride, llvm::ConstantInt::get(builder_.getInt64Ty(), r));
  llvm::Value* p = builder_.CreateInBoundsGEP(memory_type(o.buffer->pointee), first, at);
  return builder_.CreateBitCast(p, row_ty->getPointerTo());
}

// Rows r and r + b (r & b == 0) exchange their b-word blocks at stage b
// (8, 4, 2, 1): row r keeps its blocks at even block positions and takes
// row r+b's even blocks into the odd ones; row r+b takes row r's odd blocks
// into the even positions and keeps its own odd ones. After the four stages
// row i holds the original column i. Each exchange is one two-source shuffle
// that LLVM lowers to an AVX-512 shuffle (vshufi64x2, vpunpck*, vpermt2d).
void CodeGenLLVM::emit_transpose_16x16(const TensorIntrinCallNode* op) {
  const auto& dst = op->operands[0];
  const auto& src = op->operands[1];
  auto* row_ty = llvm::FixedVectorType::get(builder_.getInt32Ty(), 16);
  const llvm::Align src_align = operand_row_align(src), dst_align = operand_row_align(dst);
  llvm::Value* rows[16];
  for (int r = 0; r < 16; ++r) rows[r] = builder_.CreateAlignedLoad(row_ty, operand_row(src, r, row_ty), src_align);
  for (int b = 8; b >= 1; b /= 2) {
    std::vector<int> keep(16), take(16);  // indices into (row r, row r+b): 0-15 and 16-31
    for (int c = 0; c < 16; ++c) {
      keep[static_cast<size_t>(c)] = (c & b) == 0 ? c : 16 + c - b;
      take[static_cast<size_t>(c)] = (c & b) == 0 ? c + b : 16 + c;
    }
    for (int r = 0; r < 16; ++r) {
      if (r & b) continue;
      llvm::Value* a = rows[r];
      llvm::Value* p = rows[r + b];
      rows[r] = builder_.CreateShuffleVector(a, p, keep);
      rows[r + b] = builder_.CreateShuffleVector(a, p, take);
    }
  }
  for (int r = 0; r < 16; ++r) builder_.CreateAlignedStore(rows[r], operand_row(dst, r, row_ty), dst_align);
}

// The g rows (2 or 4) of 16 elements, concatenated pairwise, then one
// two-source shuffle that takes element j of row e to position j * g + e.
void CodeGenLLVM::emit_interleave_16(const TensorIntrinCallNode* op) {
  const auto& dst = op->operands[0];
  const auto& src = op->operands[1];
  const int bytes = dst.buffer->pointee.bytes();
  const int g = 4 / bytes;
  llvm::Type* elem = builder_.getIntNTy(static_cast<unsigned>(8 * bytes));
  auto* row_ty = llvm::FixedVectorType::get(elem, 16);
  const llvm::Align src_align = operand_row_align(src);
  std::vector<llvm::Value*> rows;
  for (int e = 0; e < g; ++e)
    rows.push_back(builder_.CreateAlignedLoad(row_ty, operand_row(src, e, row_ty), src_align));
  // Halves of 32 elements: rows (0, 1) and, for g = 4, rows (2, 3).
  std::vector<int> concat(32);
  for (int i = 0; i < 32; ++i) concat[static_cast<size_t>(i)] = i;
  llvm::Value* lo = builder_.CreateShuffleVector(rows[0], rows[1], concat);
  std::vector<int> mask(static_cast<size_t>(16 * g));
  for (int j = 0; j < 16; ++j)
    for (int e = 0; e < g; ++e) mask[static_cast<size_t>(j * g + e)] = (e / 2) * 32 + (e % 2) * 16 + j;
  llvm::Value* words =
      g == 2 ? builder_.CreateShuffleVector(lo, mask)
             : builder_.CreateShuffleVector(lo, builder_.CreateShuffleVector(rows[2], rows[3], concat), mask);
  auto* block_ty = llvm::FixedVectorType::get(elem, static_cast<unsigned>(16 * g));
  llvm::Value* to = builder_.CreateBitCast(element_pointer(dst.buffer, emit(dst.offset), dst.offset.dtype()),
                                           block_ty->getPointerTo());
  builder_.CreateAlignedStore(words, to, llvm::Align(alignment_of(dst.offset, dst.buffer->pointee)));
}

// The geometry of an AMX call. The 32 x 32 instructions: two groups of 16
// rows, `steps` steps of 64 bytes of a's rows and 16 rows of 128 bytes of
// b (dense), acc's and a's rows their operands' strides apart. The tiles
// instructions: all from the call's scalars (hw_instructions.h).
CodeGenLLVM::AmxTiles CodeGenLLVM::amx_tiles_of(const TensorIntrinCallNode* op, int64_t steps) {
  llvm::Type* i64 = builder_.getInt64Ty();
  auto bytes_of = [&](const Expr& elems, int operand) {
    llvm::Value* v = int_to_i64(emit(elems), elems.dtype());
    return builder_.CreateMul(v, llvm::ConstantInt::get(i64, op->operands[operand].buffer->pointee.bytes()));
  };
  auto constant = [&](int64_t v) { return llvm::ConstantInt::get(i64, v); };
  AmxTiles t{};
  if (op->scalars.empty()) {
    t.rows[0] = t.rows[1] = 16;
    t.steps[0] = steps;
    t.steps[1] = t.steps[2] = 1;
    t.acc_row = bytes_of(op->operands[0].stride, 0);
    t.acc_group = builder_.CreateMul(t.acc_row, constant(16));
    t.a_row = bytes_of(op->operands[1].stride, 1);
    t.a_group = builder_.CreateMul(t.a_row, constant(16));
    t.b_row = constant(128);
    t.a_step[0] = constant(64);
    t.b_step[0] = constant(16 * 128);
    t.a_step[1] = t.a_step[2] = t.b_step[1] = t.b_step[2] = constant(0);
    t.k_bytes = 64;
    return t;
  }
  auto count = [&](int k) { return *as_const_int(op->scalars[k]); };  // checked by hw_call_problem
  t.rows[0] = count(0);
  t.rows[1] = count(1);
  for (int k = 0; k < 3; ++k) t.steps[k] = count(2 + k);
  llvm::Value** strides[] = {&t.acc_row,   &t.acc_group, &t.a_row,     &t.a_group,   &t.a_step[0], &t.a_step[1],
                             &t.a_step[2], &t.b_row,     &t.b_step[0], &t.b_step[1], &t.b_step[2]};
  const int operand_of[] = {0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2};
  for (int k = 0; k < 11; ++k) *strides[k] = bytes_of(op->scalars[5 + k], operand_of[k]);
  t.k_bytes = count(16) * op->operands[1].buffer->pointee.bytes();
  return t;
}

// acc (row groups of t.rows[g] rows of 32 4-byte elements) (+)= a (per
// step, each group's rows of 64 bytes) . b (per step 16 rows of 128 bytes:
// two 16-column tiles side by side), over steps1 x steps2 x steps3 k steps; the
// accumulators stay in tile registers across the steps. from_zero: acc =,
// the accumulator tiles zeroed rather than loaded.
void CodeGenLLVM::emit_amx_tile_product(const TensorIntrinCallNode* op, llvm::Intrinsic::ID product, const AmxTiles& t,
                                        bool from_zero) {
  const auto& acc = op->operands[0];
  const auto& a = op->operands[1];
  const auto& b = op->operands[2];
  llvm::Type* i8p = builder_.getInt8PtrTy();
  llvm::Type* i64 = builder_.getInt64Ty();
  auto byte_pointer = [&](const TensorIntrinCallNode::Operand& o) {
    return builder_.CreateBitCast(element_pointer(o.buffer, emit(o.offset), o.offset.dtype()), i8p);
  };
  auto offset = [&](llvm::Value* base, llvm::Value* by) { return builder_.CreateInBoundsGEP(builder_.getInt8Ty(), base, by); };
  auto constant = [&](int64_t v) { return llvm::ConstantInt::get(i64, v); };
  const int groups = t.rows[1] > 0 ? 2 : 1;
  llvm::Value* rows[2] = {builder_.getInt16(static_cast<uint16_t>(t.rows[0])),
                          builder_.getInt16(static_cast<uint16_t>(t.rows[1]))};
  // acc's and b's tile rows are 64 bytes (16 columns of 4 bytes); a's rows
  // are k_bytes (a full 64 or fewer), and b has k_bytes / 4 rows.
  llvm::Value* b_rows = builder_.getInt16(static_cast<uint16_t>(t.k_bytes / 4));
  llvm::Value* row_bytes = builder_.getInt16(64);
  llvm::Value* a_bytes = builder_.getInt16(static_cast<uint16_t>(t.k_bytes));
  llvm::Function* load = llvm::Intrinsic::getDeclaration(module_.get(), llvm::Intrinsic::x86_tileloadd64_internal);
  llvm::Function* store = llvm::Intrinsic::getDeclaration(module_.get(), llvm::Intrinsic::x86_tilestored64_internal);
  llvm::Function* dot = llvm::Intrinsic::getDeclaration(module_.get(), product);
  llvm::Function* zero = llvm::Intrinsic::getDeclaration(module_.get(), llvm::Intrinsic::x86_tilezero_internal);

  llvm::Value* acc_base = byte_pointer(acc);
  llvm::Value* a_base = byte_pointer(a);
  llvm::Value* b_base = byte_pointer(b);
  // The accumulator tiles (g, j): row group g, columns 16j.. (64 bytes each).
  llvm::Value* acc_ptr[2][2];
  llvm::Value* tile[2][2];
  for (int g = 0; g < groups; ++g)
    for (int j = 0; j < 2; ++j) {
      llvm::Value* at = builder_.CreateAdd(builder_.CreateMul(t.acc_group, constant(g)), constant(64 * j));
      acc_ptr[g][j] = offset(acc_base, at);
      tile[g][j] = from_zero ? builder_.CreateCall(zero, {rows[g], row_bytes})
                             : builder_.CreateCall(load, {rows[g], row_bytes, acc_ptr[g][j], t.acc_row});
    }

  // One loop over steps1 x steps2 x steps3 steps (step = (t1 * steps2 + t2) * steps3 + t3).
  llvm::BasicBlock* preheader = builder_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "amx.step", func_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "amx.done", func_);
  builder_.CreateBr(header);
  builder_.SetInsertPoint(header);
  llvm::PHINode* step = builder_.CreatePHI(i64, 2, "amx.k");
  step->addIncoming(constant(0), preheader);
  llvm::PHINode* phi[2][2];
  for (int g = 0; g < groups; ++g)
    for (int j = 0; j < 2; ++j) {
      phi[g][j] = builder_.CreatePHI(tile[g][j]->getType(), 2);
      phi[g][j]->addIncoming(tile[g][j], preheader);
    }
  llvm::Value* a_at = constant(0);
  llvm::Value* b_at = constant(0);
  llvm::Value* rest = step;
  for (int k = 2; k >= 0; --k) {
    if (t.steps[k] == 1) continue;
    llvm::Value* tk = k == 0 ? rest : builder_.CreateURem(rest, constant(t.steps[k]));
    if (k > 0) rest = builder_.CreateUDiv(rest, constant(t.steps[k]));
    a_at = builder_.CreateAdd(a_at, builder_.CreateMul(tk, t.a_step[k]));
    b_at = builder_.CreateAdd(b_at, builder_.CreateMul(tk, t.b_step[k]));
  }
  // The operand tiles are loaded just before their first product, in the
  // order the products use them, so that the tile unit overlaps each load
  // with the product before it.
  llvm::Value* a1_at = builder_.CreateAdd(a_at, t.a_group);
  llvm::Value* b1_at = builder_.CreateAdd(b_at, constant(64));
  llvm::Value* a_tile[2] = {nullptr, nullptr};
  llvm::Value* b_tile[2] = {nullptr, nullptr};
  llvm::Value* next_tile[2][2];
  auto multiply = [&](int g, int j) {
    next_tile[g][j] = builder_.CreateCall(dot, {rows[g], row_bytes, a_bytes, phi[g][j], a_tile[g], b_tile[j]});
  };
  a_tile[0] = builder_.CreateCall(load, {rows[0], a_bytes, offset(a_base, a_at), t.a_row});
  b_tile[0] = builder_.CreateCall(load, {b_rows, row_bytes, offset(b_base, b_at), t.b_row});
  multiply(0, 0);
  b_tile[1] = builder_.CreateCall(load, {b_rows, row_bytes, offset(b_base, b1_at), t.b_row});
  multiply(0, 1);
  if (groups == 2) {
    a_tile[1] = builder_.CreateCall(load, {rows[1], a_bytes, offset(a_base, a1_at), t.a_row});
    multiply(1, 0);
    multiply(1, 1);
  }
  llvm::Value* next = builder_.CreateAdd(step, constant(1));
  llvm::BasicBlock* latch = builder_.GetInsertBlock();
  step->addIncoming(next, latch);
  for (int g = 0; g < groups; ++g)
    for (int j = 0; j < 2; ++j) phi[g][j]->addIncoming(next_tile[g][j], latch);
  builder_.CreateCondBr(builder_.CreateICmpSLT(next, constant(t.steps[0] * t.steps[1] * t.steps[2])), header, exit);

  builder_.SetInsertPoint(exit);
  for (int g = 0; g < groups; ++g)
    for (int j = 0; j < 2; ++j)
      builder_.CreateCall(store, {rows[g], row_bytes, acc_ptr[g][j], t.acc_row, next_tile[g][j]});
}

}  // namespace kiln
