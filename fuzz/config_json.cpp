// Fuzz target: JSON configs of a template space (schedule/config_space.h,
// ConfigSpace::from_json_string), as `kiln build --config` and the tuning
// database hand them to a task.
//
// Input: the text of a config, e.g. {"tile_m": [...], ...}. It is parsed
// against the template spaces of a few real ops (matmul, conv2d,
// batch_matmul, softmax; made as tasks/task_factory.cpp makes them, with a
// default CpuInfo). Bad input must be a kiln::UserError; anything else is
// a finding. Invariants checked for every accepted config: it is the
// config of its own index (space.get(index)), its JSON parses back to it,
// and the template applies it (apply_config may refuse it with a
// UserError only).
//
// Seeds: fuzz/corpus/config_json/; regressions (replayed by the ctest test
// fuzz:config_json): tests/fuzz_regressions/config_json/. Run:
//   ./fuzz-config_json -max_total_time=600 -timeout=10 corpus/config_json ../fuzz/corpus/config_json
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "fuzz/fuzz_common.h"
#include "kernels/op_registry.h"
#include "schedule/config_space.h"

namespace {

struct Space {
  kiln::OpInstance op;
  const kiln::OpDef* def;
  std::shared_ptr<kiln::ConfigSpace> space;
};

const std::vector<Space>& spaces() {
  static const std::vector<Space> all = [] {
    std::vector<Space> v;
    for (const char* w : {"matmul:M=512,N=512,K=512", "conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1",
                          "batch_matmul:B=4,M=96,N=80,K=64", "softmax:M=128,N=1000"}) {
      Space s;
      s.op = kiln::build_workload(w);
      s.def = &kiln::find_op(s.op.op);
      s.space = s.def->define_space(s.op, kiln::CpuInfo{});
      v.push_back(std::move(s));
    }
    return v;
  }();
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const Space& s : spaces()) {
    kiln::Config c;
    try {
      c = s.space->from_json_string(text);
    } catch (const kiln::UserError&) {
      continue;
    }
    KILN_FUZZ_CATCH_REST
    try {
      if (!(s.space->get(c.index()) == c)) kiln_fuzz_finding("config is not the config of its index", c.str());
      if (!(s.space->from_json(c.to_json()) == c)) kiln_fuzz_finding("config JSON does not parse back", c.str());
    } catch (const kiln::UserError& e) {
      kiln_fuzz_finding("accepted config fails its round trip", c.str() + ": " + e.what());
    }
    KILN_FUZZ_CATCH_REST
    try {
      s.def->apply_config(s.op, c);
    } catch (const kiln::UserError&) {
    }
    KILN_FUZZ_CATCH_REST
  }
  return 0;
}
