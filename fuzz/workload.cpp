// Fuzz target: workload strings (kernels/workload.h, kernels/op_registry.h).
//
// Input: the bytes of a workload string such as "matmul:M=512,N=512,K=512".
// It is parsed with Workload::parse and, when that succeeds, built into an
// op instance with build_workload. Bad input must be a kiln::UserError;
// anything else (an InternalError, another exception, a sanitizer report,
// a hang) is a finding. Invariant checked for every built instance: its
// canonical string builds again, into the same canonical string.
//
// Seeds: fuzz/corpus/workload/; regressions (replayed by the ctest test
// fuzz:workload): tests/fuzz_regressions/workload/. Run (clang build, see
// cmake/kiln_fuzz.cmake):
//   ./fuzz-workload -max_total_time=600 -timeout=10 corpus/workload ../fuzz/corpus/workload
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "fuzz/fuzz_common.h"
#include "kernels/op_registry.h"
#include "kernels/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  kiln::Workload w;
  try {
    w = kiln::Workload::parse(text);
  } catch (const kiln::UserError&) {
    return 0;
  }
  KILN_FUZZ_CATCH_REST
  std::string canonical;
  try {
    canonical = kiln::build_workload(w).canonical;
  } catch (const kiln::UserError&) {
    return 0;
  }
  KILN_FUZZ_CATCH_REST
  try {
    std::string again = kiln::build_workload(canonical).canonical;
    if (again != canonical)
      kiln_fuzz_finding("canonical string not stable", "'" + canonical + "' builds as '" + again + "'");
  } catch (const kiln::UserError& e) {
    kiln_fuzz_finding("canonical string does not build", "'" + canonical + "': " + e.what());
  }
  KILN_FUZZ_CATCH_REST
  return 0;
}
