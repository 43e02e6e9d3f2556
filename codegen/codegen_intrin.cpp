// Hardware instruction calls (TensorIntrinCallNode) -> LLVM's x86
// intrinsics. Each instruction of compute/hw_instructions.h with the llvm
// backend. The broadcast dots (VNNI, BF16): the accumulator loaded as one
// vector and stored back, the broadcast operand loaded as one 32-bit word
// and splat, the other operand loaded as one 64-byte vector. The AMX tile
// products: four 16 x 16 accumulator tiles loaded into tile registers (or
// zeroed, for a call that covers the whole reduction), a
// loop over the k steps loading two tiles of a and two of b per step, the
// accumulators stored back after it (LLVM configures the tiles from the
// shapes of its .internal intrinsics). The calls' operands were matched
// against the instruction's entry (element types and extents) first, and
// the target must have the instruction's CPU feature.
#include <llvm/IR/IntrinsicsX86.h>

#include "base/error.h"
#include "codegen/llvm_codegen.h"
#include "compute/hw_instructions.h"

namespace kiln {

namespace {

llvm::Intrinsic::ID x86_intrinsic(const std::string& name) {
  if (name == "x86.vpdpbusd.512") return llvm::Intrinsic::x86_avx512_vpdpbusd_512;
  if (name == "x86.vdpbf16ps.512") return llvm::Intrinsic::x86_avx512bf16_dpbf16ps_512;
  if (name == "x86.amx.dpbusd.32x32" || name == "x86.amx.dpbusd.32x32.set")
    return llvm::Intrinsic::x86_tdpbusd_internal;
  if (name == "x86.amx.dpbf16ps.32x32" || name == "x86.amx.dpbf16ps.32x32.set")
    return llvm::Intrinsic::x86_tdpbf16ps_internal;
  return llvm::Intrinsic::not_intrinsic;
}

}  // namespace

void CodeGenLLVM::emit_tensor_intrin(const TensorIntrinCallNode* op) {
  const std::string problem = hw_call_problem(*op);
  user_check(problem.empty()) << "a tensor intrinsic's lowering calls an instruction wrongly: " << problem;
  const HwInstruction& h = find_hw_instruction(op->intrin);
  const llvm::Intrinsic::ID id = x86_intrinsic(h.name);
  user_check(h.backend == "llvm" && id != llvm::Intrinsic::not_intrinsic)
      << h.name << " is a " << h.backend << " instruction; the llvm backend cannot emit it";
  user_check(target_.has_feature(h.feature))
      << h.name << " needs the CPU feature '" << h.feature << "', which target '" << target_.str()
      << "' does not have (name a CPU that has it, or add -mattr=+" << h.feature << ")";

  if (h.name.rfind("x86.amx.", 0) == 0) {
    const bool from_zero = h.name.size() > 4 && h.name.compare(h.name.size() - 4, 4, ".set") == 0;
    return emit_amx_tile_product(op, id, h.steps_of(*op), from_zero);
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

// acc (32 x 32 of 4 bytes, rows `stride` elements apart) += a (32 rows of
// 64 bytes per step, its stride apart) . b (per step 16 rows of 128 bytes:
// two 16-column tiles side by side), `steps` k steps; from_zero: acc =, the
// accumulator tiles zeroed rather than loaded.
void CodeGenLLVM::emit_amx_tile_product(const TensorIntrinCallNode* op, llvm::Intrinsic::ID product, int64_t steps,
                                        bool from_zero) {
  const auto& acc = op->operands[0];
  const auto& a = op->operands[1];
  const auto& b = op->operands[2];
  llvm::Type* i8p = builder_.getInt8PtrTy();
  llvm::Type* i64 = builder_.getInt64Ty();
  auto byte_pointer = [&](const TensorIntrinCallNode::Operand& o) {
    return builder_.CreateBitCast(element_pointer(o.buffer, emit(o.offset), o.offset.dtype()), i8p);
  };
  auto bytes = [&](const TensorIntrinCallNode::Operand& o) {
    llvm::Value* elems = int_to_i64(emit(o.stride), o.stride.dtype());
    return builder_.CreateMul(elems, llvm::ConstantInt::get(i64, o.buffer->pointee.bytes()));
  };
  auto offset = [&](llvm::Value* base, llvm::Value* by) { return builder_.CreateInBoundsGEP(builder_.getInt8Ty(), base, by); };
  llvm::Value* rows = builder_.getInt16(16);
  llvm::Value* row_bytes = builder_.getInt16(64);
  llvm::Function* load = llvm::Intrinsic::getDeclaration(module_.get(), llvm::Intrinsic::x86_tileloadd64_internal);
  llvm::Function* store = llvm::Intrinsic::getDeclaration(module_.get(), llvm::Intrinsic::x86_tilestored64_internal);
  llvm::Function* dot = llvm::Intrinsic::getDeclaration(module_.get(), product);
  llvm::Function* zero = llvm::Intrinsic::getDeclaration(module_.get(), llvm::Intrinsic::x86_tilezero_internal);

  llvm::Value* acc_base = byte_pointer(acc);
  llvm::Value* acc_stride = bytes(acc);
  llvm::Value* a_base = byte_pointer(a);
  llvm::Value* a_stride = bytes(a);
  llvm::Value* b_base = byte_pointer(b);
  // The accumulator tiles (i, j): rows 16i.., columns 16j.. (64 bytes each).
  llvm::Value* acc_ptr[2][2];
  llvm::Value* tile[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      llvm::Value* at = builder_.CreateAdd(builder_.CreateMul(acc_stride, llvm::ConstantInt::get(i64, 16 * i)),
                                           llvm::ConstantInt::get(i64, 64 * j));
      acc_ptr[i][j] = offset(acc_base, at);
      tile[i][j] = from_zero ? builder_.CreateCall(zero, {rows, row_bytes})
                             : builder_.CreateCall(load, {rows, row_bytes, acc_ptr[i][j], acc_stride});
    }

  llvm::BasicBlock* preheader = builder_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "amx.step", func_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "amx.done", func_);
  builder_.CreateBr(header);
  builder_.SetInsertPoint(header);
  llvm::PHINode* step = builder_.CreatePHI(i64, 2, "amx.k");
  step->addIncoming(llvm::ConstantInt::get(i64, 0), preheader);
  llvm::PHINode* phi[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      phi[i][j] = builder_.CreatePHI(tile[i][j]->getType(), 2);
      phi[i][j]->addIncoming(tile[i][j], preheader);
    }
  // Per step: a's 64 bytes of each row, b's 16 rows of 128 bytes.
  llvm::Value* a_at = builder_.CreateMul(step, llvm::ConstantInt::get(i64, 64));
  llvm::Value* b_at = builder_.CreateMul(step, llvm::ConstantInt::get(i64, 16 * 128));
  // The operand tiles are loaded just before their first product, in the
  // order the products use them, so that the tile unit overlaps each load
  // with the product before it.
  llvm::Value* a1_at = builder_.CreateAdd(a_at, builder_.CreateMul(a_stride, llvm::ConstantInt::get(i64, 16)));
  llvm::Value* b1_at = builder_.CreateAdd(b_at, llvm::ConstantInt::get(i64, 64));
  llvm::Value* b_stride = llvm::ConstantInt::get(i64, 128);
  auto load_tile = [&](llvm::Value* base, llvm::Value* at, llvm::Value* stride) {
    return builder_.CreateCall(load, {rows, row_bytes, offset(base, at), stride});
  };
  llvm::Value* a_tile[2] = {nullptr, nullptr};
  llvm::Value* b_tile[2] = {nullptr, nullptr};
  llvm::Value* next_tile[2][2];
  auto multiply = [&](int i, int j) {
    next_tile[i][j] = builder_.CreateCall(dot, {rows, row_bytes, row_bytes, phi[i][j], a_tile[i], b_tile[j]});
  };
  a_tile[0] = load_tile(a_base, a_at, a_stride);
  b_tile[0] = load_tile(b_base, b_at, b_stride);
  multiply(0, 0);
  b_tile[1] = load_tile(b_base, b1_at, b_stride);
  multiply(0, 1);
  a_tile[1] = load_tile(a_base, a1_at, a_stride);
  multiply(1, 0);
  multiply(1, 1);
  llvm::Value* next = builder_.CreateAdd(step, llvm::ConstantInt::get(i64, 1));
  llvm::BasicBlock* latch = builder_.GetInsertBlock();
  step->addIncoming(next, latch);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) phi[i][j]->addIncoming(next_tile[i][j], latch);
  builder_.CreateCondBr(builder_.CreateICmpSLT(next, llvm::ConstantInt::get(i64, steps)), header, exit);

  builder_.SetInsertPoint(exit);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) builder_.CreateCall(store, {rows, row_bytes, acc_ptr[i][j], acc_stride, next_tile[i][j]});
}

}  // namespace kiln
