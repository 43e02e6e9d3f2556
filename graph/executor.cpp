#include "graph/executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "base/error.h"
#include "codegen/build.h"
#include "codegen/runtime_dtype.h"
#include "compute/printer.h"
#include "graph/gpu_network.h"
#include "graph/node_schedules.h"
#include "graph/target_passes.h"
#include "tuner/database.h"

namespace kiln::graph {

namespace {

rt::NDArray array_for(const Value& v) { return rt::NDArray::empty(v.shape, to_runtime_dtype(v.dtype)); }

// Kernels are compiled once per distinct loop nest: the printed IR, under a
// common name, is the key.
std::string kernel_key(LoweredFunc f) {
  f.name = "kernel";
  return to_string(f);
}

}  // namespace

Executor::Executor(Graph g, const ExecutorOptions& options) : g_(std::move(g)) {
  const NodeTarget nt = NodeTarget::parse(options.target);
  if (nt.cuda() && options.jit) gpu_ = std::make_unique<GpuNetwork>(nt.target);
  user_check(nt.cuda() || !options.jit || nt.target.is_host())
      << "the network runs on this machine or its GPU; target '" << nt.target.str()
      << "' is neither (give no --target, or a cuda one)";
  if (options.optimize) {
    pass_stats_ = rewrite_for_target(g_, nt, options.plan_layouts);
  }
  inferred_ = infer_and_fold(g_);
  std::unique_ptr<Database> db;
  if (!options.db_path.empty()) db = Database::open_for_reading(options.db_path);

  // Values that are views of another (Reshape and friends) share its storage.
  std::vector<int> root(g_.values.size());
  for (size_t v = 0; v < root.size(); ++v) root[v] = static_cast<int>(v);

  FusedGroups fused;
  fused.absorbed.assign(g_.nodes.size(), false);
  if (options.fuse) fused = fuse_elementwise();

  std::vector<LoweredFunc>& funcs = funcs_;
  std::map<std::string, std::string> kernel_names;
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    if (inferred_.folded[i] || fused.absorbed[i]) continue;
    const Node& n = g_.nodes[i];
    const bool is_group = fused.groups.count(static_cast<int>(i)) > 0;
    const NodeCompute& c = is_group ? fused.groups.at(static_cast<int>(i)).compute : inferred_.computes[i];
    if (c.is_view && !g_.values[static_cast<size_t>(n.inputs[0])].constant) {
      root[static_cast<size_t>(n.outputs[0])] = root[static_cast<size_t>(n.inputs[0])];
      continue;
    }
    PlanStep step;
    step.node = static_cast<int>(i);
    ScheduledOp sched;
    if (is_group) {
      const FusedGroup& grp = fused.groups.at(static_cast<int>(i));
      std::vector<Tensor> ins;
      for (const auto& [t, v] : grp.feeds) {
        ins.push_back(t);
        step.args.push_back(v);
      }
      sched = schedule_generic(ins, c.outputs, nt);
      step.config_source = "generic";
      step.fused_nodes = grp.members;
    } else {
      if (c.op) {
        sched = schedule_op(*c.op, nt, db.get(), &step.config_source);
        // A node the family's template does not take (on a GPU) is no task.
        if (step.config_source != "generic") step.workload = c.op->canonical;
      } else {
        std::vector<Tensor> ins;
        for (const Tensor& t : c.inputs)
          if (t.defined()) ins.push_back(t);
        sched = schedule_generic(ins, c.outputs, nt);
        step.config_source = "generic";
      }
      for (size_t k = 0; k < c.inputs.size(); ++k)
        if (c.inputs[k].defined()) step.args.push_back(n.inputs[k]);
    }
    for (size_t k = 0; k < c.outputs.size(); ++k) step.args.push_back(n.outputs[k]);
    LoweredFunc f = lower_for(sched, nt, "kernel");
    const std::string key = kernel_key(f);
    auto it = kernel_names.find(key);
    if (it == kernel_names.end()) {
      // The op type in the kernel's (exported) name, as a C identifier:
      // kiln's own node types have a dot ("kiln.PadSpatial").
      f.name = "k" + std::to_string(funcs.size()) + "_" + c_identifier_chars(n.op_type);
      it = kernel_names.emplace(key, f.name).first;
      funcs.push_back(std::move(f));
    }
    step.kernel = it->second;
    steps_.push_back(std::move(step));
  }
  distinct_kernels_ = static_cast<int>(funcs.size());
  const auto t0 = std::chrono::steady_clock::now();
  if (!funcs.empty() && options.jit) {
    if (gpu_)
      gpu_->load(nt.gpu, funcs);
    else
      jit_ = JitModule::compile(funcs, nt.target);
  }
  compile_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Storage. Inputs and constants own theirs; computed tensors share buffers.
  owned_of_.assign(g_.values.size(), -1);
  buffer_of_.assign(g_.values.size(), -1);
  auto own = [&](int v) {
    if (owned_of_[static_cast<size_t>(v)] >= 0) return;
    const Value& val = g_.values[static_cast<size_t>(v)];
    rt::NDArray a = array_for(val);
    if (val.constant) std::memcpy(a.data(), val.constant->bytes.data(), val.constant->bytes.size());
    owned_of_[static_cast<size_t>(v)] = static_cast<int>(owned_.size());
    owned_.push_back(a);
  };
  for (int v : g_.inputs) own(v);
  for (const PlanStep& s : steps_)
    for (int v : s.args)
      if (g_.values[static_cast<size_t>(v)].constant) own(v);
  for (int v : g_.outputs)
    if (g_.values[static_cast<size_t>(v)].constant) own(v);
  // Aliases resolve to their root from here on.
  for (PlanStep& s : steps_)
    for (int& v : s.args) v = root[static_cast<size_t>(v)];
  outputs_root_.clear();
  for (int v : g_.outputs) outputs_root_.push_back(root[static_cast<size_t>(v)]);
  plan_memory();

  if (!options.jit) return;
  if (gpu_) {
    place_on_gpu();
    return;
  }
  for (const PlanStep& s : steps_) {
    step_fns_.push_back(reinterpret_cast<void*>(jit_->get_function(s.kernel)));
    std::vector<void*> ptrs;
    for (int v : s.args) ptrs.push_back(address(v));
    step_ptrs_.push_back(std::move(ptrs));
  }
}

Executor::~Executor() = default;

void Executor::place_on_gpu() {
  for (const rt::NDArray& a : owned_) {
    owned_gpu_.push_back(gpu_->allocate(a.nbytes()));
    gpu_->upload(owned_gpu_.back(), a.data(), a.nbytes());
  }
  for (int64_t b : slot_bytes_) slot_gpu_.push_back(gpu_->allocate(static_cast<size_t>(b)));
  for (const PlanStep& s : steps_) {
    std::vector<uint64_t> ptrs;
    for (int v : s.args) ptrs.push_back(device_address(v));
    gpu_->add_step(s.kernel, std::move(ptrs));
  }
}

uint64_t Executor::device_address(int v) const {
  if (owned_of_[static_cast<size_t>(v)] >= 0)
    return gpu_->address(owned_gpu_[static_cast<size_t>(owned_of_[static_cast<size_t>(v)])]);
  const int b = buffer_of_[static_cast<size_t>(v)];
  internal_assert(b >= 0) << "value '" << g_.values[static_cast<size_t>(v)].name << "' has no storage";
  return gpu_->address(slot_gpu_[static_cast<size_t>(b)]);
}

std::string Executor::device_name() const { return gpu_ ? gpu_->device().name : ""; }

bool Executor::fusable(size_t i) const {
  const NodeCompute& c = inferred_.computes[i];
  return !inferred_.folded[i] && !c.op && !c.is_view && !c.shape_only && c.outputs.size() == 1 &&
         g_.nodes[i].outputs.size() == 1;
}

Executor::FusedGroups Executor::fuse_elementwise() const {
  FusedGroups out;
  out.absorbed.assign(g_.nodes.size(), false);
  std::vector<int> producer(g_.values.size(), -1), readers(g_.values.size(), 0);
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    if (inferred_.folded[i]) continue;
    for (int v : g_.nodes[i].outputs) producer[static_cast<size_t>(v)] = static_cast<int>(i);
    for (int v : g_.nodes[i].inputs)
      if (v >= 0) ++readers[static_cast<size_t>(v)];
  }
  for (int v : g_.outputs) ++readers[static_cast<size_t>(v)];
  // A generic node's output that only the next generic node reads is
  // computed inside that node's kernel when the consumer reads each of its
  // elements once: it has as many elements as the consumer's output (an
  // element-wise chain), or the consumer reduces it. (A broadcast would
  // recompute it per use, and so would a convolution or product.)
  static const std::set<std::string> reductions = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
                                                   "GlobalAveragePool", "GlobalMaxPool"};
  // Consumers that read an input element more than once per output element.
  static const std::set<std::string> rereaders = {"Conv", "ConvTranspose", "MatMul", "Gemm", "Softmax", "LogSoftmax",
                                                  "MaxPool", "AveragePool", "Resize"};
  auto absorbable = [&](size_t consumer, int v) {
    const int p = v < 0 ? -1 : producer[static_cast<size_t>(v)];
    if (p < 0 || !fusable(static_cast<size_t>(p)) || readers[static_cast<size_t>(v)] != 1) return false;
    if (rereaders.count(g_.nodes[consumer].op_type)) return false;
    const int64_t in = g_.values[static_cast<size_t>(v)].num_elements();
    const int64_t out = g_.values[static_cast<size_t>(g_.nodes[consumer].outputs[0])].num_elements();
    return in == out || (in > out && reductions.count(g_.nodes[consumer].op_type));
  };
  std::vector<bool> has_absorbed(g_.nodes.size(), false);
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    if (!fusable(i)) continue;
    for (int v : g_.nodes[i].inputs)
      if (absorbable(i, v)) {
        out.absorbed[static_cast<size_t>(producer[static_cast<size_t>(v)])] = true;
        has_absorbed[i] = true;
      }
  }
  // Each group is rebuilt depth first, its nodes' placeholders named by
  // their order in the group, so that equal groups lower to equal kernels.
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    if (!has_absorbed[i] || out.absorbed[i]) continue;
    FusedGroup grp;
    int counter = 0;
    std::function<Tensor(size_t)> build = [&](size_t node) {
      const Node& n = g_.nodes[node];
      NodeInputs given;
      given.tensors.resize(n.inputs.size());
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const int v = n.inputs[k];
        if (v >= 0 && out.absorbed[static_cast<size_t>(std::max(producer[static_cast<size_t>(v)], 0))] &&
            absorbable(node, v))
          given.tensors[k] = build(static_cast<size_t>(producer[static_cast<size_t>(v)]));
      }
      given.prefix = "f" + std::to_string(counter++) + "_";
      NodeCompute c = node_compute(g_, n, given);
      for (size_t k = 0; k < n.inputs.size(); ++k)
        if (c.inputs[k].defined() && !given.tensors[k].defined()) grp.feeds.emplace_back(c.inputs[k], n.inputs[k]);
      ++grp.members;
      if (node == i) grp.compute = c;
      return c.outputs[0];
    };
    build(i);
    out.groups.emplace(static_cast<int>(i), std::move(grp));
  }
  return out;
}

int Executor::folded_nodes() const {
  return static_cast<int>(std::count(inferred_.folded.begin(), inferred_.folded.end(), true));
}

rt::DataType Executor::input_dtype(int value) const {
  return to_runtime_dtype(g_.values[static_cast<size_t>(value)].dtype);
}

void Executor::plan_memory() {
  // Lifetimes of computed tensors in steps: defined at the step writing
  // them, dead after the last step reading them (outputs live to the end).
  const int never = std::numeric_limits<int>::max();
  std::vector<int> last_use(g_.values.size(), -1);
  std::vector<int> defined_at(g_.values.size(), -1);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Node& n = g_.nodes[static_cast<size_t>(steps_[s].node)];
    const size_t num_outputs = inferred_.computes[static_cast<size_t>(steps_[s].node)].outputs.size();
    const std::vector<int>& args = steps_[s].args;
    for (size_t k = 0; k < args.size(); ++k) {
      last_use[static_cast<size_t>(args[k])] = static_cast<int>(s);
      if (k >= args.size() - num_outputs) defined_at[static_cast<size_t>(args[k])] = static_cast<int>(s);
    }
    (void)n;
  }
  for (int v : outputs_root_) last_use[static_cast<size_t>(v)] = never;

  std::vector<int64_t> slot_bytes;
  std::vector<bool> slot_free;
  std::vector<int> slot_of(g_.values.size(), -1);
  for (size_t s = 0; s < steps_.size(); ++s) {
    for (int v : steps_[s].args) {
      if (defined_at[static_cast<size_t>(v)] != static_cast<int>(s) || owned_of_[static_cast<size_t>(v)] >= 0 ||
          slot_of[static_cast<size_t>(v)] >= 0)
        continue;
      const int64_t bytes = std::max<int64_t>(g_.values[static_cast<size_t>(v)].bytes(), 1);
      memory_.intermediate_bytes += bytes;
      // The smallest free buffer that fits, else the largest free one grown.
      int best = -1, largest = -1;
      for (size_t b = 0; b < slot_bytes.size(); ++b) {
        if (!slot_free[b]) continue;
        if (slot_bytes[b] >= bytes && (best < 0 || slot_bytes[b] < slot_bytes[static_cast<size_t>(best)])) best = static_cast<int>(b);
        if (largest < 0 || slot_bytes[b] > slot_bytes[static_cast<size_t>(largest)]) largest = static_cast<int>(b);
      }
      if (best < 0 && largest >= 0) {
        best = largest;
        slot_bytes[static_cast<size_t>(best)] = bytes;
      }
      if (best < 0) {
        best = static_cast<int>(slot_bytes.size());
        slot_bytes.push_back(bytes);
        slot_free.push_back(false);
      }
      slot_free[static_cast<size_t>(best)] = false;
      slot_of[static_cast<size_t>(v)] = best;
    }
    for (int v : steps_[s].args)
      if (last_use[static_cast<size_t>(v)] == static_cast<int>(s) && slot_of[static_cast<size_t>(v)] >= 0)
        slot_free[static_cast<size_t>(slot_of[static_cast<size_t>(v)])] = true;
  }
  for (int64_t b : slot_bytes) {
    if (jit_) buffers_.push_back(rt::NDArray::empty({b}, rt::DataType::u8()));
    memory_.peak_bytes += b;
  }
  slot_bytes_ = slot_bytes;
  memory_.buffers = static_cast<int>(slot_bytes.size());
  buffer_of_ = slot_of;
}

void* Executor::address(int v) const {
  if (owned_of_[static_cast<size_t>(v)] >= 0) return owned_[static_cast<size_t>(owned_of_[static_cast<size_t>(v)])].data();
  const int b = buffer_of_[static_cast<size_t>(v)];
  internal_assert(b >= 0) << "value '" << g_.values[static_cast<size_t>(v)].name << "' has no storage";
  return buffers_[static_cast<size_t>(b)].data();
}

std::vector<rt::NDArray> Executor::run(const std::vector<rt::NDArray>& inputs) {
  internal_assert(jit_ || gpu_ || steps_.empty()) << "Executor::run on a plan built without the JIT";
  user_check(inputs.size() == g_.inputs.size())
      << "the network takes " << g_.inputs.size() << " inputs, got " << inputs.size();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = g_.values[static_cast<size_t>(g_.inputs[i])];
    rt::NDArray& dst = owned_[static_cast<size_t>(owned_of_[static_cast<size_t>(g_.inputs[i])])];
    user_check(inputs[i].shape() == v.shape && inputs[i].dtype() == dst.dtype())
        << "input '" << v.name << "' must be " << v.dtype.str() << " " << shape_str(v.shape) << ", got "
        << shape_str(inputs[i].shape());
    std::memcpy(dst.data(), inputs[i].data(), dst.nbytes());
    if (gpu_)
      gpu_->upload(owned_gpu_[static_cast<size_t>(owned_of_[static_cast<size_t>(g_.inputs[i])])], dst.data(),
                   dst.nbytes());
  }
  run_again();
  std::vector<rt::NDArray> outs;
  for (size_t k = 0; k < g_.outputs.size(); ++k) {
    const Value& v = g_.values[static_cast<size_t>(g_.outputs[k])];
    rt::NDArray a = array_for(v);
    const int root = outputs_root_[k];
    // Inputs and constants keep their host copy; computed outputs are on the GPU.
    if (gpu_ && owned_of_[static_cast<size_t>(root)] < 0)
      gpu_->download(slot_gpu_[static_cast<size_t>(buffer_of_[static_cast<size_t>(root)])], a.data(), a.nbytes());
    else
      std::memcpy(a.data(), address(root), a.nbytes());
    outs.push_back(a);
  }
  return outs;
}

rt::TimeResult Executor::time(const rt::TimeOptions& options) {
  if (gpu_) return gpu_->time(options);
  return rt::time_function([this] { run_again(); }, options);
}

std::vector<double> Executor::time_steps(const rt::TimeOptions& options) {
  run_again();
  std::vector<double> ms;
  if (gpu_) {
    for (size_t s = 0; s < steps_.size(); ++s) ms.push_back(gpu_->time_step(s, options).median_ms);
    return ms;
  }
  for (size_t s = 0; s < steps_.size(); ++s) {
    auto fn = reinterpret_cast<kiln_packed_fn>(step_fns_[s]);
    void** args = step_ptrs_[s].data();
    ms.push_back(rt::time_function([&] { fn(args); }, options).median_ms);
  }
  return ms;
}

void Executor::run_again() {
  if (gpu_) {
    gpu_->run();
    return;
  }
  for (size_t s = 0; s < steps_.size(); ++s) {
    auto fn = reinterpret_cast<kiln_packed_fn>(step_fns_[s]);
    const int32_t rc = fn(step_ptrs_[s].data());
    if (rc != 0) {
      const Node& n = g_.nodes[static_cast<size_t>(steps_[s].node)];
      throw std::runtime_error("the kernel of " + g_.describe(n) + " failed (code " + std::to_string(rc) +
                               "): out of memory or a failed parallel loop");
    }
  }
}

}  // namespace kiln::graph
