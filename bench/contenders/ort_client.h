// The client side of the ONNX Runtime baseline: starts `node
// ort/ort_helper.mjs` (its header comment describes the JSON-lines
// protocol), loads an ONNX model into it, hands it inputs as raw files in a
// private temporary folder and reads the outputs back, and asks it to time
// one round at a time. The helper runs onnxruntime-node from ort/node_modules
// (scripts/setup.sh installs it).
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "runtime/ndarray.h"
#include "runtime/time_evaluator.h"

namespace kiln::baselines {

// The helper script: $KILN_ORT_HELPER (when that file exists), else
// ort/ort_helper.mjs in the nearest folder above the running executable that
// has one (the source tree, for executables built in build/); "" when none.
std::string ort_helper_script();

// "" when the helper can run here (node on PATH, the script found, and
// onnxruntime-node installed next to it); else what is missing and how to
// install it.
std::string ort_unavailable_reason();

class OrtHelper {
 public:
  // Starts the helper; models it loads run with `threads` intra-op threads.
  // UserError when it cannot be found or started. Its stderr (ONNX Runtime's
  // log) goes to a file in its temporary folder, quoted when it stops
  // unexpectedly; $KILN_ORT_VERBOSE passes it through instead.
  explicit OrtHelper(int threads);
  ~OrtHelper();  // ends the helper (killed past a short grace) and removes the folder
  OrtHelper(const OrtHelper&) = delete;
  OrtHelper& operator=(const OrtHelper&) = delete;

  std::string version();  // onnxruntime-node's version, "1.30.0"
  // Loads `model` (an .onnx file); returns its output names. UserError with
  // ONNX Runtime's message (which names the file) when it cannot.
  std::vector<std::string> load(const std::string& model);
  // Runs the loaded model once on the named f32 inputs; returns its outputs
  // in the model's order, shaped as ONNX Runtime reported them. The inputs
  // are kept for time_round.
  std::vector<rt::NDArray> run(const std::vector<std::pair<std::string, rt::NDArray>>& inputs);
  // Times the last run's inputs: options.warmup untimed runs, calibration
  // to options.min_repeat_ms, then options.repeat measurements of `number`
  // runs (runtime/time_evaluator.h's protocol, timed inside the helper).
  // flush_cache is not supported (a UserError).
  rt::TimeResult time_round(const rt::TimeOptions& options);

 private:
  void start();
  void shutdown();
  // Sends one request and returns its reply; UserError "<context>: <the
  // helper's message>" when the reply is an error.
  nlohmann::json request(const nlohmann::json& req, const std::string& context = "ONNX Runtime helper");
  [[noreturn]] void helper_stopped();
  pid_t pid_ = -1;
  int to_fd_ = -1, from_fd_ = -1;
  std::string buffer_, dir_;
  int threads_ = 1;
};

}  // namespace kiln::baselines
