#include "bench/contenders/blocked_layout.h"

namespace kiln::baselines {

rt::NDArray unblock_data(const BlockedConvShape& s, const rt::NDArray& blocked) {
  rt::NDArray plain = rt::NDArray::empty({s.N, s.C, s.H, s.W}, blocked.dtype());
  const float* b = blocked.data_as<float>();
  float* p = plain.data_as<float>();
  const int64_t plane = s.H * s.W;
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t c = 0; c < s.C; ++c)
      for (int64_t i = 0; i < plane; ++i)
        p[(n * s.C + c) * plane + i] = b[((n * (s.C / s.cb) + c / s.cb) * plane + i) * s.cb + c % s.cb];
  return plain;
}

rt::NDArray unblock_weight(const BlockedConvShape& s, const rt::NDArray& blocked) {
  rt::NDArray plain = rt::NDArray::empty({s.K, s.Cg, s.R, s.S}, blocked.dtype());
  const float* b = blocked.data_as<float>();
  float* p = plain.data_as<float>();
  const int64_t taps = s.R * s.S, blocks = s.Cg / s.cb;
  for (int64_t k = 0; k < s.K; ++k)
    for (int64_t c = 0; c < s.Cg; ++c)
      for (int64_t t = 0; t < taps; ++t)
        p[(k * s.Cg + c) * taps + t] =
            b[(((k / s.kb) * blocks + c / s.cb) * taps + t) * s.cb * s.kb + (c % s.cb) * s.kb + k % s.kb];
  return plain;
}

rt::NDArray unblock_depthwise_weight(const BlockedConvShape& s, const rt::NDArray& blocked) {
  rt::NDArray plain = rt::NDArray::empty({s.C, 1, s.R, s.S}, blocked.dtype());
  const float* b = blocked.data_as<float>();
  float* p = plain.data_as<float>();
  const int64_t taps = s.R * s.S;
  for (int64_t c = 0; c < s.C; ++c)
    for (int64_t t = 0; t < taps; ++t) p[c * taps + t] = b[((c / s.cb) * taps + t) * s.cb + c % s.cb];
  return plain;
}

void block_output(const BlockedConvShape& s, const rt::NDArray& plain, const rt::NDArray& blocked) {
  const float* p = plain.data_as<float>();
  float* b = blocked.data_as<float>();
  const int64_t plane = s.OH * s.OW;
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t k = 0; k < s.K; ++k)
      for (int64_t i = 0; i < plane; ++i)
        b[((n * (s.K / s.kb) + k / s.kb) * plane + i) * s.kb + k % s.kb] = p[(n * s.K + k) * plane + i];
}

}  // namespace kiln::baselines
