// oneDNN contenders for the benchmarks, set up on caller-owned NDArrays so
// that kiln and oneDNN run on the same inputs: fp32 sgemm (row-major
// C = A.B) and fp32 conv2d forward with oneDNN's own blocked layouts
// (format_tag::any; inputs reordered once at set-up, outside timing).
#pragma once

#include <memory>
#include <string>

#include "runtime/ndarray.h"

namespace kiln::baselines {

std::string onednn_version();

class OnednnContender {
 public:
  virtual ~OnednnContender() = default;
  virtual void run() = 0;
  // Writes the result in the user's layout (row-major / NCHW) into the
  // output array given at set-up (outside timing).
  virtual void finish() = 0;
  virtual std::string impl() const = 0;
};

// C[M,N] = A[M,K] . B[K,N], row-major f32.
std::unique_ptr<OnednnContender> onednn_matmul(const rt::NDArray& A, const rt::NDArray& B, const rt::NDArray& C);

// out[N,K,OH,OW] = conv(data[N,C,H,W], weight[K,C,R,S]), f32, zero padding.
std::unique_ptr<OnednnContender> onednn_conv2d(const rt::NDArray& data, const rt::NDArray& weight,
                                               const rt::NDArray& out, int64_t stride, int64_t pad, int64_t dilation);

}  // namespace kiln::baselines
