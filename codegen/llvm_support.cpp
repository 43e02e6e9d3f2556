// LLVM plumbing: target initialization, TargetMachine creation, the O3
// pipeline and machine-code emission (see llvm_support.h).
#include "codegen/llvm_support.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/Triple.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CodeGen.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>

#include <mutex>

#include "base/error.h"

namespace kiln {
namespace llvm_support {

// Every backend linked into kiln: cmake/kiln_llvm.cmake links those named by
// KILN_LLVM_TARGETS and stubs out the others' initializers, which then
// register nothing.
void initialize_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
    llvm::InitializeAllAsmParsers();
    // Loop strength reduction off. kiln's kernels spell their address
    // arithmetic out (unrolled register tiles, partitioned borders), and
    // LLVM 14's LSR is superlinear in the address streams of a loop: 99% of
    // a clipped-border conv2d_nchwc config's 6.5 s of code generation, 0.06 s
    // without it. The option is LLVM's own (-disable-lsr), set once here as
    // a command line would; every compile in the tests fails if an LLVM
    // without it is linked.
    llvm::StringMap<llvm::cl::Option*>& options = llvm::cl::getRegisteredOptions();
    auto it = options.find("disable-lsr");
    internal_assert(it != options.end()) << "this LLVM has no -disable-lsr option";
    static_cast<llvm::cl::opt<bool>*>(it->second)->setValue(true);
  });
}

const llvm::Target* lookup_target(const std::string& triple, std::string* error) {
  initialize_llvm();
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, *error);
  if (t == nullptr && llvm::Triple(triple).getArch() != llvm::Triple::UnknownArch) {
    // An architecture LLVM knows whose backend this kiln does not link (the
    // KILN_LLVM_TARGETS build option, cmake/kiln_llvm.cmake).
    std::string names;
    for (const llvm::Target& known : llvm::TargetRegistry::targets()) {
      names += (names.empty() ? "" : ", ") + std::string(known.getName());
    }
    *error = "this kiln is built without LLVM's " + llvm::Triple(triple).getArchName().str() +
             " backend; it has " + names + " (build with -DKILN_LLVM_TARGETS=all for every backend)";
  }
  return t;
}

std::unique_ptr<llvm::MCSubtargetInfo> create_subtarget_info(const std::string& triple, const std::string& cpu,
                                                             const std::string& attrs) {
  std::string error;
  const llvm::Target* t = lookup_target(triple, &error);
  internal_assert(t != nullptr) << "triple " << triple << " was validated: " << error;
  return std::unique_ptr<llvm::MCSubtargetInfo>(t->createMCSubtargetInfo(triple, cpu, attrs));
}

namespace {
// kiln spells "the triple's baseline CPU" as `generic`; LLVM spells it as
// an empty name (some backends, e.g. RISC-V, abort on "generic").
std::string llvm_cpu_name(const Target& target) { return target.cpu == "generic" ? "" : target.cpu; }
}  // namespace

std::unique_ptr<llvm::TargetMachine> create_target_machine(const Target& target) {
  internal_assert(target.kind == "llvm") << "LLVM target machine for a " << target.kind << " target";
  std::string error;
  const llvm::Target* t = lookup_target(target.triple, &error);
  user_check(t != nullptr) << "target '" << target.str() << "': LLVM has no backend for triple '" << target.triple
                           << "' (" << error << ")";
  llvm::TargetOptions options;
  // Fusing a*b+c into an FMA is decided per instruction by the `contract`
  // fast-math flag that codegen sets; nothing else is relaxed globally.
  options.AllowFPOpFusion = llvm::FPOpFusion::Standard;
  llvm::TargetMachine* tm = t->createTargetMachine(target.triple, llvm_cpu_name(target), target.attrs, options,
                                                   llvm::Reloc::PIC_, llvm::None, llvm::CodeGenOpt::Aggressive);
  internal_assert(tm != nullptr) << "cannot create a target machine for " << target.str();
  return std::unique_ptr<llvm::TargetMachine>(tm);
}

void set_function_target_attributes(llvm::Module& module, const Target& target) {
  const bool avx512 = target.vector_bits() >= 512;
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    if (!llvm_cpu_name(target).empty()) f.addFnAttr("target-cpu", llvm_cpu_name(target));
    if (!target.attrs.empty()) f.addFnAttr("target-features", target.attrs);
    // Many x86 CPUs default to 256-bit vectors in the loop vectorizer; kiln's
    // schedules vectorize explicitly at 512 bits, so let LLVM do the same.
    if (avx512) f.addFnAttr("prefer-vector-width", "512");
  }
}

void optimize_module(llvm::Module& module, llvm::TargetMachine& tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  // Vectorization and unrolling are schedule decisions (the tuner searches
  // them); LLVM redoing them cost ~6x compile time per candidate (1.4 s vs
  // 0.2 s on matmul 512^3 configs) and no kernel speed (bench_core).
  pto.LoopVectorization = false;
  pto.SLPVectorization = false;
  pto.LoopUnrolling = false;
  llvm::PassBuilder pb(&tm, pto);
  // Lets the optimizer know which libm functions exist on the target.
  llvm::TargetLibraryInfoImpl tlii(llvm::Triple(module.getTargetTriple()));
  // No loop becomes a memcpy or memset call: the copies a schedule makes are
  // tile-sized, and the calls were slower than the loops (a padded copy's
  // rows as memcpy made the AMX 3x3 convolutions 1.1-1.2x slower).
  for (llvm::LibFunc f : {llvm::LibFunc_memcpy, llvm::LibFunc_memmove, llvm::LibFunc_memset})
    tlii.setUnavailable(f);
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);  // includes TargetIRAnalysis from tm (the cost model)
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
}

std::vector<char> emit_machine_code(llvm::Module& module, llvm::TargetMachine& tm, FileKind kind) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  const auto type = kind == FileKind::kObject ? llvm::CGFT_ObjectFile : llvm::CGFT_AssemblyFile;
  internal_assert(!tm.addPassesToEmitFile(pm, os, nullptr, type)) << "target cannot emit this file type";
  pm.run(module);
  return std::vector<char>(buffer.begin(), buffer.end());
}

void verify_module(const llvm::Module& module) {
  std::string report;
  llvm::raw_string_ostream os(report);
  if (llvm::verifyModule(module, &os)) {
    os.flush();
    std::string ir;
    llvm::raw_string_ostream irs(ir);
    module.print(irs, nullptr);
    irs.flush();
    internal_error() << "generated LLVM IR does not verify: " << report << "\n" << ir;
  }
}

}  // namespace llvm_support
}  // namespace kiln
