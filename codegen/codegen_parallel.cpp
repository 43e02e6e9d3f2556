// Parallel loops: the body is outlined into
//   internal i32 NAME_parK(i64 task, i64 num_tasks, i8* closure)
// which unpacks a closure struct (every free variable of the body plus the
// loop bounds) and calls
//   internal i32 NAME_parK_body(captures..., min, extent, task, num_tasks)
// whose buffer parameters are noalias and 64-byte aligned again (the inliner
// turns that into alias scopes). Each task runs its contiguous chunk of
// [min, min + extent). The loop itself becomes a call through the module's
// __kiln_parallel_for slot with num_tasks = 0 (one task per pool thread).
#include <algorithm>
#include <unordered_set>

#include "codegen/llvm_codegen.h"
#include "base/error.h"
#include "compute/ir_functor.h"

namespace kiln {
namespace {

// Variables a statement uses without binding them, in first-use order.
class FreeVars : public IRVisitor {
 public:
  using IRVisitor::visit;
  std::vector<const VarNode*> vars;

 protected:
  void visit_Var(const VarNode* op) override {
    if (!bound_.count(op) && seen_.insert(op).second) vars.push_back(op);
  }
  void visit_For(const ForNode* op) override {
    visit(op->min);
    visit(op->extent);
    bound_.insert(op->loop_var.node());
    visit(op->body);
  }
  void visit_LetStmt(const LetStmtNode* op) override {
    visit(op->value);
    bound_.insert(op->var.node());
    visit(op->body);
  }
  void visit_Let(const LetNode* op) override {
    visit(op->value);
    bound_.insert(op->var.node());
    visit(op->body);
  }
  void visit_Allocate(const AllocateNode* op) override {
    for (const Expr& e : op->extents) visit(e);
    bound_.insert(op->buffer.node());
    visit(op->body);
  }

 private:
  std::unordered_set<const VarNode*> bound_, seen_;
};

}  // namespace

void CodeGenLLVM::emit_parallel_for(const ForNode* op) {
  const DType t = op->loop_var.dtype();
  internal_assert(t.is_scalar() && t.is_integer()) << "parallel loop variable of type " << t.str();
  llvm::Value* min = cast_value(emit(op->min), op->min.dtype(), t);
  llvm::Value* extent = cast_value(emit(op->extent), op->extent.dtype(), t);

  FreeVars fv;
  fv.visit(op->body);
  std::vector<const VarNode*> captured;
  std::vector<llvm::Value*> captured_values;
  std::vector<llvm::Type*> fields;
  for (const VarNode* v : fv.vars) {
    if (v == op->loop_var.node()) continue;
    captured.push_back(v);
    captured_values.push_back(lookup(v));
    fields.push_back(captured_values.back()->getType());
  }
  const size_t n = captured.size();
  fields.push_back(min->getType());
  fields.push_back(extent->getType());

  // The closure lives in the caller's frame for the duration of the call.
  llvm::StructType* closure_ty = llvm::StructType::get(ctx_, fields);
  llvm::AllocaInst* closure = create_entry_alloca(closure_ty, "closure");
  for (size_t i = 0; i < n; ++i) {
    builder_.CreateStore(captured_values[i], builder_.CreateStructGEP(closure_ty, closure, static_cast<unsigned>(i)));
  }
  builder_.CreateStore(min, builder_.CreateStructGEP(closure_ty, closure, static_cast<unsigned>(n)));
  builder_.CreateStore(extent, builder_.CreateStructGEP(closure_ty, closure, static_cast<unsigned>(n + 1)));

  llvm::Type* i32 = builder_.getInt32Ty();
  llvm::Type* i64 = builder_.getInt64Ty();
  llvm::Type* i8ptr = builder_.getInt8PtrTy();
  const std::string base_name = func_name_ + "_par" + std::to_string(outlined_count_++);

  std::vector<llvm::Type*> body_params = fields;
  body_params.push_back(i64);
  body_params.push_back(i64);
  auto* body_fn = llvm::Function::Create(llvm::FunctionType::get(i32, body_params, false),
                                         llvm::Function::InternalLinkage, base_name + "_body", module_.get());
  body_fn->addFnAttr(llvm::Attribute::NoUnwind);
  for (size_t i = 0; i < n; ++i) {
    body_fn->getArg(static_cast<unsigned>(i))->setName(captured[i]->name);
    if (!fields[i]->isPointerTy()) continue;
    // Distinct buffers stay distinct; a value captured twice (a pointer
    // alias) must not be claimed noalias.
    const bool unique = std::count(captured_values.begin(), captured_values.end(), captured_values[i]) == 1;
    if (unique) body_fn->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoAlias);
    body_fn->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::getWithAlignment(ctx_, llvm::Align(64)));
  }
  auto* task_ty = llvm::FunctionType::get(i32, {i64, i64, i8ptr}, false);
  auto* task_fn = llvm::Function::Create(task_ty, llvm::Function::InternalLinkage, base_name, module_.get());
  task_fn->addFnAttr(llvm::Attribute::NoUnwind);

  {
    llvm::IRBuilderBase::InsertPointGuard guard(builder_);
    // Task entry: unpack the closure.
    builder_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", task_fn));
    llvm::Value* cl = builder_.CreateBitCast(task_fn->getArg(2), closure_ty->getPointerTo());
    std::vector<llvm::Value*> args;
    for (size_t i = 0; i < fields.size(); ++i) {
      args.push_back(
          builder_.CreateLoad(fields[i], builder_.CreateStructGEP(closure_ty, cl, static_cast<unsigned>(i))));
    }
    args.push_back(task_fn->getArg(0));
    args.push_back(task_fn->getArg(1));
    builder_.CreateRet(builder_.CreateCall(body_fn, args));

    // Body: its own variable bindings, allocas and heap buffers.
    llvm::Function* saved_func = func_;
    std::vector<HeapBlock> saved_heap;
    saved_heap.swap(heap_allocs_);
    std::unordered_map<const VarNode*, llvm::Value*> saved_values;
    saved_values.swap(values_);
    func_ = body_fn;
    for (size_t i = 0; i < n; ++i) bind(captured[i], body_fn->getArg(static_cast<unsigned>(i)));
    builder_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", body_fn));
    llvm::Value* lo = body_fn->getArg(static_cast<unsigned>(n));
    llvm::Value* ext = body_fn->getArg(static_cast<unsigned>(n + 1));
    llvm::Value* task = body_fn->getArg(static_cast<unsigned>(n + 2));
    llvm::Value* ntasks = builder_.CreateBinaryIntrinsic(
        llvm::Intrinsic::smax, body_fn->getArg(static_cast<unsigned>(n + 3)), make_int(i64, 1));
    llvm::Value* ext64 = int_to_i64(ext, t);
    llvm::Value* chunk =
        builder_.CreateSDiv(builder_.CreateSub(builder_.CreateAdd(ext64, ntasks), make_int(i64, 1)), ntasks);
    llvm::Value* begin = builder_.CreateMul(task, chunk);
    llvm::Value* end = builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, builder_.CreateAdd(begin, chunk), ext64);
    llvm::Value* count = builder_.CreateSub(end, begin);
    llvm::Type* ty = lo->getType();
    llvm::Value* start = builder_.CreateAdd(lo, builder_.CreateIntCast(begin, ty, true));
    emit_serial_loop(op->loop_var, start, builder_.CreateIntCast(count, ty, true), op->body, false);
    // A task's streaming stores are ordered before the pool learns it is done.
    if (!streamed_buffers_.empty()) emit_store_fence();
    builder_.CreateRet(builder_.getInt32(0));
    internal_assert(heap_allocs_.empty()) << "unbalanced heap allocations in a parallel body";
    func_ = saved_func;
    heap_allocs_.swap(saved_heap);
    values_.swap(saved_values);
  }

  // rc = ((kiln_parallel_for_fn)__kiln_parallel_for)(task_fn, &closure, 0)
  auto* pfor_ty = llvm::FunctionType::get(i32, {task_ty->getPointerTo(), i8ptr, i64}, false);
  llvm::Value* slot = builder_.CreateAlignedLoad(i8ptr, parallel_slot_, llvm::Align(8), "parallel_for");
  llvm::Value* callee = builder_.CreateBitCast(slot, pfor_ty->getPointerTo());
  llvm::Value* rc =
      builder_.CreateCall(pfor_ty, callee, {task_fn, builder_.CreateBitCast(closure, i8ptr), make_int(i64, 0)});
  emit_return_on_error(rc);
}

}  // namespace kiln
