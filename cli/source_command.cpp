// `kiln source WORKLOAD [--db F] [--config JSON] [--llvm|--asm|--ptx]`: prints the generated LLVM IR
// (default) or assembly for an llvm target; the CUDA C (default) or, with
// --ptx, NVRTC's PTX and each kernel's registers, spills and shared memory
// for a cuda target.
#include <iostream>

#include "cli/commands.h"
#include "tasks/kernel_build.h"
#include "codegen/build.h"
#include "codegen/cuda_codegen.h"
#include "codegen/nvrtc.h"
#include "base/error.h"

namespace kiln::cli {

Handler add_source_command(CLI::App& app) {
  auto* sub = app.add_subcommand("source", "print the generated LLVM IR or assembly of a workload");
  auto workload = std::make_shared<std::string>();
  auto target = std::make_shared<std::string>();
  auto db = std::make_shared<std::string>();
  auto config = std::make_shared<std::string>();
  auto llvm = std::make_shared<bool>(false);
  auto asm_ = std::make_shared<bool>(false);
  auto ptx = std::make_shared<bool>(false);
  sub->add_option("workload", *workload, "e.g. matmul:M=1024,N=1024,K=1024")->required();
  sub->add_option("--target", *target, "target string (default: this machine)");
  sub->add_option("--db", *db, "use the best tuned config of this database (else the template's default)");
  sub->add_option("--config", *config,
                  "knob values as a JSON object; knobs not named keep the database's or the default's values");
  auto* l = sub->add_flag("--llvm", *llvm, "print optimized LLVM IR (the default)");
  auto* a = sub->add_flag("--asm", *asm_, "print assembly");
  auto* p = sub->add_flag("--ptx", *ptx, "cuda targets: print NVRTC's PTX and the kernels' resource use");
  l->excludes(a);
  p->excludes(l);
  p->excludes(a);
  return [=]() {
    BuiltKernel k = build_kernel(*workload, *target, *db, *config);
    if (k.target.is_cuda()) {
      user_check(!*llvm && !*asm_) << "--llvm and --asm are for llvm targets; a cuda target prints CUDA C (or --ptx)";
      CudaSource src = emit_cuda(k.func, k.gpu);
      if (!*ptx) {
        std::cout << src.code;
        return 0;
      }
      NvrtcOutput out = nvrtc_compile(src.code, src.function + ".cu", k.gpu.arch);
      std::cout << out.ptx;
      for (auto& r : out.resources)
        std::cout << "// " << r.kernel << ": " << r.registers << " registers, " << r.spill_store_bytes
                  << " bytes spill stores, " << r.spill_load_bytes << " bytes spill loads, " << r.shared_bytes
                  << " bytes shared memory\n";
      return 0;
    }
    user_check(!*ptx) << "--ptx is for cuda targets";
    if (*asm_)
      std::cout << emit_assembly({k.func}, k.target);
    else
      std::cout << emit_llvm_ir({k.func}, k.target);
    return 0;
  };
}

}  // namespace kiln::cli
