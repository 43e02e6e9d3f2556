// What a measuring worker needs to know of a task, in runtime terms: the
// kernel's arguments (shapes and element types), how its inputs are filled,
// and the reference values its outputs are checked against. The tuner makes
// one from a Task (tuner/local_runner.cpp), a device server from a request
// (rpc/measure_request.cpp); neither side needs the compiler's IR for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/data_type.h"

namespace kiln {

// Expected values of output elements, for checking a candidate: the whole
// output (flat_index empty, `expected` holds every element in row-major
// order: what the tuner sends, so that a kernel wrong in one tail element is
// caught), or some elements.
struct ReferenceSample {
  int output = 0;                   // which output argument (0 = first output)
  std::vector<int64_t> flat_index;  // row-major element indices; empty: every element
  std::vector<double> expected;     // values at those indices
  double tolerance = 0;             // |got - want| <= tol * (1 + |want|); NaN matches only NaN
  bool whole() const { return flat_index.empty(); }
};

// One kernel argument: a dense row-major buffer.
struct ArgSpec {
  std::string name;
  rt::DataType dtype;
  std::vector<int64_t> shape;
};

struct MeasureJob {
  // Everything that decides the worker's buffers and checks, as a string: a
  // worker is reused while the identity stays the same.
  std::string identity;
  std::vector<ArgSpec> args;  // inputs first
  size_t num_inputs = 0;
  uint64_t input_seed = 1;    // input i is filled with rt::NDArray::fill_random(input_seed + i)
  std::vector<ReferenceSample> reference;
  // Not part of the identity (it changes as a search finds faster kernels):
  // sent with each candidate, see rt::TimeOptions::screen_ms. 0: never.
  double screen_ms = 0;
};

// InternalError when the reference samples do not fit the job's outputs (a
// kiln bug: callers validate user input before making a job).
void check_measure_job(const MeasureJob& job);

}  // namespace kiln
