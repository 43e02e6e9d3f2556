// JitModule: host kernels compiled in-process with ORC's LLJIT (see build.h).
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/MC/SubtargetFeature.h>
#include <llvm/Support/Error.h>

#include <chrono>
#include <unordered_map>

#include "codegen/build.h"
#include "codegen/llvm_codegen.h"
#include "codegen/llvm_support.h"
#include "base/error.h"
#include "runtime/amx.h"
#include "runtime/workspace.h"

namespace kiln {
namespace {

std::string error_text(llvm::Error err) { return llvm::toString(std::move(err)); }

template <class T>
T check(llvm::Expected<T> v, const char* what) {
  if (!v) internal_error() << what << ": " << error_text(v.takeError());
  return std::move(*v);
}

}  // namespace

struct JitModule::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::vector<std::string> names;
  std::unordered_map<std::string, kiln_packed_fn> functions;
  double compile_ms = 0;
};

JitModule::JitModule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JitModule::~JitModule() = default;

std::unique_ptr<JitModule> JitModule::compile(const std::vector<LoweredFunc>& funcs, const Target& target) {
  const auto start = std::chrono::steady_clock::now();
  user_check(target.kind == "llvm" && target.is_host())
      << "the JIT runs code in this process, so it needs a host target; '" << target.str()
      << "' is not (use build_shared_object to cross-compile)";
  llvm_support::initialize_llvm();
  rt::request_amx_tiles();  // AMX-tensorized kernels run in this process

  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto tm = llvm_support::create_target_machine(target);
  std::unique_ptr<llvm::Module> module = build_optimized_module(funcs, target, *ctx, *tm);

  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(target.triple)};
  jtmb.setCPU(target.cpu);
  if (!target.attrs.empty()) {
    std::vector<std::string> features;
    llvm::SubtargetFeatures parsed(target.attrs);
    for (const std::string& f : parsed.getFeatures()) features.push_back(f);
    jtmb.addFeatures(features);
  }
  jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  jtmb.setRelocationModel(llvm::Reloc::PIC_);

  auto impl = std::make_unique<Impl>();
  impl->jit = check(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create(), "creating the JIT");
  llvm::orc::LLJIT& jit = *impl->jit;
  // libm and libc symbols (expf, tanhf, aligned_alloc, ...) come from this process.
  jit.getMainJITDylib().addGenerator(
      check(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit.getDataLayout().getGlobalPrefix()),
            "searching this process for symbols"));
  module->setDataLayout(jit.getDataLayout());
  if (llvm::Error err = jit.addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(ctx)))) {
    internal_error() << "adding the module to the JIT: " << error_text(std::move(err));
  }

  auto slot = check(jit.lookup(KILN_PARALLEL_FOR_SLOT), "looking up the parallel-for slot");
  *reinterpret_cast<void**>(slot.getAddress()) = reinterpret_cast<void*>(&kiln_parallel_for);
  auto alloc_slot = check(jit.lookup(KILN_WORKSPACE_ALLOC_SLOT), "looking up the workspace slots");
  auto free_slot = check(jit.lookup(KILN_WORKSPACE_FREE_SLOT), "looking up the workspace slots");
  rt::set_workspace_slots(reinterpret_cast<void*>(static_cast<uintptr_t>(alloc_slot.getAddress())),
                          reinterpret_cast<void*>(static_cast<uintptr_t>(free_slot.getAddress())));
  for (const LoweredFunc& f : funcs) {
    auto sym = check(jit.lookup(f.name), "looking up a kernel");
    impl->names.push_back(f.name);
    impl->functions[f.name] = reinterpret_cast<kiln_packed_fn>(static_cast<uintptr_t>(sym.getAddress()));
  }
  impl->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return std::unique_ptr<JitModule>(new JitModule(std::move(impl)));
}

kiln_packed_fn JitModule::get_function(const std::string& name) const {
  auto it = impl_->functions.find(name);
  user_check(it != impl_->functions.end()) << "the JIT module has no kernel named '" << name << "'";
  return it->second;
}

const std::vector<std::string>& JitModule::entry_points() const { return impl_->names; }

double JitModule::compile_ms() const { return impl_->compile_ms; }

}  // namespace kiln
