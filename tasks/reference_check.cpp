#include "tasks/reference_check.h"

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "compute/interpreter.h"

namespace kiln {

namespace {

// Work (output elements x reduction length) up to which every output element
// is compared; beyond it a fixed sample of points is.
constexpr double kFullCheckFlops = 5e7;
constexpr int kSamplePoints = 4096;

HostTensor to_host(const rt::NDArray& a, DType t) {
  HostTensor h;
  h.dtype = t;
  h.shape = a.shape();
  h.bytes.resize(a.nbytes());
  std::memcpy(h.bytes.data(), a.data(), a.nbytes());
  return h;
}

// Random points plus the first and last element (tails are where bugs live).
std::vector<std::vector<int64_t>> sample_points(const std::vector<int64_t>& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<int64_t>> pts;
  pts.emplace_back(shape.size(), 0);
  std::vector<int64_t> last;
  for (int64_t d : shape) last.push_back(d - 1);
  pts.push_back(last);
  for (int p = 0; p < kSamplePoints; ++p) {
    std::vector<int64_t> idx;
    for (int64_t d : shape) idx.push_back(std::uniform_int_distribution<int64_t>(0, d - 1)(rng));
    pts.push_back(idx);
  }
  return pts;
}

int64_t flat_index(const std::vector<int64_t>& shape, const std::vector<int64_t>& idx) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}

}  // namespace

double reference_tolerance(DType t) { return t.is_float() ? (t.bits <= 16 ? 1e-2 : (t.bits == 32 ? 1e-3 : 1e-9)) : 0; }

CheckResult check_outputs(const OpInstance& op, const std::vector<rt::NDArray>& inputs,
                          const std::vector<rt::NDArray>& outputs, uint64_t seed) {
  std::vector<std::pair<Tensor, HostTensor>> in;
  for (size_t i = 0; i < op.inputs.size(); ++i) in.emplace_back(op.inputs[i], to_host(inputs[i], op.inputs[i].dtype()));
  CheckResult r;
  const bool full = op.flops <= kFullCheckFlops;
  std::vector<HostTensor> expected_full;
  if (full) expected_full = interpret(op.outputs, in);
  for (size_t i = 0; i < op.outputs.size(); ++i) {
    DType t = op.outputs[i].dtype();
    double tol = reference_tolerance(t);
    HostTensor actual = to_host(outputs[i], t);
    if (full) {
      std::string msg = compare_tensors(expected_full[i], actual, tol, tol);
      r.checked += actual.num_elements();
      if (!msg.empty()) {
        r.ok = false;
        r.detail = op.outputs[i].name() + ": " + msg;
        return r;
      }
      continue;
    }
    auto pts = sample_points(actual.shape, seed + i);
    HostTensor expected = interpret_at(op.outputs[i], in, pts);
    for (size_t p = 0; p < pts.size(); ++p) {
      double want = expected.get_float(static_cast<int64_t>(p));
      double got = actual.get_float(flat_index(actual.shape, pts[p]));
      ++r.checked;
      bool same = (std::isnan(want) && std::isnan(got)) || std::fabs(got - want) <= tol + tol * std::fabs(want);
      if (!same) {
        std::ostringstream os;
        os << op.outputs[i].name() << "[";
        for (size_t d = 0; d < pts[p].size(); ++d) os << (d ? ", " : "") << pts[p][d];
        os << "] = " << got << ", expected " << want;
        r.ok = false;
        r.detail = os.str();
        return r;
      }
    }
  }
  return r;
}

}  // namespace kiln
