// Shared by the graph layer's tests: a model run by the executor against
// the reference interpreter.
#pragma once

#include <catch2/catch.hpp>

#include <cstring>
#include <memory>

#include "codegen/runtime_dtype.h"
#include "graph/executor.h"
#include "graph/onnx_import.h"
#include "onnx_builder.h"

namespace kiln::test {

// Runs `b` (inputs of `shapes`, in order) through the executor and through
// the interpreter; their outputs must agree. The reference is the model as
// imported, unoptimized: every input bound as a constant, so that every node
// folds (the interpreter evaluates it). Returns the executor.
inline std::unique_ptr<graph::Executor> check_model(const OnnxBuilder& b, const std::vector<std::pair<std::string, std::vector<int64_t>>>& shapes,
                                             uint64_t seed, const std::string& what,
                                             const graph::ExecutorOptions& options = {}) {
  INFO(what);
  std::map<std::string, std::vector<int64_t>> given(shapes.begin(), shapes.end());
  std::vector<rt::NDArray> ins;
  std::vector<HostTensor> host;
  for (size_t k = 0; k < shapes.size(); ++k) {
    HostTensor h(DType::f32(), shapes[k].second);
    h.fill_random(seed + k);
    rt::NDArray a = rt::NDArray::empty(h.shape, to_runtime_dtype(h.dtype));
    std::memcpy(a.data(), h.bytes.data(), h.bytes.size());
    ins.push_back(a);
    host.push_back(h);
  }
  graph::Graph ref = graph::import_onnx_bytes(b.bytes(), "model", given);
  for (size_t k = 0; k < shapes.size(); ++k) ref.values[static_cast<size_t>(ref.inputs[k])].constant = host[k];
  ref.inputs.clear();
  graph::InferredGraph inf = graph::infer_and_fold(ref);
  REQUIRE(std::count(inf.folded.begin(), inf.folded.end(), false) == 0);

  auto ex = std::make_unique<graph::Executor>(graph::import_onnx_bytes(b.bytes(), "model", given), options);
  std::vector<rt::NDArray> outs = ex->run(ins);
  REQUIRE(outs.size() == ref.outputs.size());
  for (size_t k = 0; k < outs.size(); ++k) {
    const HostTensor& want = *ref.values[static_cast<size_t>(ref.outputs[k])].constant;
    HostTensor got(want.dtype, want.shape);
    REQUIRE(outs[k].nbytes() == got.bytes.size());
    std::memcpy(got.bytes.data(), outs[k].data(), got.bytes.size());
    const std::string diff = compare_tensors(want, got, 1e-4, 1e-5);
    CHECK(diff.empty());
    if (!diff.empty()) UNSCOPED_INFO(diff);
  }
  return ex;
}

}  // namespace kiln::test
