// Loads and stores: scalar, contiguous vector (Ramp with stride 1), broadcast,
// small constant strides as masked contiguous accesses, gather/scatter for
// any other vector index, masked variants for predicates, and alignment from
// the index's congruence (every buffer is 64-byte aligned).
#include <llvm/ADT/Triple.h>
#include <llvm/IR/IntrinsicsX86.h>

#include "base/error.h"
#include "codegen/alignment.h"
#include "codegen/llvm_codegen.h"

namespace kiln {
namespace {

bool is_contiguous(const Expr& index) {
  const RampNode* ramp = index.as<RampNode>();
  return ramp && is_const_int(ramp->stride, 1);
}

// The scalar index every lane uses, when all lanes read the same element.
Expr uniform_index(const Expr& index) {
  if (const RampNode* ramp = index.as<RampNode>()) return is_const_int(ramp->stride, 0) ? ramp->base : Expr();
  if (const BroadcastNode* b = index.as<BroadcastNode>()) return b->value;
  return Expr();
}

// The stride s of a ramp index with a small constant stride (2 to 8) whose
// span, lanes * s elements, is at most 16 vectors of 64 bytes; else 0.
int64_t small_stride(const Expr& index, DType elem) {
  const RampNode* ramp = index.as<RampNode>();
  if (!ramp || elem.is_bool()) return 0;
  const IntImmNode* s = ramp->stride.as<IntImmNode>();
  if (!s || s->value < 2 || s->value > 8) return 0;
  return ramp->lanes * s->value * elem.bytes() <= 1024 ? s->value : 0;
}

// Shuffle indices spreading `lanes` values to every s-th of lanes*s
// positions; the others take `other` (-1: undefined).
std::vector<int> spread_indices(int lanes, int64_t s, int other) {
  std::vector<int> idx(static_cast<size_t>(lanes * s), other);
  for (int i = 0; i < lanes; ++i) idx[static_cast<size_t>(i * s)] = i;
  return idx;
}

}  // namespace

// A load of lanes elements s apart reads them as one masked load of the
// lanes*s elements from the first one, only every s-th enabled (the others
// are neither read nor can fault, so nothing past the last element is
// touched), then picks them out with one shuffle. A gather of 1- or 2-byte
// elements is one scalar load per lane on x86.
llvm::Value* CodeGenLLVM::emit_strided_load(const LoadNode* op, llvm::Value* mask) {
  const DType elem = op->dtype.element_of();
  const int64_t s = small_stride(op->index, elem);
  if (s == 0 || !(elem.bytes() <= 2 ? masked_bytes_ : masked_words_)) return nullptr;
  const int lanes = op->dtype.lanes;
  const int wide_lanes = static_cast<int>(lanes * s);
  auto* wide = llvm::FixedVectorType::get(memory_type(elem), static_cast<unsigned>(wide_lanes));
  const Expr& base = op->index.as<RampNode>()->base;
  llvm::Value* ptr = element_pointer(op->buffer, emit(base), base.dtype());
  llvm::Value* vptr = builder_.CreateBitCast(ptr, wide->getPointerTo());
  llvm::Value* v = builder_.CreateMaskedLoad(wide, vptr, llvm::Align(alignment_of(op->index, elem)),
                                             spread_mask(mask, lanes, s), llvm::Constant::getNullValue(wide));
  std::vector<int> pick(static_cast<size_t>(lanes));
  for (int i = 0; i < lanes; ++i) pick[static_cast<size_t>(i)] = static_cast<int>(i * s);
  return builder_.CreateShuffleVector(v, pick);
}

// A store of lanes elements s apart: the value spread to every s-th lane of
// lanes*s, stored by one masked store that writes only those lanes (the
// elements between them keep what they hold, whoever writes them).
bool CodeGenLLVM::emit_strided_store(const StoreNode* op, llvm::Value* value, llvm::Value* mask) {
  const DType elem = op->value.dtype().element_of();
  const int64_t s = small_stride(op->index, elem);
  if (s == 0 || !(elem.bytes() <= 2 ? masked_bytes_ : masked_words_)) return false;
  const int lanes = op->value.dtype().lanes;
  llvm::Value* spread = builder_.CreateShuffleVector(value, spread_indices(lanes, s, -1));
  const Expr& base = op->index.as<RampNode>()->base;
  llvm::Value* ptr = element_pointer(op->buffer, emit(base), base.dtype());
  llvm::Value* vptr = builder_.CreateBitCast(ptr, spread->getType()->getPointerTo());
  builder_.CreateMaskedStore(spread, vptr, llvm::Align(alignment_of(op->index, elem)), spread_mask(mask, lanes, s));
  return true;
}

// The mask of a strided access: lane i's predicate (true without one) at
// position i*s of lanes*s, false elsewhere.
llvm::Value* CodeGenLLVM::spread_mask(llvm::Value* mask, int lanes, int64_t s) {
  llvm::Type* i1 = builder_.getInt1Ty();
  if (!mask) mask = llvm::Constant::getAllOnesValue(llvm::FixedVectorType::get(i1, static_cast<unsigned>(lanes)));
  llvm::Value* off = llvm::Constant::getNullValue(mask->getType());
  return builder_.CreateShuffleVector(mask, off, spread_indices(lanes, s, lanes));
}

unsigned CodeGenLLVM::alignment_of(const Expr& index, DType elem) {
  const RampNode* ramp = index.as<RampNode>();
  const Expr& first = ramp ? ramp->base : index;
  const int64_t elem_bytes = elem.is_bool() ? 1 : elem.bytes();
  return static_cast<unsigned>(access_alignment(analyzer_.modular_set(first), elem_bytes));
}

llvm::Value* CodeGenLLVM::element_pointer(const Var& buffer, llvm::Value* index, DType index_type) {
  internal_assert(index_type.is_integer() || index_type.is_bool()) << "buffer index of type " << index_type.str();
  llvm::Value* base = lookup(buffer.node());
  llvm::Type* elem = memory_type(buffer_elem_type(buffer));
  return builder_.CreateInBoundsGEP(elem, base, int_to_i64(index, index_type));
}

llvm::Value* CodeGenLLVM::emit_scalar_predicated(const Expr& predicate, const std::function<llvm::Value*()>& body,
                                                 llvm::Type* result_type) {
  internal_assert(predicate.dtype().is_scalar()) << "scalar access with a vector predicate";
  llvm::Value* cond = emit(predicate);
  llvm::BasicBlock* entry = builder_.GetInsertBlock();
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "pred_then", func_);
  auto* done_bb = llvm::BasicBlock::Create(ctx_, "pred_done", func_);
  builder_.CreateCondBr(cond, then_bb, done_bb);
  builder_.SetInsertPoint(then_bb);
  llvm::Value* v = body();
  llvm::BasicBlock* then_end = builder_.GetInsertBlock();
  builder_.CreateBr(done_bb);
  builder_.SetInsertPoint(done_bb);
  if (!result_type) return nullptr;
  llvm::PHINode* phi = builder_.CreatePHI(result_type, 2);
  phi->addIncoming(llvm::Constant::getNullValue(result_type), entry);
  phi->addIncoming(v, then_end);
  return phi;
}

llvm::Value* CodeGenLLVM::emit_load(const LoadNode* op) {
  const DType t = op->dtype;
  const DType elem = t.element_of();
  internal_assert(memory_type(elem) == memory_type(buffer_elem_type(op->buffer)))
      << "load of " << t.str() << " from a buffer of " << buffer_elem_type(op->buffer).str();
  llvm::Type* mem_elem = memory_type(elem);

  if (t.lanes == 1) {
    auto load = [&]() -> llvm::Value* {
      llvm::Value* ptr = element_pointer(op->buffer, emit(op->index), op->index.dtype());
      return builder_.CreateAlignedLoad(mem_elem, ptr, llvm::Align(alignment_of(op->index, elem)));
    };
    llvm::Value* v = op->predicate.defined() ? emit_scalar_predicated(op->predicate, load, mem_elem) : load();
    return from_memory(v, elem);
  }

  llvm::Type* vec_mem = memory_type(t);
  llvm::Value* mask = nullptr;
  if (op->predicate.defined()) {
    mask = emit(op->predicate);
    if (!mask->getType()->isVectorTy()) mask = builder_.CreateVectorSplat(t.lanes, mask);
  }
  llvm::Value* zero = llvm::Constant::getNullValue(vec_mem);
  llvm::Value* v = nullptr;
  if (is_contiguous(op->index)) {
    const Expr& base = op->index.as<RampNode>()->base;
    llvm::Value* ptr = element_pointer(op->buffer, emit(base), base.dtype());
    llvm::Value* vptr = builder_.CreateBitCast(ptr, vec_mem->getPointerTo());
    const llvm::Align align(alignment_of(op->index, elem));
    if (mask) {
      v = builder_.CreateMaskedLoad(vec_mem, vptr, align, mask, zero);
    } else {
      v = builder_.CreateAlignedLoad(vec_mem, vptr, align);
    }
  } else if (llvm::Value* strided = emit_strided_load(op, mask)) {
    v = strided;
  } else if (Expr u = uniform_index(op->index); u.defined() && !mask) {
    llvm::Value* ptr = element_pointer(op->buffer, emit(u), u.dtype());
    llvm::Value* s = builder_.CreateAlignedLoad(mem_elem, ptr, llvm::Align(alignment_of(u, elem)));
    v = builder_.CreateVectorSplat(t.lanes, s);
  } else {
    llvm::Value* ptrs = element_pointer(op->buffer, emit(op->index), op->index.dtype());
    const llvm::Align align(elem.is_bool() ? 1 : elem.bytes());
    v = builder_.CreateMaskedGather(vec_mem, ptrs, align, mask, zero);
  }
  return from_memory(v, t);
}

void CodeGenLLVM::emit_store(const StoreNode* op) {
  const DType t = op->value.dtype();
  const DType elem = t.element_of();
  internal_assert(t.lanes == op->index.dtype().lanes)
      << "store of " << t.str() << " at a " << op->index.dtype().str() << " index";
  internal_assert(memory_type(elem) == memory_type(buffer_elem_type(op->buffer)))
      << "store of " << t.str() << " into a buffer of " << buffer_elem_type(op->buffer).str();

  if (t.lanes == 1) {
    auto store = [&]() -> llvm::Value* {
      llvm::Value* v = to_memory(emit(op->value), elem);
      llvm::Value* ptr = element_pointer(op->buffer, emit(op->index), op->index.dtype());
      builder_.CreateAlignedStore(v, ptr, llvm::Align(alignment_of(op->index, elem)));
      return nullptr;
    };
    if (op->predicate.defined()) {
      emit_scalar_predicated(op->predicate, store, nullptr);
    } else {
      store();
    }
    return;
  }

  llvm::Type* vec_mem = memory_type(t);
  llvm::Value* value = to_memory(emit(op->value), t);
  llvm::Value* mask = nullptr;
  if (op->predicate.defined()) {
    mask = emit(op->predicate);
    if (!mask->getType()->isVectorTy()) mask = builder_.CreateVectorSplat(t.lanes, mask);
  }
  if (is_contiguous(op->index)) {
    const Expr& base = op->index.as<RampNode>()->base;
    llvm::Value* ptr = element_pointer(op->buffer, emit(base), base.dtype());
    llvm::Value* vptr = builder_.CreateBitCast(ptr, vec_mem->getPointerTo());
    const llvm::Align align(alignment_of(op->index, elem));
    if (mask) {
      builder_.CreateMaskedStore(value, vptr, align, mask);
    } else {
      llvm::StoreInst* store = builder_.CreateAlignedStore(value, vptr, align);
      // The backend emits a non-temporal store where the target has one at
      // this alignment (x86: 16, 32 or 64 bytes), a plain one elsewhere.
      if (streams(op->buffer.node()))
        store->setMetadata(llvm::LLVMContext::MD_nontemporal,
                           llvm::MDNode::get(ctx_, {llvm::ConstantAsMetadata::get(builder_.getInt32(1))}));
    }
    return;
  }
  if (emit_strided_store(op, value, mask)) return;
  // Scatter; lanes that hit the same element store in lane order (last wins).
  llvm::Value* ptrs = element_pointer(op->buffer, emit(op->index), op->index.dtype());
  const llvm::Align align(elem.is_bool() ? 1 : elem.bytes());
  builder_.CreateMaskedScatter(value, ptrs, align, mask);
}

bool CodeGenLLVM::streams(const VarNode* buffer) const { return streamed_buffers_.count(buffer) > 0; }

// Streaming stores are weakly ordered: without a fence, another thread
// that sees a later store (the end of a parallel task) could still read
// the old values of these.
void CodeGenLLVM::emit_store_fence() {
  if (llvm::Triple(module_->getTargetTriple()).isX86()) {
    builder_.CreateCall(llvm::Intrinsic::getDeclaration(module_.get(), llvm::Intrinsic::x86_sse_sfence));
  } else {
    builder_.CreateFence(llvm::AtomicOrdering::Release);
  }
}

// llvm.prefetch(address, read, locality 3 = all cache levels (prefetcht0),
// data cache). The address may lie past the buffer's end (a prefetched
// region rounds up to whole cache lines): a plain GEP, and a prefetch never
// faults.
void CodeGenLLVM::emit_prefetch(const PrefetchNode* op) {
  llvm::Value* base = lookup(op->buffer.node());
  llvm::Type* elem = memory_type(buffer_elem_type(op->buffer));
  llvm::Value* addr = builder_.CreateGEP(elem, base, int_to_i64(emit(op->index), op->index.dtype()));
  llvm::Type* i8p = builder_.getInt8PtrTy();
  llvm::Function* prefetch = llvm::Intrinsic::getDeclaration(module_.get(), llvm::Intrinsic::prefetch, {i8p});
  llvm::Type* i32 = builder_.getInt32Ty();
  builder_.CreateCall(prefetch, {builder_.CreatePointerCast(addr, i8p), llvm::ConstantInt::get(i32, 0),
                                 llvm::ConstantInt::get(i32, 3), llvm::ConstantInt::get(i32, 1)});
}

}  // namespace kiln
