// Time evaluator implementation (steady_clock).
#include "runtime/time_evaluator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

namespace kiln::rt {
namespace {

using Clock = std::chrono::steady_clock;

// Upper bound on `number`, so that a function too fast for the clock cannot
// make calibration run forever.
constexpr double kMaxNumber = 1e9;

// How far past min_repeat_ms the calibration aims (see time_function).
constexpr double kCalibrationMargin = 1.1;

double measure_ms(const std::function<void()>& fn, int number) {
  Clock::time_point start = Clock::now();
  for (int i = 0; i < number; ++i) fn();
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Evicts the measured function's data from the caches by writing every line
// of a buffer larger than the last-level cache, then reading a byte per line
// into a volatile so that the stores cannot be dropped.
class CacheFlusher {
 public:
  explicit CacheFlusher(size_t bytes) : bytes_(std::max<size_t>(bytes, 64)), buf_(new char[bytes_]) {}
  void flush() {
    std::memset(buf_.get(), ++round_, bytes_);
    unsigned sum = 0;
    for (size_t i = 0; i < bytes_; i += 64) sum += static_cast<unsigned char>(buf_[i]);
    sink_ = sum;
  }

 private:
  size_t bytes_;
  std::unique_ptr<char[]> buf_;
  unsigned char round_ = 0;
  volatile unsigned sink_ = 0;
};

}  // namespace

void summarize(TimeResult& r) {
  const std::vector<double>& s = r.samples_ms;
  if (s.empty()) {
    r.median_ms = r.mean_ms = r.min_ms = r.stddev_ms = 0;
    return;
  }
  std::vector<double> sorted = s;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  r.median_ms = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  r.min_ms = sorted.front();
  double sum = 0;
  for (double x : s) sum += x;
  r.mean_ms = sum / static_cast<double>(n);
  double var = 0;
  for (double x : s) var += (x - r.mean_ms) * (x - r.mean_ms);
  r.stddev_ms = n > 1 ? std::sqrt(var / static_cast<double>(n - 1)) : 0;
}

void check_time_options(const TimeOptions& opt, const char* who) {
  const std::string w = who;
  if (opt.number < 1) throw std::invalid_argument(w + ": number must be >= 1");
  if (opt.repeat < 1) throw std::invalid_argument(w + ": repeat must be >= 1");
  if (opt.warmup < 0) throw std::invalid_argument(w + ": warmup must be >= 0");
  if (!(opt.min_repeat_ms >= 0) || !(opt.cooldown_ms >= 0) || !(opt.screen_ms >= 0)) {
    throw std::invalid_argument(w + ": min_repeat_ms, cooldown_ms and screen_ms must be >= 0");
  }
}

TimeResult run_time_protocol(const std::function<double(int number)>& measure, const TimeOptions& opt,
                             const char* who) {
  check_time_options(opt, who);
  TimeResult r;
  r.samples_ms.reserve(opt.repeat);
  // Calibration (as TVM): grow `number` geometrically, or straight to the
  // estimate of what fills min_repeat_ms, until one measurement is long
  // enough. That measurement is made as every sample is (cache flushed
  // first), so it is the first sample rather than thrown away: a candidate
  // costs `repeat` measurements, not repeat + 1. The estimate aims 10% past
  // min_repeat_ms so that whether a measurement is kept hardly depends on its
  // own noise (keeping only the slow ones of borderline runs would bias the
  // first sample slow).
  int number = opt.number;
  if (opt.min_repeat_ms > 0) {
    for (;;) {
      double ms = measure(number);
      if (ms >= opt.min_repeat_ms || number >= kMaxNumber) {
        r.samples_ms.push_back(ms / number);
        break;
      }
      double per_call = ms / number;
      double estimate = per_call > 0 ? kCalibrationMargin * opt.min_repeat_ms / per_call + 1 : kMaxNumber;
      double next = std::max(estimate, std::ceil(number * 1.618));
      number = static_cast<int>(std::min(next, kMaxNumber));
    }
  }
  r.number = number;
  while (static_cast<int>(r.samples_ms.size()) < opt.repeat) {
    if (opt.screen_ms > 0 && r.samples_ms.size() == 1 && r.samples_ms[0] > opt.screen_ms) break;
    if (!r.samples_ms.empty() && opt.cooldown_ms > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(opt.cooldown_ms));
    }
    r.samples_ms.push_back(measure(number) / number);
  }
  summarize(r);
  return r;
}

TimeResult time_function(const std::function<void()>& fn, const TimeOptions& opt) {
  check_time_options(opt, "time_function");
  for (int i = 0; i < opt.warmup; ++i) fn();
  std::unique_ptr<CacheFlusher> flusher;
  if (opt.flush_cache) flusher = std::make_unique<CacheFlusher>(opt.flush_bytes);
  return run_time_protocol(
      [&](int number) {
        if (flusher) flusher->flush();
        return measure_ms(fn, number);
      },
      opt, "time_function");
}

}  // namespace kiln::rt
