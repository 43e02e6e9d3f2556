// Shared by the graph layer's tests: Conv nodes, and random networks of
// convolutions (dense and depthwise, strides, padding) and element-wise
// nodes (unary, residual adds) for the executor to agree with the
// interpreter on.
#pragma once

#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "onnx_builder.h"

namespace kiln::test {

// A Conv node with a bias, square kernel `k`, uniform padding and strides
// (sh, sw); random weights from `seed`.
inline void add_conv(OnnxBuilder& b, const std::string& in, const std::string& out, int64_t C, int64_t K, int64_t k,
                     int64_t pad, int64_t sh, int64_t sw, int64_t groups, uint64_t seed) {
  using Ints = std::vector<int64_t>;
  const std::string w = out + "_w", bias = out + "_b";
  b.weight(w, {K, C / groups, k, k}, {}, seed).weight(bias, {K}, {}, seed + 1);
  b.node(
      "Conv", {in, w, bias}, {out},
      {{"kernel_shape", Ints{k, k}}, {"pads", Ints{pad, pad, pad, pad}}, {"strides", Ints{sh, sw}}, {"group", groups}});
}

struct RandomNetwork {
  OnnxBuilder model{11};
  std::vector<int64_t> input_shape;  // of "x"
  std::string what;                  // the layers, for failure messages
  bool empty = true;                 // no layer was drawn
};

// Layers drawn from `seed`: 2 to 5 of convolutions (a third of them
// depthwise; output channels from channels[1..]), unary nodes, and adds of
// an earlier tensor of the same shape (a square when there is none). The
// input has channels from `channels` and extents min_extent to
// min_extent + extent_range - 1.
inline RandomNetwork random_network(uint64_t seed, const std::vector<int64_t>& channels, int64_t min_extent,
                                    int64_t extent_range) {
  using Ints = std::vector<int64_t>;
  std::mt19937_64 rng(seed);
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); };
  RandomNetwork net;
  OnnxBuilder& b = net.model;
  int64_t C = channels[static_cast<size_t>(pick(static_cast<int64_t>(channels.size())))];
  const int64_t H = min_extent + pick(extent_range), W = min_extent + pick(extent_range);
  net.input_shape = {1, C, H, W};
  b.input("x", net.input_shape);
  std::string cur = "x";
  std::vector<std::pair<std::string, Ints>> seen = {{"x", {C, H, W}}};
  int64_t h = H, w = W;
  const int layers = 2 + static_cast<int>(pick(4));
  std::ostringstream what;
  what << "seed " << seed << ": x 1x" << C << "x" << H << "x" << W;
  for (int l = 0; l < layers; ++l) {
    const std::string out = "t" + std::to_string(l);
    const int kind = static_cast<int>(pick(5));
    if (kind <= 2) {
      const bool depthwise = kind == 0;
      const int64_t K =
          depthwise ? C : channels[static_cast<size_t>(1 + pick(static_cast<int64_t>(channels.size()) - 1))];
      const int64_t k = 1 + 2 * pick(2), pad = pick(k / 2 + 1), sh = 1 + pick(2), sw = 1 + pick(2);
      if ((h + 2 * pad - k) / sh + 1 <= 0 || (w + 2 * pad - k) / sw + 1 <= 0) continue;
      add_conv(b, cur, out, C, K, k, pad, sh, sw, depthwise ? C : 1, seed * 10 + static_cast<uint64_t>(l));
      h = (h + 2 * pad - k) / sh + 1;
      w = (w + 2 * pad - k) / sw + 1;
      C = K;
      what << " -> " << (depthwise ? "dw" : "conv") << k << "x" << k << " s" << sh << "," << sw << " p" << pad << " K"
           << K;
    } else if (kind == 3) {
      b.node(pick(2) ? "Relu" : "Sigmoid", {cur}, {out});
      what << " -> unary";
    } else {
      // A residual add with an earlier tensor of the same shape, else a square.
      std::string other = cur;
      for (const auto& [name, s] : seen)
        if (s == Ints{C, h, w} && name != cur) other = name;
      b.node(other == cur ? "Mul" : "Add", {cur, other}, {out});
      what << " -> " << (other == cur ? "square" : "add " + other);
    }
    cur = out;
    seen.push_back({cur, {C, h, w}});
  }
  net.what = what.str();
  net.empty = cur == "x";
  if (!net.empty) b.output(cur);
  return net;
}

}  // namespace kiln::test
