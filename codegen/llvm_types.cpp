// DType -> LLVM types, memory representation and value conversions (casts,
// bf16 <-> f32). See llvm_codegen.h for the representation choices.
#include "codegen/llvm_codegen.h"
#include "base/error.h"

namespace kiln {

llvm::Type* CodeGenLLVM::llvm_type(DType t) {
  llvm::Type* elem = nullptr;
  switch (t.code) {
    case DType::kInt:
    case DType::kUInt:
      elem = llvm::Type::getIntNTy(ctx_, t.bits);
      break;
    case DType::kFloat:
      if (t.bits == 16) {
        elem = llvm::Type::getHalfTy(ctx_);
      } else if (t.bits == 32) {
        elem = llvm::Type::getFloatTy(ctx_);
      } else if (t.bits == 64) {
        elem = llvm::Type::getDoubleTy(ctx_);
      } else {
        user_error() << "the llvm backend has no " << t.str() << " type";
      }
      break;
    case DType::kBFloat:
      user_check(t.bits == 16) << "the llvm backend has no " << t.str() << " type";
      elem = llvm::Type::getInt16Ty(ctx_);  // the bit pattern
      break;
    case DType::kHandle:
      internal_error() << "handle types are typed pointers; use the buffer's element type";
  }
  return t.lanes > 1 ? llvm::FixedVectorType::get(elem, t.lanes) : elem;
}

llvm::Type* CodeGenLLVM::memory_type(DType t) {
  if (t.is_bool()) {
    llvm::Type* i8 = llvm::Type::getInt8Ty(ctx_);
    return t.lanes > 1 ? llvm::FixedVectorType::get(i8, t.lanes) : i8;
  }
  return llvm_type(t);
}

llvm::Value* CodeGenLLVM::to_memory(llvm::Value* v, DType t) {
  return t.is_bool() ? builder_.CreateZExt(v, memory_type(t)) : v;
}

llvm::Value* CodeGenLLVM::from_memory(llvm::Value* v, DType t) {
  if (!t.is_bool()) return v;
  return builder_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
}

llvm::Value* CodeGenLLVM::make_int(llvm::Type* t, int64_t v) {
  return llvm::ConstantInt::get(t, static_cast<uint64_t>(v), /*isSigned=*/true);
}

// bf16 bits -> f32: the high half of the f32 pattern.
llvm::Value* CodeGenLLVM::bf16_to_f32(llvm::Value* v) {
  llvm::Type* i32 = builder_.getInt32Ty();
  llvm::Type* f32 = builder_.getFloatTy();
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType())) {
    i32 = llvm::FixedVectorType::get(i32, vt->getNumElements());
    f32 = llvm::FixedVectorType::get(f32, vt->getNumElements());
  }
  llvm::Value* wide = builder_.CreateZExt(v, i32);
  return builder_.CreateBitCast(builder_.CreateShl(wide, make_int(i32, 16)), f32);
}

// f32 -> bf16 bits, rounding to nearest even; NaN becomes a quiet NaN.
llvm::Value* CodeGenLLVM::f32_to_bf16(llvm::Value* v) {
  llvm::Type* i32 = builder_.getInt32Ty();
  llvm::Type* i16 = builder_.getInt16Ty();
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType())) {
    i32 = llvm::FixedVectorType::get(i32, vt->getNumElements());
    i16 = llvm::FixedVectorType::get(i16, vt->getNumElements());
  }
  llvm::Value* bits = builder_.CreateBitCast(v, i32);
  llvm::Value* lsb = builder_.CreateAnd(builder_.CreateLShr(bits, make_int(i32, 16)), make_int(i32, 1));
  llvm::Value* bias = builder_.CreateAdd(lsb, make_int(i32, 0x7FFF));
  llvm::Value* rounded =
      builder_.CreateTrunc(builder_.CreateLShr(builder_.CreateAdd(bits, bias), make_int(i32, 16)), i16);
  llvm::Value* is_nan = builder_.CreateFCmpUNO(v, v);
  return builder_.CreateSelect(is_nan, make_int(i16, 0x7FC0), rounded);
}

llvm::Value* CodeGenLLVM::int_to_i64(llvm::Value* v, DType t) {
  llvm::Type* i64 = builder_.getInt64Ty();
  if (t.lanes > 1) i64 = llvm::FixedVectorType::get(i64, t.lanes);
  if (v->getType() == i64) return v;
  return t.is_int() ? builder_.CreateSExt(v, i64) : builder_.CreateZExtOrTrunc(v, i64);
}

llvm::Value* CodeGenLLVM::cast_value(llvm::Value* v, DType from, DType to) {
  internal_assert(from.lanes == to.lanes) << "cast " << from.str() << " -> " << to.str();
  if (from == to) return v;
  if (from.code == DType::kBFloat) return cast_value(bf16_to_f32(v), DType::f32().with_lanes(from.lanes), to);
  if (to.code == DType::kBFloat) return f32_to_bf16(cast_value(v, from, DType::f32().with_lanes(to.lanes)));
  llvm::Type* dst = llvm_type(to);
  if (to.is_bool()) {
    if (from.is_float()) return builder_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
    return builder_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  const bool from_int = from.is_int() || from.is_uint();  // bool counts as unsigned
  if (from_int && to.is_float()) return from.is_int() ? builder_.CreateSIToFP(v, dst) : builder_.CreateUIToFP(v, dst);
  // f64 <-> f16 through f32, as the interpreter rounds (round_to). Without
  // native f16 (AVX512-FP16), LLVM 14 would call __truncdfhf2, whose half
  // return value libgcc passes in another register than LLVM expects.
  if (from.is_float() && to.is_float() && from.bits + to.bits == 80) {
    const DType f32 = DType::f32().with_lanes(from.lanes);
    return cast_value(cast_value(v, from, f32), f32, to);
  }
  if (from.is_float() && to.is_float()) return builder_.CreateFPCast(v, dst);
  if (from.is_float()) return to.is_int() ? builder_.CreateFPToSI(v, dst) : builder_.CreateFPToUI(v, dst);
  // integer -> integer: extension follows the source's signedness.
  if (from.bits == to.bits) return v;
  return builder_.CreateIntCast(v, dst, /*isSigned=*/from.is_int());
}

}  // namespace kiln
