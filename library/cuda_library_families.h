// The op families of cuda libraries (`kiln lib --target cuda`): which built
// ops go into a library, under which dispatcher, with which parameters, and
// the fallback kernel (cuda_fallback_kernels.h) each family's dispatcher
// calls for an untuned shape.
//
// A family is the op with its epilogue flags (the dispatcher is
// NAME_<family>_<dtype>, dtype f32, f16 or bf16; f16 and bf16 buffers are
// 16-bit data, uint16_t* in the header):
//   matmul[_bias][_relu|_gelu](M, N, K, A, B, [bias,] C)
//   dense[_bias][_relu|_gelu](N, IN, OUT, data, weight, [bias,] out)
//   batch_matmul(batch, M, N, K, A, B, C)
//   conv2d[_bias][_relu|_relu6|_hswish|_hsigmoid](N, C, H, W, K, R, S, stride, pad, dilation, data, weight, [bias,] out)
//   conv2d_nhwc[...](N, H, W, C, K, R, S, stride, pad, dilation, data, weight, [bias,] out)
//   depthwise_conv2d[...](N, C, H, W, R, S, stride, pad, dilation, data, weight, [bias,] out)
//   max_pool2d(N, C, H, W, R, S, stride, pad, data, out), avg_pool2d likewise
//   softmax(M, N, data, out)
//   layer_norm(M, N, data, gamma, beta, out)
// Every function also takes `void* stream` last.
#pragma once

#include <string>
#include <vector>

#include "kernels/op_registry.h"

namespace kiln {

struct CudaFamily {
  std::string name;                      // "matmul_bias_gelu"
  std::string op;                        // "matmul"
  std::vector<std::string> sizes;        // the dispatcher's size parameters, e.g. {"batch", "M", "N", "K"}
  std::vector<std::string> size_params;  // the op parameter of each, e.g. {"B", "M", "N", "K"}
  std::vector<std::string> buffers;      // inputs then the output, in the kernel's argument order
  bool bias = false;
  int act = 0;          // the fallback kernels' activation code (FallbackAct)
  bool window = false;  // a convolution or pool: the dispatcher checks the window (check_window)
  std::string summary;  // what it computes, for the header
};

// The family of a built op, or "" with *why set when cuda libraries do not
// cover it (an op without a cuda template, another dtype, transposed
// operands, groups).
std::string cuda_family_name(const OpInstance& op, std::string* why);
CudaFamily cuda_family(const std::string& name);
// What cuda libraries cover, for messages.
std::string cuda_library_supported_text();

// The C statements a dispatcher of family `f` for `dtype` runs before its
// tuned shapes: the argument checks (returning ERROR_ARGUMENT on failure).
std::string cuda_family_checks(const CudaFamily& f);
// The C expression a dispatcher returns for an untuned shape: the fallback.
std::string cuda_fallback_call(const CudaFamily& f, const std::string& dtype);

}  // namespace kiln
