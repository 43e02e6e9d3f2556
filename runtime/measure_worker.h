// The measuring side of IsolatedRunner: the loop that runs inside its forked
// worker process, and the messages exchanged with it.
//
// The worker holds the job's buffers (inputs filled with
// rt::NDArray::fill_random(job.input_seed + i), outputs), then serves one
// request at a time: load the artifact with rt::Module, run it once on
// pristine inputs, compare the job's reference samples, time it with
// rt::time_function, reply with every sample. Kernels may use the runtime
// thread pool here: the worker is a separate process.
#pragma once

#include <string>

#include "runtime/measure.h"
#include "runtime/measure_job.h"

namespace kiln {

// Runs in the worker: sends a ready message (or the reason it cannot serve),
// then answers requests on `fd` until the parent closes it.
void serve_measurements(int fd, const MeasureJob& job, const MeasureOptions& options);

// Parent side of the protocol: one candidate, and the time per call past
// which its first sample is its only one (TimeOptions::screen_ms; 0: never).
std::string encode_measure_request(const BuildResult& build, double screen_ms);
// The worker's first message: "" when ready, else why it cannot measure.
std::string decode_worker_ready(const std::string& payload);
// A reply: error, message and samples (device, timestamp, compile_ms unset).
MeasureResult decode_measure_reply(const std::string& payload);

}  // namespace kiln
