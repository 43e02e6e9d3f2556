#include "bench/kiln_alternatives.h"

#include "base/error.h"
#include "codegen/build.h"
#include "codegen/runtime_dtype.h"
#include "tasks/kernel_build.h"

namespace kiln {

struct AlternativeRun::Impl {
  std::vector<std::unique_ptr<JitModule>> jits;
  std::vector<rt::NDArray> prepared;
  kiln_packed_fn kernel = nullptr;
  std::vector<void*> kernel_args;
};

namespace {

// A built step JIT-compiled (the module kept in `jits`): its entry point.
kiln_packed_fn compile_step(const BuiltKernel& k, std::vector<std::unique_ptr<JitModule>>* jits) {
  jits->push_back(JitModule::compile({k.func}, k.target));
  return jits->back()->get_function(k.func.name);
}

}  // namespace

AlternativeRun::AlternativeRun(const OpAlternative& a, const std::vector<rt::NDArray>& inputs, const rt::NDArray& out,
                               const std::string& db)
    : impl_(std::make_unique<Impl>()), name_(a.name), workload_(a.kernel.workload) {
  for (const UnfusedStep& step : a.prepare) {
    BuiltKernel k = build_kernel(step.workload, "", db);
    kiln_packed_fn fn = compile_step(k, &impl_->jits);
    const BufferArg& o = k.func.args.back();
    rt::NDArray result = rt::NDArray::empty(o.shape, to_runtime_dtype(o.dtype));
    std::vector<void*> p;
    for (int in : step.inputs) p.push_back(inputs.at(static_cast<size_t>(in)).data());
    p.push_back(result.data());
    internal_assert(p.size() == k.func.args.size()) << "prepare step " << step.workload << " takes "
                                                    << k.func.args.size() << " arrays, not " << p.size();
    user_check(fn(p.data()) == 0) << "the prepare step " << step.workload << " of " << a.name << " failed";
    impl_->prepared.push_back(result);
  }
  BuiltKernel k = build_kernel(a.kernel.workload, "", db);
  config_source_ = k.config_source;
  config_ = k.config;
  impl_->kernel = compile_step(k, &impl_->jits);
  for (int in : a.kernel.inputs)
    impl_->kernel_args.push_back(in >= 0 ? inputs.at(static_cast<size_t>(in)).data()
                                         : impl_->prepared.at(static_cast<size_t>(-1 - in)).data());
  impl_->kernel_args.push_back(out.data());
  internal_assert(impl_->kernel_args.size() == k.func.args.size())
      << "alternative " << a.name << " passes " << impl_->kernel_args.size() << " arrays to a kernel of "
      << k.func.args.size();
  run();
}

AlternativeRun::~AlternativeRun() = default;

void AlternativeRun::run() { impl_->kernel(impl_->kernel_args.data()); }

std::string AlternativeRun::impl() const { return "kiln " + workload_ + " (" + config_source_ + " config)"; }

}  // namespace kiln
