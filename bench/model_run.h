// `kiln run-model`: imports a network, compiles it with kiln
// (graph/executor.h), runs it on given or random inputs, times it, and with
// a baseline runs ONNX Runtime on the same inputs with the same thread count
// in its helper process, compares the outputs and times both interleaved,
// round by round.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/time_evaluator.h"

namespace kiln {

struct ModelRunOptions {
  std::string model;
  std::map<std::string, std::vector<int64_t>> input_shapes;  // --input NAME=SHAPE
  std::string db;                        // tuned records to use
  std::string target;                    // "" this machine; cuda: the first GPU (ONNX Runtime stays on the CPU)
  std::vector<std::string> in_files;     // raw input files: "FILE" (one input) or "NAME=FILE"
  std::string out_file;                  // the first output, raw ("" for none)
  bool compare_ort = false;
  bool plan_layouts = true;  // graph/layout_planning.h (false: every tensor stays NCHW)
  int samples = 1;    // random inputs compared (seeds seed .. seed+samples-1); the first is timed
  uint64_t seed = 1;
  bool time = true;
  int profile = 0;    // the N slowest kernels, each timed alone (0: none)
  int rounds = 3;     // interleaved timing rounds (kiln, then ONNX Runtime)
  rt::TimeOptions timing{1, 5, 100, 1, 0, false};
};

struct ModelOutputCheck {
  std::string name;
  std::vector<int64_t> shape;
  double min = 0, max = 0;        // kiln's output
  int64_t argmax = 0;             // flat index of kiln's largest element
  // Against ONNX Runtime (with compare_ort), over every sample:
  double max_abs_error = 0;       // largest |kiln - ort|
  double range = 0;               // ort's max - min (of the sample with the largest error)
  bool match = true;              // max_abs_error <= kTolerance * range on every sample
  int same_argmax = 0;            // samples where both pick the same largest element
};

struct ModelRunResult {
  int model_nodes = 0;  // before the graph passes
  int folded_affine = 0, fused_activations = 0, fused_biases = 0, packed_weights = 0, padded_inputs = 0;
  int gemm_conv_transposes = 0;                                      // graph/conv_transpose_gemm.h
  int blocked_convs = 0, blocked_nodes = 0, layout_conversions = 0;  // graph/layout_planning.h
  int nodes = 0, folded = 0, views = 0, steps = 0, distinct_kernels = 0;
  int fused_elementwise = 0;  // nodes computed inside another node's kernel
  int tuned_steps = 0, default_steps = 0, generic_steps = 0;
  double compile_s = 0;
  int64_t peak_bytes = 0, intermediate_bytes = 0;
  int buffers = 0, threads = 1, samples = 1;
  std::string device;  // the GPU's name with a cuda target ("" on the CPU)
  std::vector<ModelOutputCheck> outputs;
  std::optional<rt::TimeResult> kiln_time, ort_time;
  std::string ort_version;
  struct StepTime {
    std::string node, op_type, workload, config_source;
    int fused_nodes = 1;
    double ms = 0;
  };
  std::vector<StepTime> profile;  // slowest first
  double profile_total_ms = 0;    // every kernel's time alone, summed
  bool match = true;
};

// The tolerance of the comparison, relative to the range of the output.
constexpr double kModelTolerance = 1e-4;

// user_error on bad options, a model kiln cannot import or compile, an
// input file of the wrong size, or a baseline that cannot run.
ModelRunResult run_model(const ModelRunOptions& options);

}  // namespace kiln
