// Library objects and static archives (see static_library.h).
#include "codegen/static_library.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/Object/ArchiveWriter.h>
#include <llvm/Support/Error.h>

#include "codegen/build.h"
#include "codegen/llvm_codegen.h"
#include "codegen/llvm_support.h"
#include "base/error.h"
#include "runtime/c_api.h"

namespace kiln {
namespace {

std::string error_text(llvm::Error e) {
  std::string text;
  llvm::handleAllErrors(std::move(e), [&](const llvm::ErrorInfoBase& info) { text += info.message(); });
  return text;
}

}  // namespace

std::vector<char> emit_library_object(const std::vector<LoweredFunc>& funcs, const Target& target,
                                      const std::string& parallel_for_slot) {
  user_check(target.kind == "llvm") << "the llvm backend cannot compile for target '" << target.str() << "' (kind "
                                    << target.kind << ")";
  user_check(is_c_identifier(parallel_for_slot))
      << "parallel-for slot name '" << parallel_for_slot << "' is not a valid C identifier";
  llvm::LLVMContext ctx;
  auto tm = llvm_support::create_target_machine(target);
  auto module = build_optimized_module(funcs, target, ctx, *tm);

  llvm::GlobalVariable* slot = module->getGlobalVariable(KILN_PARALLEL_FOR_SLOT);
  internal_assert(slot != nullptr) << "generated module has no " << KILN_PARALLEL_FOR_SLOT << " slot";
  internal_assert(module->getNamedValue(parallel_for_slot) == nullptr)
      << "slot name '" << parallel_for_slot << "' is already used in the module";
  slot->setName(parallel_for_slot);
  slot->setInitializer(nullptr);  // a declaration: the library's runtime defines it
  slot->setLinkage(llvm::GlobalValue::ExternalLinkage);
  slot->setVisibility(llvm::GlobalValue::HiddenVisibility);
  slot->setDSOLocal(true);
  // A library's kernels allocate their large buffers with aligned_alloc:
  // the workspace slots stay null, private to the object (so that two kiln
  // libraries link into one program).
  for (const char* name : {KILN_WORKSPACE_ALLOC_SLOT, KILN_WORKSPACE_FREE_SLOT})
    if (llvm::GlobalVariable* ws = module->getGlobalVariable(name)) {
      ws->setLinkage(llvm::GlobalValue::InternalLinkage);
      ws->setVisibility(llvm::GlobalValue::DefaultVisibility);
    }
  for (const LoweredFunc& f : funcs) {
    llvm::Function* entry = module->getFunction(f.name);
    internal_assert(entry != nullptr && !entry->isDeclaration()) << "kernel " << f.name << " has no entry point";
    entry->setVisibility(llvm::GlobalValue::HiddenVisibility);
    entry->setDSOLocal(true);
  }
  llvm_support::verify_module(*module);
  return llvm_support::emit_machine_code(*module, *tm, llvm_support::FileKind::kObject);
}

void write_static_archive(const std::string& archive_path, const std::vector<std::string>& object_paths) {
  std::vector<llvm::NewArchiveMember> members;
  std::vector<std::string> names;  // MemberName refers to these: no reallocation below
  names.reserve(object_paths.size());
  for (const std::string& path : object_paths) {
    auto member = llvm::NewArchiveMember::getFile(path, /*Deterministic=*/true);
    if (!member) user_error() << "cannot read object file '" << path << "': " << error_text(member.takeError());
    names.push_back(path.substr(path.find_last_of('/') + 1));
    member->MemberName = names.back();
    members.push_back(std::move(*member));
  }
  llvm::Error e = llvm::writeArchive(archive_path, members, /*WriteSymtab=*/true, llvm::object::Archive::K_GNU,
                                     /*Deterministic=*/true, /*Thin=*/false);
  if (e) user_error() << "cannot write archive '" << archive_path << "': " << error_text(std::move(e));
}

}  // namespace kiln
