// What is measured and what comes back, one record per candidate: shared by
// the tuner's builders and runners and by the device server, which measures
// without a compiler (so these types live in runtime/).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

// Why a candidate has no timing. The names are stored in the database.
enum class ErrorKind {
  kNone,
  kInvalidConfig,   // the template rejected the config (user_error while instantiating)
  kCompileError,    // lowering or code generation failed
  kCompileTimeout,  // the build ran past its time limit
  kRuntimeCrash,    // the kernel crashed its worker (signal) or returned non-zero
  kRuntimeTimeout,  // the kernel ran past its time limit
  kWrongResult,     // the output differs from the task's reference
  kDeviceError,     // the measuring device failed (remote runner)
};
const char* error_kind_name(ErrorKind k);
ErrorKind parse_error_kind(const std::string& name);  // user_error on unknown

// What one GPU kernel of a candidate uses, as ptxas reported it.
struct KernelResources {
  std::string kernel;
  int registers = 0;  // per thread
  int64_t spill_store_bytes = 0, spill_load_bytes = 0;
  int64_t shared_bytes = 0;  // static shared memory
  bool operator==(const KernelResources& o) const {
    return kernel == o.kernel && registers == o.registers && spill_store_bytes == o.spill_store_bytes &&
           spill_load_bytes == o.spill_load_bytes && shared_bytes == o.shared_bytes;
  }
};

struct BuildResult {
  std::string artifact;  // path of the shared object ("" on error)
  std::string entry;     // exported kernel name
  ErrorKind error = ErrorKind::kNone;
  std::string message;
  double compile_ms = 0;
  // A cuda candidate's kernels compiled to a cubin; empty for CPU
  // candidates and for the stand-in driver's emulated images.
  std::vector<KernelResources> resources;
};

struct MeasureResult {
  std::vector<double> samples_ms;  // every timing sample (per-run time of each repeat)
  ErrorKind error = ErrorKind::kNone;
  std::string message;
  double compile_ms = 0;
  std::string device;  // where it ran ("local" or a pool device id)
  int64_t timestamp = 0;  // unix seconds
  std::vector<KernelResources> resources;  // the build's (BuildResult::resources)
  bool ok() const { return error == ErrorKind::kNone && !samples_ms.empty(); }
  // Median of samples_ms (0 when none).
  double median_ms() const;
};

// Options of the timing protocol (DESIGN.md).
struct MeasureOptions {
  int number = 0;              // runs per measurement; 0: grown to min_repeat_ms
  int repeat = 3;
  double min_repeat_ms = 50;
  int warmup = 1;
  double cooldown_ms = 0;
  bool flush_cache = false;
  double build_timeout_s = 30;
  double run_timeout_s = 10;  // per candidate, all repeats included
};

}  // namespace kiln
