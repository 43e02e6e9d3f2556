#include "runtime/measure.h"

#include <algorithm>

#include "base/error.h"

namespace kiln {

const char* error_kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::kNone: return "none";
    case ErrorKind::kInvalidConfig: return "invalid_config";
    case ErrorKind::kCompileError: return "compile_error";
    case ErrorKind::kCompileTimeout: return "compile_timeout";
    case ErrorKind::kRuntimeCrash: return "runtime_crash";
    case ErrorKind::kRuntimeTimeout: return "runtime_timeout";
    case ErrorKind::kWrongResult: return "wrong_result";
    case ErrorKind::kDeviceError: return "device_error";
  }
  return "?";
}

ErrorKind parse_error_kind(const std::string& name) {
  for (ErrorKind k : {ErrorKind::kNone, ErrorKind::kInvalidConfig, ErrorKind::kCompileError, ErrorKind::kCompileTimeout,
                      ErrorKind::kRuntimeCrash, ErrorKind::kRuntimeTimeout, ErrorKind::kWrongResult,
                      ErrorKind::kDeviceError})
    if (name == error_kind_name(k)) return k;
  user_error() << "unknown error kind '" << name << "'";
}

double MeasureResult::median_ms() const {
  if (samples_ms.empty()) return 0;
  std::vector<double> s = samples_ms;
  std::nth_element(s.begin(), s.begin() + static_cast<long>(s.size() / 2), s.end());
  double hi = s[s.size() / 2];
  if (s.size() % 2) return hi;
  double lo = *std::max_element(s.begin(), s.begin() + static_cast<long>(s.size() / 2));
  return (lo + hi) / 2;
}

}  // namespace kiln
