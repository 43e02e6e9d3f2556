// CodeGenLLVM driver: module setup, one typed kernel function plus its packed
// entry point per LoweredFunc, and the helpers the other codegen files share.
#include "codegen/llvm_codegen.h"

#include <llvm/ADT/Triple.h>
#include <llvm/IR/MDBuilder.h>

#include <unordered_set>

#include "codegen/build.h"
#include "codegen/llvm_support.h"
#include "base/error.h"
#include "runtime/c_api.h"

namespace kiln {
namespace {

// Symbols generated code calls or defines; a kernel of that name would clash.
bool is_reserved_name(const std::string& s) {
  static const std::unordered_set<std::string> reserved = {KILN_PARALLEL_FOR_SLOT,
                                                           KILN_WORKSPACE_ALLOC_SLOT,
                                                           KILN_WORKSPACE_FREE_SLOT,
                                                           "kiln_workspace_alloc",
                                                           "kiln_workspace_free",
                                                           "kiln_parallel_for",
                                                           "free",
                                                           "aligned_alloc",
                                                           "malloc",
                                                           "memcpy",
                                                           "memset",
                                                           "exp",
                                                           "expf",
                                                           "log",
                                                           "logf",
                                                           "sqrt",
                                                           "sqrtf",
                                                           "pow",
                                                           "powf",
                                                           "tanh",
                                                           "tanhf",
                                                           "erf",
                                                           "erff",
                                                           "fabs",
                                                           "fabsf",
                                                           "floor",
                                                           "floorf",
                                                           "ceil",
                                                           "ceilf",
                                                           "round",
                                                           "roundf",
                                                           "fmod",
                                                           "fmodf"};
  return reserved.count(s) > 0 || s.compare(0, 2, "__") == 0;
}

}  // namespace

CodeGenLLVM::CodeGenLLVM(llvm::LLVMContext& ctx, const Target& target, llvm::TargetMachine& tm)
    : ctx_(ctx), target_(target), tm_(tm), builder_(ctx) {
  llvm::FastMathFlags fmf;
  fmf.setAllowContract(true);  // a*b+c may become an FMA; nothing else is relaxed
  builder_.setFastMathFlags(fmf);
  masked_bytes_ = target_.has_feature("avx512bw");
  masked_words_ = target_.has_feature("avx512f");
}

std::unique_ptr<llvm::Module> CodeGenLLVM::compile(const std::vector<LoweredFunc>& funcs) {
  module_ = std::make_unique<llvm::Module>("kiln", ctx_);
  module_->setTargetTriple(target_.triple);
  module_->setDataLayout(tm_.createDataLayout());

  llvm::Type* i8ptr = builder_.getInt8PtrTy();
  parallel_slot_ = new llvm::GlobalVariable(*module_, i8ptr, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage,
                                            llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(i8ptr)),
                                            KILN_PARALLEL_FOR_SLOT);
  parallel_slot_->setAlignment(llvm::Align(8));
  // The module's own code reads its own slot, even if another loaded module
  // exports a symbol of the same name.
  if (llvm::Triple(target_.triple).isOSBinFormatELF())
    parallel_slot_->setVisibility(llvm::GlobalValue::ProtectedVisibility);
  auto make_slot = [&](const char* name) {
    auto* g = new llvm::GlobalVariable(*module_, i8ptr, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage,
                                       llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(i8ptr)), name);
    g->setAlignment(llvm::Align(8));
    if (llvm::Triple(target_.triple).isOSBinFormatELF()) g->setVisibility(llvm::GlobalValue::ProtectedVisibility);
    return g;
  };
  workspace_alloc_slot_ = make_slot(KILN_WORKSPACE_ALLOC_SLOT);
  workspace_free_slot_ = make_slot(KILN_WORKSPACE_FREE_SLOT);

  std::unordered_set<std::string> names;
  for (const LoweredFunc& f : funcs) {
    user_check(is_c_identifier(f.name)) << "kernel name '" << f.name
                                        << "' is not a valid C identifier (it becomes an exported symbol)";
    user_check(names.insert(f.name).second) << "two kernels in one module are both named '" << f.name << "'";
    user_check(!is_reserved_name(f.name))
        << "kernel name '" << f.name << "' is reserved (it names a C library function or kiln's runtime slot)";
  }
  for (const LoweredFunc& f : funcs) add_function(f);
  llvm_support::verify_module(*module_);
  return std::move(module_);
}

void CodeGenLLVM::add_function(const LoweredFunc& f) {
  internal_assert(f.body.defined()) << "kernel " << f.name << " has no body";
  llvm::Type* i32 = builder_.getInt32Ty();
  std::vector<llvm::Type*> params;
  for (const BufferArg& a : f.args) {
    internal_assert(a.dtype.is_scalar() && !a.dtype.is_handle()) << "buffer " << a.name << " of type " << a.dtype.str();
    params.push_back(memory_type(a.dtype)->getPointerTo());
  }
  auto* compute = llvm::Function::Create(llvm::FunctionType::get(i32, params, false), llvm::Function::InternalLinkage,
                                         f.name + "_compute", module_.get());
  compute->addFnAttr(llvm::Attribute::NoUnwind);
  values_.clear();
  for (size_t i = 0; i < f.args.size(); ++i) {
    const BufferArg& a = f.args[i];
    llvm::Argument* arg = compute->getArg(static_cast<unsigned>(i));
    arg->setName(a.name);
    // Buffers are distinct, 64-byte aligned (runtime/c_api.h) and, for a
    // static shape, fully dereferenceable, so loads may be speculated.
    compute->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoAlias);
    compute->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NonNull);
    compute->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::getWithAlignment(ctx_, llvm::Align(64)));
    int64_t elems = 1;
    for (int64_t d : a.shape) elems = d > 0 && elems <= (int64_t{1} << 40) / d ? elems * d : 0;
    if (elems > 0) buffer_elems_[a.data.node()] = elems;
    if (elems > 0) {
      const int64_t bytes = elems * (a.dtype.is_bool() ? 1 : a.dtype.bytes());
      compute->addParamAttr(static_cast<unsigned>(i),
                            llvm::Attribute::getWithDereferenceableBytes(ctx_, static_cast<uint64_t>(bytes)));
    }
    internal_assert(a.data.defined() && a.data.dtype().is_handle()) << "buffer argument " << a.name;
    bind(a.data.node(), arg);
    buffer_types_[a.data.node()] = a.dtype;
  }

  func_ = compute;
  func_name_ = f.name;
  heap_allocs_.clear();
  builder_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", compute));
  emit(f.body);
  builder_.CreateRet(builder_.getInt32(0));
  internal_assert(heap_allocs_.empty()) << "unbalanced heap allocations";
  values_.clear();

  // int32_t NAME(void** args): unpack and call.
  llvm::Type* i8ptr = builder_.getInt8PtrTy();
  auto* entry = llvm::Function::Create(llvm::FunctionType::get(i32, {i8ptr->getPointerTo()}, false),
                                       llvm::Function::ExternalLinkage, f.name, module_.get());
  entry->addFnAttr(llvm::Attribute::NoUnwind);
  entry->getArg(0)->setName("args");
  builder_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", entry));
  std::vector<llvm::Value*> call_args;
  for (size_t i = 0; i < f.args.size(); ++i) {
    llvm::Value* slot = builder_.CreateConstInBoundsGEP1_64(i8ptr, entry->getArg(0), i);
    llvm::Value* p = builder_.CreateAlignedLoad(i8ptr, slot, llvm::Align(8), f.args[i].name);
    call_args.push_back(builder_.CreateBitCast(p, params[i]));
  }
  builder_.CreateRet(builder_.CreateCall(compute, call_args));
  func_ = nullptr;
}

llvm::AllocaInst* CodeGenLLVM::create_entry_alloca(llvm::Type* type, const std::string& name) {
  llvm::BasicBlock& entry = func_->getEntryBlock();
  llvm::IRBuilder<> b(&entry, entry.begin());
  llvm::AllocaInst* a = b.CreateAlloca(type, nullptr, name);
  a->setAlignment(llvm::Align(64));
  return a;
}

void CodeGenLLVM::emit_return_on_error(llvm::Value* rc) {
  llvm::Value* failed = builder_.CreateICmpNE(rc, llvm::Constant::getNullValue(rc->getType()));
  auto* fail_bb = llvm::BasicBlock::Create(ctx_, "error", func_);
  auto* ok_bb = llvm::BasicBlock::Create(ctx_, "ok", func_);
  builder_.CreateCondBr(failed, fail_bb, ok_bb, llvm::MDBuilder(ctx_).createBranchWeights(1, 1 << 20));
  builder_.SetInsertPoint(fail_bb);
  for (auto it = heap_allocs_.rbegin(); it != heap_allocs_.rend(); ++it) emit_workspace_free(*it);
  builder_.CreateRet(rc);
  builder_.SetInsertPoint(ok_bb);
}

llvm::Value* CodeGenLLVM::call_slot_or(llvm::GlobalVariable* slot, llvm::FunctionType* type,
                                       const std::vector<llvm::Value*>& args,
                                       const std::function<llvm::Value*()>& fallback, const std::string& name) {
  llvm::Value* fn = builder_.CreateAlignedLoad(builder_.getInt8PtrTy(), slot, llvm::Align(8), name + "_slot");
  auto* slot_bb = llvm::BasicBlock::Create(ctx_, name + "_by_slot", func_);
  auto* plain_bb = llvm::BasicBlock::Create(ctx_, name + "_plain", func_);
  auto* done_bb = llvm::BasicBlock::Create(ctx_, name + "_done", func_);
  builder_.CreateCondBr(builder_.CreateIsNotNull(fn), slot_bb, plain_bb);
  builder_.SetInsertPoint(slot_bb);
  llvm::Value* by_slot = builder_.CreateCall(type, builder_.CreateBitCast(fn, type->getPointerTo()), args);
  builder_.CreateBr(done_bb);
  builder_.SetInsertPoint(plain_bb);
  llvm::Value* plain = fallback();
  builder_.CreateBr(done_bb);
  builder_.SetInsertPoint(done_bb);
  if (type->getReturnType()->isVoidTy()) return nullptr;
  llvm::PHINode* p = builder_.CreatePHI(type->getReturnType(), 2, name);
  p->addIncoming(by_slot, slot_bb);
  p->addIncoming(plain, plain_bb);
  return p;
}

llvm::Value* CodeGenLLVM::emit_workspace_alloc(llvm::Value* bytes, const std::string& name) {
  llvm::Type* i8ptr = builder_.getInt8PtrTy();
  llvm::Type* i64 = builder_.getInt64Ty();
  return call_slot_or(
      workspace_alloc_slot_, llvm::FunctionType::get(i8ptr, {i64}, false), {bytes},
      [&] {
        llvm::Function* aligned_alloc = declare_extern("aligned_alloc", i8ptr, {i64, i64});
        return builder_.CreateCall(aligned_alloc, {llvm::ConstantInt::get(i64, 64), bytes});
      },
      name);
}

void CodeGenLLVM::emit_workspace_free(const HeapBlock& block) {
  llvm::Type* i8ptr = builder_.getInt8PtrTy();
  call_slot_or(
      workspace_free_slot_, llvm::FunctionType::get(builder_.getVoidTy(), {i8ptr, builder_.getInt64Ty()}, false),
      {block.ptr, block.bytes},
      [&] {
        llvm::Function* free_fn = declare_extern("free", builder_.getVoidTy(), {i8ptr});
        return builder_.CreateCall(free_fn, {block.ptr});
      },
      "workspace_free");
}

llvm::Value* CodeGenLLVM::lookup(const VarNode* v) const {
  auto it = values_.find(v);
  internal_assert(it != values_.end()) << "variable '" << v->name << "' is used but not bound in the lowered body";
  return it->second;
}

void CodeGenLLVM::bind(const VarNode* v, llvm::Value* value) { values_[v] = value; }

void CodeGenLLVM::unbind(const VarNode* v, llvm::Value* previous) {
  if (previous) {
    values_[v] = previous;
  } else {
    values_.erase(v);
  }
}

DType CodeGenLLVM::buffer_elem_type(const Var& buffer) const {
  auto it = buffer_types_.find(buffer.node());
  if (it != buffer_types_.end()) return it->second;
  internal_assert(buffer.dtype().is_handle() && !buffer->pointee.is_handle())
      << "buffer variable '" << buffer->name << "' has no element type";
  return buffer->pointee;
}

llvm::Function* CodeGenLLVM::declare_extern(const std::string& name, llvm::Type* ret, std::vector<llvm::Type*> args) {
  llvm::FunctionCallee callee = module_->getOrInsertFunction(name, llvm::FunctionType::get(ret, args, false));
  auto* fn = llvm::dyn_cast<llvm::Function>(callee.getCallee());
  internal_assert(fn != nullptr) << "'" << name << "' is declared with two different types";
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  return fn;
}

llvm::Function* CodeGenLLVM::declare_libm(const std::string& name, llvm::Type* ret, std::vector<llvm::Type*> args) {
  llvm::Function* fn = declare_extern(name, ret, std::move(args));
  fn->addFnAttr(llvm::Attribute::ReadNone);  // errno is not part of kiln's semantics
  fn->addFnAttr(llvm::Attribute::WillReturn);
  return fn;
}

std::unique_ptr<llvm::Module> build_optimized_module(const std::vector<LoweredFunc>& funcs, const Target& target,
                                                     llvm::LLVMContext& ctx, llvm::TargetMachine& tm) {
  CodeGenLLVM cg(ctx, target, tm);
  std::unique_ptr<llvm::Module> module = cg.compile(funcs);
  llvm_support::set_function_target_attributes(*module, target);
  llvm_support::optimize_module(*module, tm);
  return module;
}

}  // namespace kiln
