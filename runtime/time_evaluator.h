// The time evaluator: measures a function with the usual protocol (warm-up,
// `number` calls per measurement grown until a measurement lasts
// min_repeat_ms, `repeat` measurements, optional cache flush and cooldown
// between measurements) and reports every sample. The calibration
// measurement that first lasts min_repeat_ms is the first sample.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace kiln::rt {

struct TimeOptions {
  int number = 1;            // calls per measurement (a start value when min_repeat_ms > 0)
  int repeat = 5;            // measurements
  double min_repeat_ms = 0;  // grow `number` until one measurement takes this long
  int warmup = 1;            // untimed calls before anything else
  double cooldown_ms = 0;    // sleep between measurements
  // Write a buffer larger than the LLC before each measurement (untimed). Only
  // the first call of a measurement starts cold: use it with number = 1.
  bool flush_cache = false;
  size_t flush_bytes = size_t{64} << 20;
  // Screening: when the first sample is slower than this (per call), stop
  // there with one sample (0: never). A tuner passes a multiple of its best
  // time so far: one sample is enough to rank a candidate that slow, and the
  // rest of its repeats would be spent on nothing.
  double screen_ms = 0;
};

struct TimeResult {
  std::vector<double> samples_ms;  // per-call time of each measurement: elapsed / number
  double median_ms = 0;
  double mean_ms = 0;
  double min_ms = 0;
  double stddev_ms = 0;  // sample standard deviation (0 for one sample)
  int number = 0;        // calls per measurement actually used
};

// Throws std::invalid_argument on number < 1, repeat < 1, warmup < 0 or
// negative times (screen_ms included); exceptions from fn propagate.
TimeResult time_function(const std::function<void()>& fn, const TimeOptions& options);

// The protocol on its own, for timers with a clock of their own (CUDA events
// around enqueued launches: rt::cuda::time_enqueued). `measure(number)`
// makes `number` calls, with whatever must precede each measurement (a
// cache flush), and returns the milliseconds they took. The protocol
// calibrates `number` when min_repeat_ms > 0 (the run that first lasts it
// is the first sample), takes the other samples with the cooldown between
// them and stops after one sample slower than screen_ms. It neither warms up
// nor flushes: the caller's measure does what its clock needs. Throws as
// time_function does on invalid options, naming `who`.
TimeResult run_time_protocol(const std::function<double(int number)>& measure, const TimeOptions& options,
                             const char* who);
// The validation both do first: throws std::invalid_argument, naming `who`.
void check_time_options(const TimeOptions& options, const char* who);

// Statistics of a list of samples (used by time_function, and by anyone who
// merges samples from several runs). Empty input gives all zeros.
void summarize(TimeResult& result);

}  // namespace kiln::rt
