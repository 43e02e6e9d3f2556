// The operators kiln knows, listed explicitly (no static-initializer
// registration). Each op declares its parameters, builds its tensor
// expression from a workload, and provides a hand-written CPU schedule.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compute/tensor.h"
#include "kernels/workload.h"
#include "schedule/config_space.h"
#include "schedule/gpu_limits.h"
#include "schedule/schedule.h"

namespace kiln {

// What a schedule may assume about the CPU it targets.
struct CpuInfo {
  int vector_bits = 512;  // widest native vector register
  int num_threads = 2;    // cores the parallel loops run on
  // Instructions tensor intrinsics need (kernels/tensor_intrinsics.h).
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  bool amx_int8 = false;
  bool amx_bf16 = false;
};

struct OpParam {
  enum Kind { kInt, kDType, kFlag } kind;
  std::string name;
  std::string meaning;
  std::string default_value;  // empty: required
  int64_t min_value = 1;      // for kInt
  // Left out of the canonical workload string while it has its default
  // value: for parameters added to an op after databases already hold its
  // records, so their canonical strings (task keys) stay the same.
  bool omit_when_default = false;
};

// A built operator: its tensors and work.
struct OpInstance {
  std::string op;
  std::map<std::string, int64_t> ints;  // resolved integer parameters
  DType dtype = DType::f32();           // element type of the inputs
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  std::vector<Tensor> args() const;  // inputs then outputs
  double flops = 0;                  // arithmetic work (FMA = 2), padding included
  std::string canonical;             // canonical workload string (every parameter)
  // Tensors of interest to schedules, by role ("data_pad", "packed_B", ...).
  std::map<std::string, Tensor> parts;
};

// A schedule ready to lower: the graph may differ from the op's plain
// definition (e.g. a packed operand stage) but reads the same placeholders
// and computes the same values.
struct ScheduledOp {
  std::shared_ptr<Schedule> schedule;
  std::vector<Tensor> args;  // inputs (the instance's placeholders), then outputs
};

// One step of the unfused form of a fused op: a workload, and its inputs as
// input indices of the fused op (-1: the previous step's output).
struct UnfusedStep {
  std::string workload;
  std::vector<int> inputs;
};

// Another way to compute an op, with the same inputs and output (Winograd
// for a 3x3 convolution): steps that prepare constant inputs once, ahead of
// time (a weight transform, as weights are packed once), then the kernel
// that replaces the op. Input indices: >= 0 the op's inputs, -1 - p the
// output of prepare step p (in `kernel`; prepare steps read op inputs only).
struct OpAlternative {
  std::string name;  // "winograd_f4": shown in reports
  std::vector<UnfusedStep> prepare;
  UnfusedStep kernel;
};

// An op's tunable schedule template for cuda targets: its knobs for a
// built op on a GPU (sized by the architecture's limits), the default point,
// and the schedule of a config (lowered with lower_gpu).
struct GpuTemplate {
  std::function<std::shared_ptr<ConfigSpace>(const OpInstance&, const GpuLimits&)> define_space;
  std::function<Config(const OpInstance&, const GpuLimits&, const ConfigSpace&)> default_config;
  std::function<ScheduledOp(const OpInstance&, const Config&)> apply_config;
  bool defined() const { return static_cast<bool>(apply_config); }
};

struct OpDef {
  std::string name;
  std::string summary;
  std::vector<OpParam> params;
  std::function<OpInstance(const std::map<std::string, int64_t>&, DType)> build;
  // The one hand-written schedule of an op without a template (elemwise);
  // empty for ops with one.
  std::function<ScheduledOp(const OpInstance&, const CpuInfo&)> hand_schedule;
  // The tunable schedule template (empty for ops without one): its knobs
  // for a built op on a CPU, the hand-tuned point of that space (what
  // default_schedule applies), and the schedule of any config of the space
  // (user_error for a config the template rejects).
  std::function<std::shared_ptr<ConfigSpace>(const OpInstance&, const CpuInfo&)> define_space;
  std::function<Config(const OpInstance&, const CpuInfo&, const ConfigSpace&)> default_config;
  std::function<ScheduledOp(const OpInstance&, const Config&)> apply_config;

  // For an op that fuses others (dwsep_nchwc): the ops it replaces, run one
  // after the other, last output = this op's output. Empty for the others.
  std::function<std::vector<UnfusedStep>(const OpInstance&)> unfused;
  // The alternatives of an instance (none for most ops and shapes):
  // `kiln bench` tunes each and keeps the fastest per workload.
  std::function<std::vector<OpAlternative>(const OpInstance&)> alternatives;
  // The integer parameters that are tensor sizes (batch, channels, spatial
  // extents, matrix dimensions): workloads of an op that differ only in
  // these share tuning knowledge (tasks/neighbors.h). The others (kernel
  // window, stride, padding, blocking) and the flags must match. Empty:
  // every integer parameter that is not a flag is a size.
  std::vector<std::string> size_params;

  // The GPU template (undefined for ops that have none yet).
  GpuTemplate gpu;

  // The schedule kiln uses untuned: the template's default config, or the
  // hand schedule of an op without a template.
  ScheduledOp default_schedule(const OpInstance& op, const CpuInfo& cpu) const;
};

const std::vector<OpDef>& op_registry();
// The op named by the workload, or user_error listing the known ops.
const OpDef& find_op(const std::string& name);
// Parses and validates a workload string into a built op. user_error for
// an unknown op or parameter, a missing parameter, or a bad value.
OpInstance build_workload(const std::string& text);
OpInstance build_workload(const Workload& w);

}  // namespace kiln
