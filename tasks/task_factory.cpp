#include "tasks/task_factory.h"

#include <cstring>
#include <random>

#include "tasks/kernel_build.h"
#include "tasks/reference_check.h"
#include "codegen/runtime_dtype.h"
#include "base/error.h"
#include "compute/interpreter.h"
#include "runtime/ndarray.h"

namespace kiln {

namespace {

constexpr int kReferencePoints = 512;

std::vector<ReferenceSample> reference_samples(const OpInstance& op, uint64_t seed) {
  std::vector<std::pair<Tensor, HostTensor>> inputs;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const Tensor& t = op.inputs[i];
    std::vector<int64_t> shape;
    for (auto& e : t.shape()) shape.push_back(*as_const_int(e));
    rt::NDArray arr = rt::NDArray::empty(shape, to_runtime_dtype(t.dtype()));
    arr.fill_random(seed + i);  // exactly what the runner feeds the kernel
    HostTensor h(t.dtype(), shape);
    std::memcpy(h.bytes.data(), arr.data(), arr.nbytes());
    inputs.emplace_back(t, h);
  }
  std::vector<ReferenceSample> out;
  std::mt19937_64 rng(seed);
  for (size_t o = 0; o < op.outputs.size(); ++o) {
    const Tensor& t = op.outputs[o];
    std::vector<int64_t> shape;
    int64_t n = 1;
    for (auto& e : t.shape()) {
      shape.push_back(*as_const_int(e));
      n *= shape.back();
    }
    ReferenceSample s;
    s.output = static_cast<int>(o);
    s.tolerance = reference_tolerance(t.dtype());
    std::vector<std::vector<int64_t>> points;
    // First and last elements (tails), then random ones.
    for (int64_t p = 0; p < std::min<int64_t>(n, kReferencePoints); ++p) {
      int64_t flat = p == 0 ? 0 : (p == 1 ? n - 1 : std::uniform_int_distribution<int64_t>(0, n - 1)(rng));
      s.flat_index.push_back(flat);
      std::vector<int64_t> idx(shape.size());
      for (size_t d = shape.size(); d-- > 0;) {
        idx[d] = flat % shape[d];
        flat /= shape[d];
      }
      points.push_back(idx);
    }
    HostTensor values = interpret_at(t, inputs, points);
    for (size_t p = 0; p < points.size(); ++p) s.expected.push_back(values.get_float(static_cast<int64_t>(p)));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

Task make_task(const std::string& workload, const Target& target, bool with_reference) {
  OpInstance op = build_workload(workload);
  const OpDef& def = find_op(op.op);
  CpuInfo cpu = cpu_info_for(target);
  Task task;
  task.workload = op.canonical;
  task.op = op.op;
  task.target = target.str();
  task.flops = op.flops;
  task.space = def.define_space ? def.define_space(op, cpu) : nullptr;
  user_check(task.space && task.space->size() > 1)
      << "op '" << op.op << "' has no tunable template (tunable ops: matmul, conv2d)";
  std::string name = "kiln_" + op.op;
  task.instantiate = [op, &def, name](const Config& c, LowerDepth depth) {
    ScheduledOp so = def.apply_config(op, c);
    return lower(*so.schedule, so.args, name, depth);
  };
  for (const Tensor& t : op.args()) {
    BufferArg a{Var::handle(t.name(), t.dtype()), t.name(), t.dtype(), {}};
    for (auto& e : t.shape()) a.shape.push_back(*as_const_int(e));
    task.args.push_back(a);
  }
  task.num_inputs = op.inputs.size();
  task.input_seed = 1;
  if (with_reference) task.reference = reference_samples(op, task.input_seed);
  return task;
}

ScheduledOp apply_task_config(const std::string& workload, const Target& target, const nlohmann::json& config) {
  OpInstance op = build_workload(workload);
  const OpDef& def = find_op(op.op);
  user_check(def.define_space) << "op '" << op.op << "' has no tunable template";
  auto space = def.define_space(op, cpu_info_for(target));
  return def.apply_config(op, space->from_json(config));
}

}  // namespace kiln
