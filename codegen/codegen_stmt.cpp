// Statements -> LLVM control flow: loops (preheader/header/latch with a phi),
// conditionals, lets and allocations (entry-block allocas or workspace blocks).
#include "codegen/llvm_codegen.h"
#include "base/error.h"

namespace kiln {

void CodeGenLLVM::emit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s->kind()) {
    case NodeKind::For:
      emit_for(s.as<ForNode>());
      return;
    case NodeKind::Allocate:
      emit_allocate(s.as<AllocateNode>());
      return;
    case NodeKind::Store:
      emit_store(s.as<StoreNode>());
      return;
    case NodeKind::Seq:
      for (const Stmt& c : s.as<SeqNode>()->seq) emit(c);
      return;
    case NodeKind::IfThenElse:
      emit_if(s.as<IfThenElseNode>());
      return;
    case NodeKind::LetStmt:
      emit_let_stmt(s.as<LetStmtNode>());
      return;
    case NodeKind::Evaluate:
      emit(s.as<EvaluateNode>()->value);  // pure; LLVM drops it
      return;
    case NodeKind::AttrStmt: {
      auto* op = s.as<AttrStmtNode>();
      auto* buffer = op->node.defined() ? op->node.as<VarNode>() : nullptr;
      if (op->key == attr::kStreamStores && buffer) {
        ++streamed_buffers_[buffer];
        emit(op->body);
        if (--streamed_buffers_[buffer] == 0) streamed_buffers_.erase(buffer);
        emit_store_fence();
        return;
      }
      // Pragmas and annotations have already done their work in lowering.
      emit(op->body);
      return;
    }
    case NodeKind::Barrier:
      user_error() << "a memory barrier (" << mem_scope_name(s.as<BarrierNode>()->scope)
                   << " scope) needs a cuda target; the llvm backend runs on the CPU";
    case NodeKind::ThreadAllReduce:
      user_error() << "a reduction across threads (an axis bound to "
                   << s.as<ThreadAllReduceNode>()->thread_tag << ") needs a cuda target; the llvm backend runs on the CPU";
    case NodeKind::Prefetch:
      emit_prefetch(s.as<PrefetchNode>());
      return;
    case NodeKind::Token:
      return;  // one thread runs both stages in program order: nothing to wait for
    case NodeKind::TensorIntrinCall:
      emit_tensor_intrin(s.as<TensorIntrinCallNode>());
      return;
    case NodeKind::Provide:
    case NodeKind::Realize:
    case NodeKind::Tensorize:
      internal_error() << node_kind_name(s->kind()) << " must be flattened away before codegen";
    default:
      internal_error() << "codegen: unexpected statement " << node_kind_name(s->kind());
  }
}

void CodeGenLLVM::emit_for(const ForNode* op) {
  Analyzer::VarScope scope(&analyzer_, op->loop_var);
  analyzer_.bind(op->loop_var, Range(op->min, op->extent));
  switch (op->for_kind) {
    case ForKind::kThreadBinding:
      user_error() << "GPU thread binding (loop over " << op->loop_var->name << " bound to '" << op->thread_tag
                   << "') needs a cuda target; the llvm backend runs on the CPU";
    case ForKind::kParallel:
      emit_parallel_for(op);
      return;
    default: {
      // Vectorized loops are normally turned into vector ops by lowering; any
      // left over run serially (LLVM may still vectorize them).
      const DType t = op->loop_var.dtype();
      llvm::Value* min = cast_value(emit(op->min), op->min.dtype(), t);
      llvm::Value* extent = cast_value(emit(op->extent), op->extent.dtype(), t);
      emit_serial_loop(op->loop_var, min, extent, op->body, op->for_kind == ForKind::kUnrolled);
    }
  }
}

void CodeGenLLVM::emit_serial_loop(const Var& var, llvm::Value* min, llvm::Value* extent, const Stmt& body,
                                   bool unroll) {
  const DType t = var.dtype();
  internal_assert(t.is_scalar() && t.is_integer()) << "loop variable " << var->name << " of type " << t.str();
  const bool nsw = t.is_int();
  llvm::Value* end = builder_.CreateAdd(min, extent, var->name + ".end", false, nsw);
  llvm::BasicBlock* preheader = builder_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, var->name + ".header", func_);
  auto* body_bb = llvm::BasicBlock::Create(ctx_, var->name + ".body", func_);
  auto* exit = llvm::BasicBlock::Create(ctx_, var->name + ".exit", func_);
  builder_.CreateBr(header);

  builder_.SetInsertPoint(header);
  llvm::PHINode* iv = builder_.CreatePHI(min->getType(), 2, var->name);
  iv->addIncoming(min, preheader);
  llvm::Value* cond = t.is_int() ? builder_.CreateICmpSLT(iv, end) : builder_.CreateICmpULT(iv, end);
  builder_.CreateCondBr(cond, body_bb, exit);

  builder_.SetInsertPoint(body_bb);
  auto it = values_.find(var.node());
  llvm::Value* previous = it == values_.end() ? nullptr : it->second;
  bind(var.node(), iv);
  emit(body);
  unbind(var.node(), previous);
  llvm::Value* next = builder_.CreateAdd(iv, make_int(iv->getType(), 1), var->name + ".next", false, nsw);
  llvm::BranchInst* back = builder_.CreateBr(header);
  iv->addIncoming(next, builder_.GetInsertBlock());
  if (unroll) {
    // The schedule asked for this loop to be unrolled.
    llvm::MDNode* full = llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.full")});
    llvm::MDNode* loop_id = llvm::MDNode::getDistinct(ctx_, {nullptr, full});
    loop_id->replaceOperandWith(0, loop_id);
    back->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
  }
  builder_.SetInsertPoint(exit);
}

void CodeGenLLVM::emit_if(const IfThenElseNode* op) {
  internal_assert(op->condition.dtype().is_bool() && op->condition.dtype().is_scalar())
      << "if condition of type " << op->condition.dtype().str();
  llvm::Value* cond = emit(op->condition);
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "if_then", func_);
  auto* done_bb = llvm::BasicBlock::Create(ctx_, "if_done", func_);
  llvm::BasicBlock* else_bb = op->else_case.defined() ? llvm::BasicBlock::Create(ctx_, "if_else", func_) : done_bb;
  builder_.CreateCondBr(cond, then_bb, else_bb);
  builder_.SetInsertPoint(then_bb);
  emit(op->then_case);
  builder_.CreateBr(done_bb);
  if (op->else_case.defined()) {
    builder_.SetInsertPoint(else_bb);
    emit(op->else_case);
    builder_.CreateBr(done_bb);
  }
  builder_.SetInsertPoint(done_bb);
}

void CodeGenLLVM::emit_let_stmt(const LetStmtNode* op) {
  const VarNode* v = op->var.node();
  llvm::Value* value = emit(op->value);
  auto it = values_.find(v);
  llvm::Value* previous = it == values_.end() ? nullptr : it->second;
  bind(v, value);
  const DType t = op->value.dtype();
  Analyzer::VarScope scope(&analyzer_, op->var);
  if (t.is_integer() && t.is_scalar()) analyzer_.bind(op->var, op->value);
  const bool data = is_data(op->value);
  if (data) data_vars_.insert(v);
  if (t.is_handle()) {
    // A pointer alias: same element type as what it names.
    if (const VarNode* src = op->value.as<VarNode>()) {
      buffer_types_[v] = buffer_elem_type(Var(src));
      if (auto e = buffer_elems_.find(src); e != buffer_elems_.end()) buffer_elems_[v] = e->second;
    }
  }
  emit(op->body);
  if (data) data_vars_.erase(v);
  unbind(v, previous);
}

void CodeGenLLVM::emit_allocate(const AllocateNode* op) {
  user_check(op->scope != MemScope::kWarp)
      << "buffer '" << op->buffer->name << "' is in warp scope (a tensor-core fragment), which needs a cuda target; "
      << "the llvm backend runs on the CPU";
  const DType t = op->dtype;
  llvm::Type* elem = memory_type(t);  // a vector dtype allocates whole vectors
  const int64_t elem_bytes = static_cast<int64_t>(module_->getDataLayout().getTypeAllocSize(elem));
  int64_t count = 1;
  bool constant = true;
  for (const Expr& e : op->extents) {
    int64_t c = 0;
    if (as_const_int(e, &c)) {
      user_check(c >= 0) << "buffer " << op->buffer->name << " has a negative extent " << c;
      count = (count != 0 && c > (int64_t{1} << 40) / count) ? (int64_t{1} << 40) : count * c;
    } else {
      constant = false;
    }
  }
  llvm::Type* elem_ptr_ty = memory_type(t.element_of())->getPointerTo();
  llvm::Value* ptr = nullptr;
  bool on_heap = false;
  if (constant && count * elem_bytes <= kMaxStackAllocationBytes) {
    // Entry-block allocas: SROA/mem2reg can turn small tiles into registers.
    llvm::AllocaInst* a =
        create_entry_alloca(llvm::ArrayType::get(elem, std::max<int64_t>(count, 1)), op->buffer->name);
    ptr = builder_.CreateBitCast(a, elem_ptr_ty);
  } else {
    llvm::Type* i64 = builder_.getInt64Ty();
    llvm::Value* n = make_int(i64, 1);
    for (const Expr& e : op->extents) n = builder_.CreateMul(n, int_to_i64(emit(e), e.dtype()));
    llvm::Value* bytes = builder_.CreateMul(n, make_int(i64, elem_bytes));
    // aligned_alloc wants a multiple of the alignment (and a non-zero size).
    bytes = builder_.CreateAnd(builder_.CreateAdd(bytes, make_int(i64, 64)), make_int(i64, ~int64_t{63}));
    llvm::Value* raw = emit_workspace_alloc(bytes, op->buffer->name);
    // Out of memory: report failure instead of crashing.
    emit_return_on_error(builder_.CreateZExt(builder_.CreateIsNull(raw), builder_.getInt32Ty()));
    ptr = builder_.CreateBitCast(raw, elem_ptr_ty);
    heap_allocs_.push_back({raw, bytes});
    on_heap = true;
  }
  const VarNode* v = op->buffer.node();
  auto it = values_.find(v);
  llvm::Value* previous = it == values_.end() ? nullptr : it->second;
  bind(v, ptr);
  buffer_types_[v] = t.element_of();
  if (constant) buffer_elems_[v] = count * t.lanes;
  emit(op->body);
  unbind(v, previous);
  if (on_heap) {
    HeapBlock block = heap_allocs_.back();
    heap_allocs_.pop_back();
    emit_workspace_free(block);
  }
}

}  // namespace kiln
