#include "tasks/task_factory.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

#include "tasks/kernel_build.h"
#include "tasks/reference_check.h"
#include "codegen/build.h"
#include "codegen/runtime_dtype.h"
#include "base/error.h"
#include "compute/interpreter.h"
#include "runtime/ndarray.h"
#include "runtime/process_util.h"
#include "schedule/lower.h"

namespace kiln {

namespace {

// Up to this much work (FLOPs) the interpreter computes a task's whole
// reference output; beyond it the op's default schedule does, itself checked
// against the interpreter on kCheckPoints sampled elements.
constexpr double kInterpretFlops = 5e7;
constexpr int kCheckPoints = 512;

// The task's inputs exactly as the runner fills them
// (rt::NDArray::fill_random(seed + i)), as host tensors for the interpreter.
std::vector<std::pair<Tensor, HostTensor>> task_inputs(const OpInstance& op, uint64_t seed) {
  std::vector<std::pair<Tensor, HostTensor>> inputs;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const Tensor& t = op.inputs[i];
    std::vector<int64_t> shape;
    for (auto& e : t.shape()) shape.push_back(*as_const_int(e));
    rt::NDArray arr = rt::NDArray::empty(shape, to_runtime_dtype(t.dtype()));
    arr.fill_random(seed + i);
    HostTensor h(t.dtype(), shape);
    std::memcpy(h.bytes.data(), arr.data(), arr.nbytes());
    inputs.emplace_back(t, h);
  }
  return inputs;
}

// The outputs of the op's default schedule on `inputs`, compiled for this
// machine and run in a forked child: the tuning process must stay
// single-threaded (it forks builders), and running a kernel starts the
// runtime's thread pool.
std::vector<HostTensor> default_schedule_outputs(const OpInstance& op,
                                                 const std::vector<std::pair<Tensor, HostTensor>>& inputs) {
  const OpDef& def = find_op(op.op);
  std::string error;
  proc::Child child = proc::fork_child(
      [&](int fd) {
        const CpuInfo cpu = cpu_info_for(Target::host());
        ScheduledOp so = def.apply_config(op, def.default_config(op, cpu, *def.define_space(op, cpu)));
        LoweredFunc f = lower(*so.schedule, so.args, "reference");
        auto jit = JitModule::compile({f}, Target::host());
        std::vector<rt::NDArray> arrays;
        std::vector<void*> ptrs;
        for (size_t i = 0; i < f.args.size(); ++i) {
          rt::NDArray a = rt::NDArray::empty(f.args[i].shape, to_runtime_dtype(f.args[i].dtype));
          if (i < inputs.size()) std::memcpy(a.data(), inputs[i].second.bytes.data(), a.nbytes());
          arrays.push_back(a);
          ptrs.push_back(a.data());
        }
        proc::Writer w;
        w.i64(jit->get_function(f.name)(ptrs.data()));
        for (size_t o = inputs.size(); o < arrays.size(); ++o)
          w.str(std::string(static_cast<const char*>(arrays[o].data()), arrays[o].nbytes()));
        proc::send_frame(fd, w.bytes());
      },
      &error);
  internal_assert(child.pid >= 0) << "cannot fork to compute a reference output: " << error;
  std::string reply;
  const proc::RecvStatus got = proc::recv_frame(child.fd, std::nullopt, &reply);
  ::close(child.fd);
  const int status = proc::reap(child.pid, proc::Clock::now() + std::chrono::seconds(10));
  internal_assert(got == proc::RecvStatus::kOk)
      << "the default schedule of " << op.canonical << " did not run to give a reference output (it "
      << proc::describe_status(status) << ")";
  proc::Reader in(reply);
  internal_assert(in.i64() == 0) << "the default schedule of " << op.canonical << " returned an error";
  std::vector<HostTensor> outs;
  for (const Tensor& t : op.outputs) {
    std::vector<int64_t> shape;
    for (auto& e : t.shape()) shape.push_back(*as_const_int(e));
    HostTensor h(t.dtype(), shape);
    const std::string bytes = in.str();
    internal_assert(bytes.size() == h.bytes.size()) << "reference output of the wrong size";
    std::memcpy(h.bytes.data(), bytes.data(), bytes.size());
    outs.push_back(std::move(h));
  }
  return outs;
}

// Checks `outs` against the interpreter at sampled elements (first, last and
// random ones): a wrong default schedule must not become the reference.
void check_against_interpreter(const OpInstance& op, const std::vector<std::pair<Tensor, HostTensor>>& inputs,
                               const std::vector<HostTensor>& outs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t o = 0; o < op.outputs.size(); ++o) {
    const HostTensor& h = outs[o];
    const int64_t n = h.num_elements();
    std::vector<int64_t> flat;
    std::vector<std::vector<int64_t>> points;
    for (int64_t p = 0; p < std::min<int64_t>(n, kCheckPoints); ++p) {
      int64_t f = p == 0 ? 0 : (p == 1 ? n - 1 : std::uniform_int_distribution<int64_t>(0, n - 1)(rng));
      flat.push_back(f);
      std::vector<int64_t> idx(h.shape.size());
      for (size_t d = h.shape.size(); d-- > 0;) {
        idx[d] = f % h.shape[d];
        f /= h.shape[d];
      }
      points.push_back(idx);
    }
    const HostTensor want = interpret_at(op.outputs[o], inputs, points);
    const double tol = reference_tolerance(h.dtype);
    for (size_t p = 0; p < points.size(); ++p) {
      const double w = want.get_float(static_cast<int64_t>(p)), g = h.get_float(flat[p]);
      const bool same = std::isnan(w) ? std::isnan(g) : std::fabs(g - w) <= tol * (1 + std::fabs(w));
      internal_assert(same) << "the default schedule of " << op.canonical << " gives " << g << " at element "
                            << flat[p] << " of " << op.outputs[o].name() << ", the interpreter " << w;
    }
  }
}

// The whole reference output of each of the op's outputs for the task's
// inputs: every candidate is compared with it element by element.
std::vector<ReferenceSample> reference_outputs(const OpInstance& op, uint64_t seed) {
  const auto inputs = task_inputs(op, seed);
  std::vector<HostTensor> outs;
  if (op.flops <= kInterpretFlops) {
    outs = interpret(op.outputs, inputs);
  } else {
    outs = default_schedule_outputs(op, inputs);
    check_against_interpreter(op, inputs, outs, seed);
  }
  std::vector<ReferenceSample> refs;
  for (size_t o = 0; o < outs.size(); ++o) {
    ReferenceSample r;
    r.output = static_cast<int>(o);
    r.tolerance = reference_tolerance(outs[o].dtype);
    r.expected.resize(static_cast<size_t>(outs[o].num_elements()));
    for (int64_t k = 0; k < outs[o].num_elements(); ++k) r.expected[static_cast<size_t>(k)] = outs[o].get_float(k);
    refs.push_back(std::move(r));
  }
  return refs;
}

}  // namespace

Task make_task(const std::string& workload, const Target& target, bool with_reference) {
  OpInstance op = build_workload(workload);
  const OpDef& def = find_op(op.op);
  Task task;
  task.workload = op.canonical;
  task.op = op.op;
  task.target = target.str();
  task.flops = op.flops;
  std::string name = "kiln_" + op.op;
  if (target.is_cuda()) {
    // The template's knobs for the GPU's (or the architecture's) limits;
    // candidates lowered for it. Whether they can be measured here is the
    // caller's question (a local GPU, or a device pool).
    const GpuTemplate& gpu = gpu_template_of(def);
    const GpuLimits limits = gpu_limits_for(target);
    task.space = gpu.define_space(op, limits);
    user_check(task.space->size() > 1) << "op '" << op.op << "' has a single cuda config: nothing to tune";
    task.instantiate = [op, &gpu, name, limits](const Config& c, LowerDepth depth) {
      ScheduledOp so = gpu.apply_config(op, c);
      return lower_gpu(*so.schedule, so.args, name, limits, depth);
    };
  } else {
    CpuInfo cpu = cpu_info_for(target);
    task.space = def.define_space ? def.define_space(op, cpu) : nullptr;
    user_check(task.space && task.space->size() > 1)
        << "op '" << op.op << "' has no tunable template (tunable ops: matmul, conv2d)";
    task.instantiate = [op, &def, name](const Config& c, LowerDepth depth) {
      ScheduledOp so = def.apply_config(op, c);
      return lower(*so.schedule, so.args, name, depth);
    };
  }
  for (const Tensor& t : op.args()) {
    BufferArg a{Var::handle(t.name(), t.dtype()), t.name(), t.dtype(), {}};
    for (auto& e : t.shape()) a.shape.push_back(*as_const_int(e));
    task.args.push_back(a);
  }
  task.num_inputs = op.inputs.size();
  task.input_seed = 1;
  if (with_reference) task.reference = reference_outputs(op, task.input_seed);
  return task;
}

ScheduledOp apply_task_config(const std::string& workload, const Target& target, const nlohmann::json& config) {
  OpInstance op = build_workload(workload);
  const OpDef& def = find_op(op.op);
  if (target.is_cuda()) {
    const GpuTemplate& gpu = gpu_template_of(def);
    auto space = gpu.define_space(op, gpu_limits_for(target));
    return gpu.apply_config(op, space->from_json(config));
  }
  user_check(def.define_space) << "op '" << op.op << "' has no tunable template";
  auto space = def.define_space(op, cpu_info_for(target));
  return def.apply_config(op, space->from_json(config));
}

void fix_task_knobs(Task* task, const std::string& fixed) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(fixed);
  } catch (const nlohmann::json::exception& e) {
    user_error() << "--fix '" << fixed << "' is not valid JSON: " << e.what();
  }
  user_check(j.is_object()) << "--fix takes a JSON object of knob values, e.g. '{\"prefetch\":0}', not " << j.dump();
  auto space = std::make_shared<ConfigSpace>(*task->space);
  for (auto it = j.begin(); it != j.end(); ++it) {
    try {
      space->pin(it.key(), it.value());
    } catch (const UserError& e) {
      user_error() << task->workload << ": " << e.what();
    }
  }
  task->space = space;
}

FeatureVector config_features(const Task& task, const Config& c) {
  return extract_features(task.instantiate(c, LowerDepth::kAnnotatedLoops));
}

}  // namespace kiln
