// A MeasureRequest on the device server: validation and conversion.
#include "rpc/measure_request.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include "base/error.h"
#include "runtime/gpu_artifact.h"
#include "runtime/data_type.h"

namespace kiln::rpc {

kiln::MeasureJob job_of_request(const MeasureRequest& request) {
  kiln::MeasureJob t;
  for (const BufferSpec& b : request.args())
    t.args.push_back(kiln::ArgSpec{b.name(), rt::parse_data_type(b.dtype()), {b.shape().begin(), b.shape().end()}});
  t.num_inputs = static_cast<size_t>(request.num_inputs());
  t.input_seed = request.input_seed();
  t.screen_ms = request.screen_ms();
  for (const ReferenceSpec& s : request.reference()) {
    ReferenceSample ref;
    ref.output = s.output();
    ref.flat_index.assign(s.flat_index().begin(), s.flat_index().end());
    ref.expected.assign(s.expected().begin(), s.expected().end());
    ref.tolerance = s.tolerance();
    t.reference.push_back(std::move(ref));
  }
  // Identity: everything that decides the worker's buffers and checks.
  MeasureRequest id = request;
  id.clear_artifact();
  id.clear_entry();
  id.clear_options();
  id.clear_job();
  id.clear_screen_ms();  // sent with each candidate, changes as the search goes
  std::string bytes;
  id.SerializeToString(&bytes);
  std::ostringstream os;
  os << "remote#" << std::hex << std::hash<std::string>()(bytes) << "#" << std::dec << bytes.size();
  t.identity = os.str();
  return t;
}

kiln::MeasureOptions options_of_request(const MeasureRequest& request) {
  const kiln::rpc::MeasureOptions& o = request.options();
  kiln::MeasureOptions m;
  m.number = o.number();
  m.repeat = o.repeat();
  m.min_repeat_ms = o.min_repeat_ms();
  m.warmup = o.warmup();
  m.cooldown_ms = o.cooldown_ms();
  m.flush_cache = o.flush_cache();
  m.run_timeout_s = o.run_timeout_s();
  return m;
}

ErrorKind to_proto(kiln::ErrorKind kind) {
  switch (kind) {
    case kiln::ErrorKind::kNone:
      return NONE;
    case kiln::ErrorKind::kInvalidConfig:
      return INVALID_CONFIG;
    case kiln::ErrorKind::kCompileError:
      return COMPILE_ERROR;
    case kiln::ErrorKind::kCompileTimeout:
      return COMPILE_TIMEOUT;
    case kiln::ErrorKind::kRuntimeCrash:
      return RUNTIME_CRASH;
    case kiln::ErrorKind::kRuntimeTimeout:
      return RUNTIME_TIMEOUT;
    case kiln::ErrorKind::kWrongResult:
      return WRONG_RESULT;
    case kiln::ErrorKind::kDeviceError:
      return DEVICE_ERROR;
  }
  return DEVICE_ERROR;
}

kiln::ErrorKind from_proto(ErrorKind kind) {
  switch (kind) {
    case NONE:
      return kiln::ErrorKind::kNone;
    case INVALID_CONFIG:
      return kiln::ErrorKind::kInvalidConfig;
    case COMPILE_ERROR:
      return kiln::ErrorKind::kCompileError;
    case COMPILE_TIMEOUT:
      return kiln::ErrorKind::kCompileTimeout;
    case RUNTIME_CRASH:
      return kiln::ErrorKind::kRuntimeCrash;
    case RUNTIME_TIMEOUT:
      return kiln::ErrorKind::kRuntimeTimeout;
    case WRONG_RESULT:
      return kiln::ErrorKind::kWrongResult;
    default:
      return kiln::ErrorKind::kDeviceError;
  }
}

namespace {

// What a request may ask of the measuring worker (runtime/measure_worker.cpp,
// time_evaluator.cpp) besides RequestLimits: the worker reserves, takes and
// replies `repeat` samples (kiln run's --repeat allows as many), and sleeps
// cooldown_ms between repeats, so neither may be unbounded; cooldown_ms and
// min_repeat_ms must fit in the run timeout (an infinite sleep_for is
// undefined, and a longer one could only time out).
constexpr int kMaxRepeat = 100000;

grpc::Status invalid(const std::string& message) { return {grpc::StatusCode::INVALID_ARGUMENT, message}; }
grpc::Status too_big(const std::string& message) { return {grpc::StatusCode::RESOURCE_EXHAUSTED, message}; }

uint16_t read_u16(const std::string& bytes, size_t at) {
  uint16_t v = 0;
  std::memcpy(&v, bytes.data() + at, 2);  // little-endian hosts only run kiln's runtime
  return v;
}

}  // namespace

int host_elf_machine() {
  static const int machine = [] {
    std::ifstream in("/proc/self/exe", std::ios::binary);
    std::string head(20, '\0');
    in.read(&head[0], 20);
    return in.gcount() == 20 ? static_cast<int>(read_u16(head, 18)) : -1;
  }();
  return machine;
}

std::string elf_machine_name(int machine) {
  switch (machine) {
    case 62:
      return "x86-64";
    case 183:
      return "AArch64";
    case 243:
      return "RISC-V";
    case 3:
      return "x86";
    case 40:
      return "ARM";
    default:
      return "machine " + std::to_string(machine);
  }
}

grpc::Status validate_request(const MeasureRequest& r, const RequestLimits& limits, int elf_machine) {
  const std::string& a = r.artifact();
  if (a.size() > limits.max_artifact_bytes)
    return too_big("the artifact is " + std::to_string(a.size()) + " bytes, over this device's limit of " +
                   std::to_string(limits.max_artifact_bytes) + " bytes");
  if (elf_machine == 0) {
    if (!looks_like_gpu_artifact(a))
      return invalid("the artifact is not a kiln GPU artifact (this device measures on a GPU: build for the cuda "
                     "target it reports)");
  } else {
    if (a.size() < 64 || a.compare(0, 4,
                                   "\x7f"
                                   "ELF") != 0)
      return invalid("the artifact is not an ELF shared object (" + std::to_string(a.size()) + " bytes)");
    if (a[4] != 2) return invalid("the artifact is not a 64-bit ELF object");
    if (read_u16(a, 16) != 3) return invalid("the artifact is an ELF file but not a shared object");
    const int machine = read_u16(a, 18);
    if (machine != elf_machine)
      return invalid("the artifact is built for " + elf_machine_name(machine) + ", this device runs " +
                     elf_machine_name(elf_machine) + " (build for the target the device reports)");
  }
  if (r.entry().empty()) return invalid("the request names no kernel entry point");
  if (r.args_size() == 0) return invalid("the request has no kernel arguments");
  if (r.num_inputs() < 0 || r.num_inputs() >= r.args_size())
    return invalid("num_inputs " + std::to_string(r.num_inputs()) + " leaves no output among " +
                   std::to_string(r.args_size()) + " arguments");
  double total_bytes = 0;
  std::vector<int64_t> sizes;
  for (const BufferSpec& b : r.args()) {
    rt::DataType dtype;
    try {
      dtype = rt::parse_data_type(b.dtype());
    } catch (const std::exception&) {
      return invalid("argument '" + b.name() + "' has type '" + b.dtype() +
                     "', which names no element type (f32, f16, bf16, i8, i32, ...)");
    }
    if (!dtype.is_supported())
      return invalid("argument '" + b.name() + "' has type " + b.dtype() + ", which the device cannot hold");
    if (b.shape_size() == 0) return invalid("argument '" + b.name() + "' has no shape");
    double n = 1;
    for (int64_t d : b.shape()) {
      if (d <= 0) return invalid("argument '" + b.name() + "' has a non-positive extent " + std::to_string(d));
      n *= static_cast<double>(d);
    }
    if (n > 9e15) return too_big("argument '" + b.name() + "' is too large");
    sizes.push_back(static_cast<int64_t>(n));
    total_bytes += n * dtype.bytes();
  }
  if (total_bytes > static_cast<double>(limits.max_buffer_bytes))
    return too_big("the kernel's arguments take " + std::to_string(static_cast<int64_t>(total_bytes)) +
                   " bytes, over this device's limit of " + std::to_string(limits.max_buffer_bytes) + " bytes");
  size_t points = 0;
  for (const ReferenceSpec& s : r.reference()) {
    const int64_t out = int64_t{r.num_inputs()} + s.output();  // int64: no overflow of the int32 fields
    if (s.output() < 0 || out >= r.args_size())
      return invalid("a reference sample names output " + std::to_string(s.output()) + ", which does not exist");
    if (!(s.tolerance() >= 0)) return invalid("a reference tolerance must be >= 0");
    const int64_t n = sizes[static_cast<size_t>(out)];
    if (s.flat_index_size() == 0) {  // the whole output, every element in order
      if (s.expected_size() != n)
        return invalid("a whole-output reference has " + std::to_string(s.expected_size()) +
                       " values for an output of " + std::to_string(n) + " elements");
    } else if (s.flat_index_size() != s.expected_size()) {
      return invalid("a reference sample has " + std::to_string(s.flat_index_size()) + " indices but " +
                     std::to_string(s.expected_size()) + " values");
    }
    for (int64_t i : s.flat_index())
      if (i < 0 || i >= n) return invalid("reference index " + std::to_string(i) + " is out of range");
    points += static_cast<size_t>(s.expected_size());
  }
  if (points > limits.max_reference_points)
    return too_big("the request has " + std::to_string(points) + " reference points, over the limit of " +
                   std::to_string(limits.max_reference_points));
  const kiln::rpc::MeasureOptions& o = r.options();
  if (o.repeat() < 1 || o.repeat() > kMaxRepeat)
    return invalid("measure option repeat must be between 1 and " + std::to_string(kMaxRepeat) + ", got " +
                   std::to_string(o.repeat()));
  if (o.number() < 0 || o.warmup() < 0) return invalid("measure options number and warmup must be >= 0");
  if (!(o.run_timeout_s() > 0) || o.run_timeout_s() > limits.max_run_timeout_s)
    return invalid("the run timeout must be positive and at most " + std::to_string(limits.max_run_timeout_s) + " s");
  const double budget_ms = o.run_timeout_s() * 1000;
  if (!(o.min_repeat_ms() >= 0 && o.min_repeat_ms() <= budget_ms) ||
      !(o.cooldown_ms() >= 0 && o.cooldown_ms() <= budget_ms))
    return invalid("measure options min_repeat_ms and cooldown_ms must be >= 0 and at most the run timeout (" +
                   std::to_string(budget_ms) + " ms)");
  if (!(r.screen_ms() >= 0))
    return invalid("screen_ms must be >= 0 (0: no screening), got " + std::to_string(r.screen_ms()));
  return grpc::Status::OK;
}

}  // namespace kiln::rpc
