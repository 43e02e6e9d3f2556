// Runs an imported network on this CPU, or on a GPU (a cuda target): every
// node that does not fold is compiled by kiln (graph/node_schedules.h: its
// operator family's template, with the best tuned record of a database when
// there is one, else the template's default; a generic schedule for the
// rest), and its intermediate tensors share buffers by lifetime (in device
// memory on a GPU, graph/gpu_network.h).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compute/function.h"
#include "graph/graph.h"
#include "graph/passes.h"
#include "graph/shape_inference.h"
#include "runtime/ndarray.h"
#include "runtime/time_evaluator.h"

namespace kiln {
class JitModule;
}

namespace kiln::graph {
class GpuNetwork;
}

namespace kiln::graph {

struct ExecutorOptions {
  std::string db_path;  // tuning database ("" for none)
  bool optimize = true; // run graph/passes.h first
  bool plan_layouts = true;  // then graph/layout_planning.h (with optimize)
  bool fuse = true;     // fuse element-wise chains into one kernel
  bool jit = true;      // compile the kernels for this process (false: the plan only, kiln lib --model)
  // Target string: "" is this machine; a cuda target runs on the first GPU
  // (without layout planning or packed weights: those are the CPU
  // templates').
  std::string target;
};

// One compiled node of the plan.
struct PlanStep {
  int node = -1;             // index into Graph::nodes
  std::string kernel;        // function name in the module (shared by identical kernels)
  std::string workload;      // the operator family's workload, "" for a generic schedule
  std::string config_source; // "database", "default" or "generic"
  std::vector<int> args;     // value ids: inputs read, then outputs
  int fused_nodes = 1;       // nodes computed by this kernel (element-wise chains fuse)
};

struct MemoryPlan {
  int64_t peak_bytes = 0;           // sum of the shared buffers
  int64_t intermediate_bytes = 0;   // sum of every tensor the network computes
  int buffers = 0;
};

class Executor {
 public:
  // Infers shapes, folds constants and compiles. user_error on a node kiln
  // cannot compute (graph/onnx_ops.h) or a database it cannot read.
  Executor(Graph g, const ExecutorOptions& options);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  const Graph& graph() const { return g_; }
  const std::vector<PlanStep>& steps() const { return steps_; }
  const MemoryPlan& memory() const { return memory_; }
  int distinct_kernels() const { return distinct_kernels_; }
  int folded_nodes() const;
  const PassStats& pass_stats() const { return pass_stats_; }
  // The runtime element type of graph input `value`.
  rt::DataType input_dtype(int value) const;
  double compile_seconds() const { return compile_seconds_; }

  // The plan as data (kiln lib --model): the distinct kernels (PlanStep::kernel
  // names them), the shared buffers' sizes, and the buffer holding a value
  // (-1 for graph inputs and constants). Step arguments and output_values()
  // are storage roots: a view is its input's value.
  const std::vector<LoweredFunc>& kernels() const { return funcs_; }
  const std::vector<int64_t>& buffer_bytes() const { return slot_bytes_; }
  int buffer_of(int value) const { return buffer_of_[static_cast<size_t>(value)]; }
  const std::vector<int>& output_values() const { return outputs_root_; }

  // Copies the inputs in (in Graph::inputs order; shape and element type
  // must match: user_error otherwise), runs every step, copies the outputs out.
  std::vector<rt::NDArray> run(const std::vector<rt::NDArray>& inputs);
  // Runs the steps on the inputs of the last run() (for timing).
  void run_again();
  // Times run_again() (rt::time_function; on a GPU, CUDA events around the
  // launches, rt::cuda::time_enqueued).
  rt::TimeResult time(const rt::TimeOptions& options);
  // The median latency of each step alone (after one whole run), in steps() order.
  std::vector<double> time_steps(const rt::TimeOptions& options);
  // Whether the network runs on a GPU, and that GPU's name ("" on a CPU).
  bool on_gpu() const { return gpu_ != nullptr; }
  std::string device_name() const;

 private:
  // Element-wise fusion: which nodes another node's kernel computes, and the
  // rebuilt computation of each node that absorbed others.
  struct FusedGroup {
    NodeCompute compute;
    std::vector<std::pair<Tensor, int>> feeds;  // placeholder -> value it reads
    int members = 0;
  };
  struct FusedGroups {
    std::vector<bool> absorbed;
    std::map<int, FusedGroup> groups;
  };
  bool fusable(size_t node) const;
  FusedGroups fuse_elementwise() const;
  void* address(int value) const;
  uint64_t device_address(int value) const;
  void plan_memory();
  void place_on_gpu();

  Graph g_;
  InferredGraph inferred_;
  std::vector<PlanStep> steps_;
  std::vector<void*> step_fns_;
  std::vector<std::vector<void*>> step_ptrs_;
  std::unique_ptr<JitModule> jit_;
  std::unique_ptr<GpuNetwork> gpu_;
  std::vector<int> owned_gpu_, slot_gpu_;  // device buffers of owned_ and of the shared buffers
  std::vector<LoweredFunc> funcs_;
  std::vector<int64_t> slot_bytes_;
  // Storage: per value, the array holding it (constants and inputs own
  // theirs; intermediates point into a shared buffer) and a byte offset.
  std::vector<rt::NDArray> buffers_;
  std::vector<int> buffer_of_;
  std::vector<rt::NDArray> owned_;
  std::vector<int> owned_of_;
  std::vector<int> outputs_root_;  // per graph output, the value holding it
  MemoryPlan memory_;
  PassStats pass_stats_;
  int distinct_kernels_ = 0;
  double compile_seconds_ = 0;
};

}  // namespace kiln::graph
