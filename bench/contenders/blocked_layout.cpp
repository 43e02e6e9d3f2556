#include "bench/contenders/blocked_layout.h"

#include <cstring>

namespace kiln::baselines {

namespace {

// Element-size generic copies (the conversions run outside timing).
template <class T>
void copy_as(const rt::NDArray& to, int64_t ti, const rt::NDArray& from, int64_t fi) {
  to.data_as<T>()[ti] = from.data_as<T>()[fi];
}

// Calls f(to_index, from_index) for every element; `f` does the copy of the
// array's element size.
template <class F>
void with_element_copy(const rt::NDArray& a, const F& body) {
  switch (a.dtype().bytes()) {
    case 1:
      return body([](const rt::NDArray& t, int64_t ti, const rt::NDArray& f, int64_t fi) { copy_as<uint8_t>(t, ti, f, fi); });
    case 2:
      return body([](const rt::NDArray& t, int64_t ti, const rt::NDArray& f, int64_t fi) { copy_as<uint16_t>(t, ti, f, fi); });
    case 8:
      return body([](const rt::NDArray& t, int64_t ti, const rt::NDArray& f, int64_t fi) { copy_as<uint64_t>(t, ti, f, fi); });
    default:
      return body([](const rt::NDArray& t, int64_t ti, const rt::NDArray& f, int64_t fi) { copy_as<uint32_t>(t, ti, f, fi); });
  }
}

}  // namespace

rt::NDArray unblock_data(const BlockedConvShape& s, const rt::NDArray& blocked) {
  rt::NDArray plain = rt::NDArray::empty({s.N, s.C, s.H, s.W}, blocked.dtype());
  const int64_t plane = s.H * s.W;
  with_element_copy(blocked, [&](auto copy) {
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t c = 0; c < s.C; ++c)
        for (int64_t i = 0; i < plane; ++i)
          copy(plain, (n * s.C + c) * plane + i, blocked, ((n * (s.C / s.cb) + c / s.cb) * plane + i) * s.cb + c % s.cb);
  });
  return plain;
}

rt::NDArray unblock_weight(const BlockedConvShape& s, const rt::NDArray& blocked) {
  rt::NDArray plain = rt::NDArray::empty({s.K, s.Cg, s.R, s.S}, blocked.dtype());
  const int64_t taps = s.R * s.S, blocks = s.Cg / s.cb;
  with_element_copy(blocked, [&](auto copy) {
    for (int64_t k = 0; k < s.K; ++k)
      for (int64_t c = 0; c < s.Cg; ++c)
        for (int64_t t = 0; t < taps; ++t)
          copy(plain, (k * s.Cg + c) * taps + t, blocked,
               (((k / s.kb) * blocks + c / s.cb) * taps + t) * s.cb * s.kb + (c % s.cb) * s.kb + k % s.kb);
  });
  return plain;
}

rt::NDArray unblock_vnni_weight(const BlockedConvShape& s, const rt::NDArray& blocked, int64_t steps) {
  rt::NDArray plain = rt::NDArray::empty({s.K, s.Cg, s.R, s.S}, blocked.dtype());
  const int64_t taps = s.R * s.S, blocks = s.Cg / s.cb;
  with_element_copy(blocked, [&](auto copy) {
    for (int64_t k = 0; k < s.K; ++k)
      for (int64_t c = 0; c < s.Cg; ++c)
        for (int64_t t = 0; t < taps; ++t) {
          const int64_t ci = c % s.cb;
          copy(plain, (k * s.Cg + c) * taps + t, blocked,
               ((((k / s.kb) * blocks + c / s.cb) * taps + t) * (s.cb / steps) + ci / steps) * s.kb * steps +
                   (k % s.kb) * steps + ci % steps);
        }
  });
  return plain;
}

rt::NDArray unblock_depthwise_weight(const BlockedConvShape& s, const rt::NDArray& blocked) {
  rt::NDArray plain = rt::NDArray::empty({s.C, 1, s.R, s.S}, blocked.dtype());
  const int64_t taps = s.R * s.S;
  with_element_copy(blocked, [&](auto copy) {
    for (int64_t c = 0; c < s.C; ++c)
      for (int64_t t = 0; t < taps; ++t) copy(plain, c * taps + t, blocked, ((c / s.cb) * taps + t) * s.cb + c % s.cb);
  });
  return plain;
}

void block_output(const BlockedConvShape& s, const rt::NDArray& plain, const rt::NDArray& blocked) {
  const int64_t plane = s.OH * s.OW;
  with_element_copy(blocked, [&](auto copy) {
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t k = 0; k < s.K; ++k)
        for (int64_t i = 0; i < plane; ++i)
          copy(blocked, ((n * (s.K / s.kb) + k / s.kb) * plane + i) * s.kb + k % s.kb, plain, (n * s.K + k) * plane + i);
  });
}

}  // namespace kiln::baselines
