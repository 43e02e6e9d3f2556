// The device server's side of a MeasureRequest: its validation (a malformed
// or oversized request is refused before it reaches the measuring process)
// and its conversion into runtime terms (a MeasureJob and MeasureOptions).
// Nothing here needs the compiler: the tuner's side, which makes requests
// from Tasks, is rpc/client/measure_spec.h.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <string>

#include "rpc/kiln.pb.h"
#include "runtime/measure.h"
#include "runtime/measure_job.h"

namespace kiln::rpc {

// The job a device server measures for a (validated) request: the
// arguments, seed and reference of the request; its identity is a stable
// digest of all that (so the measuring worker is reused while it stays the
// same).
kiln::MeasureJob job_of_request(const MeasureRequest& request);
kiln::MeasureOptions options_of_request(const MeasureRequest& request);

ErrorKind to_proto(kiln::ErrorKind kind);
kiln::ErrorKind from_proto(ErrorKind kind);

// What a device server accepts.
struct RequestLimits {
  size_t max_artifact_bytes = size_t{64} << 20;
  size_t max_buffer_bytes = size_t{4} << 30;  // all arguments together
  size_t max_reference_points = size_t{1} << 23;  // values (whole outputs are sent); 64 MiB
  double max_run_timeout_s = 3600;
};

// OK, or INVALID_ARGUMENT / RESOURCE_EXHAUSTED with a message saying what
// is wrong with the request. `elf_machine` is the device's ELF machine
// number (e_machine, e.g. 62 for x86-64): an artifact is a 64-bit ELF shared
// object for it; 0 for a device that measures on a GPU, whose artifacts are
// kiln GPU artifacts (runtime/gpu_artifact.h).
grpc::Status validate_request(const MeasureRequest& request, const RequestLimits& limits, int elf_machine);

// The ELF machine number of this process (read from /proc/self/exe).
int host_elf_machine();
// "x86-64", "AArch64", or "machine N".
std::string elf_machine_name(int machine);

}  // namespace kiln::rpc
