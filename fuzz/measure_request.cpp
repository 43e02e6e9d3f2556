// Fuzz target: the device server's decoding of a Measure call
// (rpc/measure_request.h), as rpc/device_server.cpp runs it on every
// request.
//
// Input: the bytes of a MeasureRequest protobuf (rpc/kiln.proto). They are
// parsed (bytes that are no MeasureRequest are dropped, as gRPC drops
// them), validated with validate_request (default RequestLimits, an x86-64
// device) and, when valid, converted with job_of_request and
// options_of_request. Nothing may throw or crash. Invariants checked for a
// valid request, so that it cannot make the measuring worker
// (runtime/measure_worker.cpp, time_evaluator.cpp) do something unbounded:
// the buffers fit the limit, every reference index is inside its output
// (a reference without indices holds every element of its output),
// and the options are finite and bounded (repeat, which sizes the reply;
// cooldown_ms and min_repeat_ms within the run timeout, which the server
// enforces by killing the worker).
//
// Seeds: fuzz/corpus/measure_request/ (binary protobufs; made with
// `protoc --encode=kiln.rpc.MeasureRequest rpc/kiln.proto`);
// regressions (replayed by the ctest test fuzz:measure_request):
// tests/fuzz_regressions/measure_request/. Run:
//   ./fuzz-measure_request -max_total_time=600 -timeout=10 corpus/mr ../fuzz/corpus/measure_request
#include <google/protobuf/stubs/logging.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "fuzz/fuzz_common.h"
#include "rpc/measure_request.h"
#include "runtime/data_type.h"

namespace {
constexpr int kX86_64 = 62;
// What a valid request may ask of the worker at most (see the
// header comment).
constexpr int kMaxRepeat = 100000;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Protobuf logs every string field that is not UTF-8 while parsing.
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)quiet;
  kiln::rpc::MeasureRequest r;
  if (!r.ParseFromArray(data, static_cast<int>(size))) return 0;
  const kiln::rpc::RequestLimits limits;
  try {
    grpc::Status st = kiln::rpc::validate_request(r, limits, kX86_64);
    if (!st.ok()) {
      if (st.error_code() != grpc::StatusCode::INVALID_ARGUMENT &&
          st.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED)
        kiln_fuzz_finding("unexpected status code", st.error_message());
      if (st.error_message().empty()) kiln_fuzz_finding("refusal without a message", "");
      return 0;
    }
    kiln::MeasureJob job = kiln::rpc::job_of_request(r);
    kiln::MeasureOptions o = kiln::rpc::options_of_request(r);
    kiln::check_measure_job(job);  // InternalError: a job the worker would refuse
    if (job.args.size() != static_cast<size_t>(r.args_size()) || job.num_inputs >= job.args.size())
      kiln_fuzz_finding("job arguments", "");
    double bytes = 0;
    std::vector<double> elems;
    for (const auto& a : job.args) {
      double n = 1;
      for (int64_t d : a.shape) n *= static_cast<double>(d);
      elems.push_back(n);
      bytes += n * a.dtype.bytes();
    }
    if (bytes > static_cast<double>(limits.max_buffer_bytes)) kiln_fuzz_finding("buffers over the limit", "");
    size_t points = 0;
    for (const auto& ref : job.reference) {
      const size_t out = job.num_inputs + static_cast<size_t>(ref.output);
      if (ref.output < 0 || out >= job.args.size()) kiln_fuzz_finding("reference output out of range", "");
      if (ref.flat_index.empty()) {  // the whole output
        if (static_cast<double>(ref.expected.size()) != elems[out]) kiln_fuzz_finding("whole-output reference size", "");
      } else if (ref.flat_index.size() != ref.expected.size()) {
        kiln_fuzz_finding("reference sizes", "");
      }
      for (int64_t i : ref.flat_index)
        if (i < 0 || static_cast<double>(i) >= elems[out]) kiln_fuzz_finding("reference index out of range", "");
      points += ref.expected.size();
    }
    if (points > limits.max_reference_points) kiln_fuzz_finding("reference points over the limit", "");
    const double budget_ms = o.run_timeout_s * 1000;
    if (!(o.run_timeout_s > 0 && o.run_timeout_s <= limits.max_run_timeout_s))
      kiln_fuzz_finding("run timeout", std::to_string(o.run_timeout_s));
    if (o.repeat < 1 || o.repeat > kMaxRepeat)
      kiln_fuzz_finding("unbounded repeat (the worker reserves and replies repeat samples)", std::to_string(o.repeat));
    if (o.number < 0 || o.warmup < 0) kiln_fuzz_finding("negative number or warmup", "");
    if (!(o.cooldown_ms >= 0 && o.cooldown_ms <= budget_ms))
      kiln_fuzz_finding("cooldown_ms past the run timeout (an unbounded sleep in the worker)",
                        std::to_string(o.cooldown_ms));
    if (!(o.min_repeat_ms >= 0 && o.min_repeat_ms <= budget_ms))
      kiln_fuzz_finding("min_repeat_ms past the run timeout", std::to_string(o.min_repeat_ms));
  } catch (const kiln::UserError& e) {
    kiln_fuzz_finding("UserError from a validated request", e.what());
  }
  KILN_FUZZ_CATCH_REST
  return 0;
}
