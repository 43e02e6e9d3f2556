// bench_onednn: the oneDNN baseline that kiln's kernels are compared against.
//
//   bench_onednn matmul M N K                        fp32 row-major C = A * B (dnnl_sgemm)
//   bench_onednn conv2d N C H W K R S stride pad     fp32 NCHW conv forward, OIHW weights
//   options (after the shape): --repeat R (10)  --min-repeat-ms T (200)
//
// Prints one JSON line: op, shape, gflops (from the median), gflops_best (from
// the minimum), median_ms, min_ms, samples_ms, ... FLOPs are 2*M*N*K and
// 2*N*K*OH*OW*C*R*S: the zero padding counts, as for every contender
// (DESIGN.md). The convolution lets oneDNN choose its blocked layouts
// (format_tag::any); inputs are reordered into them once, outside timing.
// The result is spot-checked against a direct computation before printing.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/contenders/onednn_kernels.h"
#include "runtime/ndarray.h"
#include "runtime/time_evaluator.h"

namespace {

using kiln::rt::DataType;
using kiln::rt::NDArray;
using kiln::rt::TimeOptions;
using kiln::rt::TimeResult;
using nlohmann::json;

// Bad command line: message on stderr, exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr const char* kUsage =
    "usage: bench_onednn matmul M N K [options]\n"
    "       bench_onednn conv2d N C H W K R S stride pad [options]\n"
    "options: --repeat R (default 10), --min-repeat-ms T (default 200)";

int64_t parse_int(const std::string& s, const char* what, int64_t min_value) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != s.size()) throw UsageError(std::string(what) + " must be an integer, got '" + s + "'");
  if (v < min_value) throw UsageError(std::string(what) + " must be >= " + std::to_string(min_value) + ", got " + s);
  return v;
}

// Splits argv into positional arguments and the timing options.
std::vector<std::string> parse_args(int argc, char** argv, TimeOptions& opt) {
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--repeat" || a == "--min-repeat-ms") {
      if (i + 1 >= argc) throw UsageError(a + " needs a value");
      int64_t v = parse_int(argv[++i], a.c_str(), a == "--repeat" ? 1 : 0);
      if (a == "--repeat") {
        opt.repeat = static_cast<int>(v);
      } else {
        opt.min_repeat_ms = static_cast<double>(v);
      }
    } else if (a.rfind("--", 0) == 0) {
      throw UsageError("unknown option " + a);
    } else {
      pos.push_back(a);
    }
  }
  return pos;
}

json timing_json(const TimeResult& r, double flops) {
  json j;
  j["gflops"] = flops / (r.median_ms * 1e6);
  j["gflops_best"] = flops / (r.min_ms * 1e6);
  j["median_ms"] = r.median_ms;
  j["min_ms"] = r.min_ms;
  j["mean_ms"] = r.mean_ms;
  j["stddev_ms"] = r.stddev_ms;
  j["number"] = r.number;
  j["samples_ms"] = r.samples_ms;
  return j;
}

// Relative tolerance of an fp32 dot product of length k against a double
// reference, with margin for oneDNN's blocked accumulation order.
bool close_enough(double got, double want, double sum_abs, int64_t k) {
  return std::fabs(got - want) <= 1e-6 * static_cast<double>(k) * sum_abs + 1e-5;
}

json bench_matmul(const std::vector<std::string>& a, const TimeOptions& opt) {
  if (a.size() != 4) throw UsageError("matmul takes M N K");
  int64_t m = parse_int(a[1], "M", 1), n = parse_int(a[2], "N", 1), k = parse_int(a[3], "K", 1);
  NDArray A = NDArray::empty({m, k}, DataType::f32()), B = NDArray::empty({k, n}, DataType::f32());
  NDArray C = NDArray::empty({m, n}, DataType::f32());
  A.fill_random(1);
  B.fill_random(2);
  C.fill_zero();
  auto gemm = kiln::baselines::onednn_matmul(A, B, C);
  TimeResult r = kiln::rt::time_function([&] { gemm->run(); }, opt);
  const float* pa = A.data_as<float>();
  const float* pb = B.data_as<float>();
  const float* pc = C.data_as<float>();
  for (int s = 0; s < 16; ++s) {  // spot check
    int64_t i = (s * 7919) % m, j = (s * 104729) % n;
    double want = 0, sum_abs = 0;
    for (int64_t p = 0; p < k; ++p) {
      double t = static_cast<double>(pa[i * k + p]) * pb[p * n + j];
      want += t;
      sum_abs += std::fabs(t);
    }
    if (!close_enough(pc[i * n + j], want, sum_abs, k)) {
      throw std::runtime_error("matmul result check failed at (" + std::to_string(i) + ", " + std::to_string(j) + ")");
    }
  }
  json out = {{"op", "matmul"},
              {"shape", {{"M", m}, {"N", n}, {"K", k}}},
              {"library", kiln::baselines::onednn_version()},
              {"impl", gemm->impl()}};
  out.update(timing_json(r, 2.0 * m * n * k));
  return out;
}

json bench_conv2d(const std::vector<std::string>& a, const TimeOptions& opt) {
  if (a.size() != 10) throw UsageError("conv2d takes N C H W K R S stride pad");
  int64_t n = parse_int(a[1], "N", 1), c = parse_int(a[2], "C", 1), h = parse_int(a[3], "H", 1);
  int64_t w = parse_int(a[4], "W", 1), k = parse_int(a[5], "K", 1), r = parse_int(a[6], "R", 1);
  int64_t s = parse_int(a[7], "S", 1), stride = parse_int(a[8], "stride", 1), pad = parse_int(a[9], "pad", 0);
  if (h + 2 * pad < r || w + 2 * pad < s) throw UsageError("the filter is larger than the padded input");
  int64_t oh = (h + 2 * pad - r) / stride + 1, ow = (w + 2 * pad - s) / stride + 1;
  NDArray src = NDArray::empty({n, c, h, w}, DataType::f32()), wei = NDArray::empty({k, c, r, s}, DataType::f32());
  NDArray dst = NDArray::empty({n, k, oh, ow}, DataType::f32());
  src.fill_random(1);
  wei.fill_random(2);
  auto conv = kiln::baselines::onednn_conv2d(src, wei, dst, stride, pad, 1);
  TimeResult t = kiln::rt::time_function([&] { conv->run(); }, opt);
  conv->finish();
  const float* ps = src.data_as<float>();
  const float* pw = wei.data_as<float>();
  const float* pd_out = dst.data_as<float>();
  for (int q = 0; q < 16; ++q) {  // spot check
    int64_t b = q % n, o = (q * 7) % k, y = (q * 13) % oh, x = (q * 29) % ow;
    double want = 0, sum_abs = 0;
    for (int64_t ci = 0; ci < c; ++ci) {
      for (int64_t dy = 0; dy < r; ++dy) {
        for (int64_t dx = 0; dx < s; ++dx) {
          int64_t iy = y * stride - pad + dy, ix = x * stride - pad + dx;
          if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
          double v = static_cast<double>(ps[((b * c + ci) * h + iy) * w + ix]) * pw[((o * c + ci) * r + dy) * s + dx];
          want += v;
          sum_abs += std::fabs(v);
        }
      }
    }
    if (!close_enough(pd_out[((b * k + o) * oh + y) * ow + x], want, sum_abs, c * r * s)) {
      throw std::runtime_error("conv2d result check failed at (" + std::to_string(b) + ", " + std::to_string(o) + ", " +
                               std::to_string(y) + ", " + std::to_string(x) + ")");
    }
  }
  json shape = {{"N", n}, {"C", c}, {"H", h}, {"W", w}, {"K", k}, {"R", r}, {"S", s}, {"stride", stride}, {"pad", pad}};
  json out = {
      {"op", "conv2d"}, {"shape", shape}, {"library", kiln::baselines::onednn_version()}, {"impl", conv->impl()}};
  out.update(timing_json(t, 2.0 * n * k * oh * ow * c * r * s));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    TimeOptions opt;
    opt.warmup = 3;
    opt.min_repeat_ms = 200;
    opt.repeat = 10;
    std::vector<std::string> pos = parse_args(argc, argv, opt);
    if (pos.empty()) throw UsageError("missing operator");
    json out;
    if (pos[0] == "matmul") {
      out = bench_matmul(pos, opt);
    } else if (pos[0] == "conv2d") {
      out = bench_conv2d(pos, opt);
    } else {
      throw UsageError("unknown operator '" + pos[0] + "' (expected matmul or conv2d)");
    }
    std::cout << out.dump() << std::endl;
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "bench_onednn: " << e.what() << "\n" << kUsage << std::endl;
    return 2;
  } catch (const dnnl::error& e) {
    std::cerr << "bench_onednn: oneDNN error: " << e.what() << " (status " << e.status << ")" << std::endl;
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "bench_onednn: " << e.what() << std::endl;
    return 1;
  }
}
