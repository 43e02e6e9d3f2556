// Hardware instruction calls (TensorIntrinCallNode) -> LLVM's x86
// intrinsics. Each instruction of compute/hw_instructions.h with the llvm
// backend: its accumulator loaded as one vector and stored back, the
// broadcast operand loaded as one 32-bit word and splat, the other operand
// loaded as one 64-byte vector. The calls' operands were matched against
// the instruction's entry (element types and extents) first, and the
// target must have the instruction's CPU feature.
#include <llvm/IR/IntrinsicsX86.h>

#include "base/error.h"
#include "codegen/llvm_codegen.h"
#include "compute/hw_instructions.h"

namespace kiln {

namespace {

llvm::Intrinsic::ID x86_intrinsic(const std::string& name) {
  if (name == "x86.vpdpbusd.512") return llvm::Intrinsic::x86_avx512_vpdpbusd_512;
  if (name == "x86.vdpbf16ps.512") return llvm::Intrinsic::x86_avx512bf16_dpbf16ps_512;
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

}  // namespace kiln
