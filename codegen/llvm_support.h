// LLVM plumbing shared by the codegen files (internal header: it exposes LLVM
// types, so only codegen/*.cpp include it): one-time target initialization,
// TargetMachine creation, the optimization pipeline and machine-code emission.
#pragma once

#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>
#include <vector>

#include "codegen/target.h"

namespace kiln {
namespace llvm_support {

// Registers every target LLVM was built with (info, target, MC, asm printer
// and parser). Thread-safe; runs once.
void initialize_llvm();

// The backend for `triple`, or nullptr with *error set.
const llvm::Target* lookup_target(const std::string& triple, std::string* error);

// Subtarget description of (triple, cpu, attrs); the triple must be known.
std::unique_ptr<llvm::MCSubtargetInfo> create_subtarget_info(const std::string& triple, const std::string& cpu,
                                                             const std::string& attrs);

// A TargetMachine for an llvm Target: PIC, aggressive codegen optimization.
std::unique_ptr<llvm::TargetMachine> create_target_machine(const Target& target);

// Sets target-cpu / target-features (and prefer-vector-width for AVX-512) on
// every function definition of the module.
void set_function_target_attributes(llvm::Module& module, const Target& target);

// Runs the new pass manager's O3 pipeline using tm's cost model.
void optimize_module(llvm::Module& module, llvm::TargetMachine& tm);

enum class FileKind { kAssembly, kObject };
std::vector<char> emit_machine_code(llvm::Module& module, llvm::TargetMachine& tm, FileKind kind);

// Verifies the module; a failure is a kiln bug (internal error with LLVM's report).
void verify_module(const llvm::Module& module);

}  // namespace llvm_support
}  // namespace kiln
