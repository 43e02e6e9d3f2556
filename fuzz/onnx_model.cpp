// Fuzz target: ONNX models through what `kiln tune-model` and `kiln
// run-model` do before they compile anything (graph/onnx_import.h,
// graph/model_tasks.h): import, the graph passes of a CPU and of a GPU
// target, shape inference and constant folding, and task extraction.
//
// Input: the bytes of a model file. Every input extent the model leaves
// symbolic (or declares as 0 or less) is given as 1, as `--input` would give
// it, so that a model with a batch dimension gets past the import. Bad input
// must be a kiln::UserError; anything else (an InternalError, another
// exception, a sanitizer report, a hang) is a finding. Invariant checked for
// every extracted task: its workload string builds again, into the same
// canonical string (`kiln tune` is handed that string).
//
// Seeds: the model of every ONNX conformance case that Debian's
// libonnx-testdata installs (/usr/share/libonnx-testdata/data/node/*/
// model.onnx; about half use only operators kiln imports). The ctest test
// fuzz:onnx_model replays them and the regressions in
// tests/fuzz_regressions/onnx_model/. Run (clang build, see
// cmake/kiln_fuzz.cmake), with the seeds copied into one folder first:
//   mkdir seeds; for d in /usr/share/libonnx-testdata/data/node/*/; do
//     cp $d/model.onnx seeds/$(basename $d).onnx; done
//   ./fuzz-onnx_model -fork=2 -ignore_crashes=1 -max_total_time=1200 -timeout=10 -max_len=8192 corpus/onnx seeds
#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "fuzz/fuzz_common.h"
#include "graph/model_tasks.h"
#include "graph/node_schedules.h"
#include "graph/onnx_import.h"
#include "kernels/op_registry.h"

namespace {

// --input shapes for the model's inputs that have a symbolic or
// non-positive extent (none for bytes that are no model: the import says so).
std::map<std::string, std::vector<int64_t>> symbolic_inputs_as_one(const std::string& bytes) {
  std::map<std::string, std::vector<int64_t>> shapes;
  onnx::ModelProto m;
  if (!m.ParseFromString(bytes)) return shapes;
  for (const auto& in : m.graph().input()) {
    if (!in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) continue;
    std::vector<int64_t> shape;
    bool symbolic = false;
    for (const auto& d : in.type().tensor_type().shape().dim()) {
      const bool known = d.has_dim_value() && d.dim_value() > 0;
      symbolic |= !known;
      shape.push_back(known ? d.dim_value() : 1);
    }
    if (symbolic && !in.name().empty()) shapes[in.name()] = shape;
  }
  return shapes;
}

const kiln::graph::NodeTarget& target(bool cuda) {
  static const kiln::graph::NodeTarget cpu =
      kiln::graph::NodeTarget::parse("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512");
  static const kiln::graph::NodeTarget gpu = kiln::graph::NodeTarget::parse("cuda -arch=sm_80");
  return cuda ? gpu : cpu;
}

void extract(const std::string& bytes, const std::map<std::string, std::vector<int64_t>>& shapes, bool cuda) {
  std::vector<kiln::graph::ModelTask> tasks;
  try {
    kiln::graph::Graph g = kiln::graph::import_onnx_bytes(bytes, "fuzz.onnx", shapes);
    tasks = kiln::graph::extract_tasks(g, target(cuda));
  } catch (const kiln::UserError&) {
    return;
  }
  KILN_FUZZ_CATCH_REST
  for (const kiln::graph::ModelTask& t : tasks) {
    try {
      const std::string again = kiln::build_workload(t.workload).canonical;
      if (again != t.workload)
        kiln_fuzz_finding("task workload not canonical", "'" + t.workload + "' builds as '" + again + "'");
    } catch (const kiln::UserError& e) {
      kiln_fuzz_finding("task workload does not build", "'" + t.workload + "': " + e.what());
    }
    KILN_FUZZ_CATCH_REST
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const auto shapes = symbolic_inputs_as_one(bytes);
  extract(bytes, shapes, /*cuda=*/false);
  extract(bytes, shapes, /*cuda=*/true);
  return 0;
}
