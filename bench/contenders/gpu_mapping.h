// How kiln's ops map onto cuBLAS and cuDNN calls: the pure arithmetic of
// the GPU plug-ins (cublas_ops.cpp, cudnn_ops.cpp), kept free of CUDA
// headers so that it is unit-tested on machines without a GPU
// (tests/test_bench_gpu_mapping.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/contenders/contender.h"

namespace kiln::baselines {

// ---- cuBLAS: a row-major GEMM as a column-major one.
//
// kiln's GEMMs are row-major: C[M, N] = op(A)[M, K] . op(B)[K, N]. A
// row-major matrix is its transpose in column-major order, so cuBLAS
// computes C^T[N, M] (column-major, ldc = N) = op(B)^T . op(A)^T: the first
// cuBLAS operand is B, the second A, with m = N, n = M. A row-major [K, N] B
// is a column-major N x K matrix (ld N, no transposition); stored
// transposed ([N, K]) it is a column-major K x N matrix (ld K) taken
// transposed. Likewise for A.
struct BlasGemm {
  int64_t m = 0, n = 0, k = 0;
  bool trans_first = false, trans_second = false;  // CUBLAS_OP_T for the operands
  int64_t ld_first = 0, ld_second = 0, ldc = 0;
  int first_input = 1, second_input = 0;  // which op inputs they are (B, A)
  // batch_matmul: cublasGemmStridedBatchedEx over `batch` products, each
  // operand's batches `stride_*` elements apart; or cublasGemmBatchedEx,
  // the pointer-array form, with the pointers of batch_pointers().
  bool batched = false;
  int64_t batch = 1;
  int64_t stride_first = 0, stride_second = 0, stride_c = 0;
  // The epilogue: bias[N] added to every row (a bias per row of the
  // column-major C^T: cuBLASLt's bias vector), then relu or gelu.
  bool bias = false, relu = false, gelu = false;
  int bias_input = -1;
  bool has_epilogue() const { return bias || relu || gelu; }
  // The types, by the names of cuBLAS's enumerators (the plug-in turns them
  // into cudaDataType_t and cublasComputeType_t): A, B, C and the bias in
  // the op's dtype (CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF), every dtype
  // summed in f32 (CUBLAS_COMPUTE_32F, f32 alpha and beta) as kiln's
  // kernels sum it: f32 with full f32 FMAs (no TF32), f16 and bf16 on
  // tensor cores with f32 accumulators (which cuBLAS's default math mode
  // and CUBLAS_GEMM_DEFAULT allow).
  std::string data_type = "CUDA_R_32F";
  std::string compute_type = "CUBLAS_COMPUTE_32F";
};

// Whether cuBLAS has a contender for the op: matmul, dense and batch_matmul
// in f32, f16 and bf16.
bool cublas_supports(const ContenderOp& op);

// UserError for an op that is not matmul, dense or batch_matmul, or of
// another dtype than f32, f16 and bf16.
BlasGemm blas_gemm(const ContenderOp& op);

// The pointer arrays of cublasGemmBatchedEx (Aarray, Barray, Carray) for a
// batched GEMM whose operands start at `first`, `second` and `c` (device
// addresses, or host ones in the tests), elements of `element_bytes` bytes:
// batch i of each at its start + i * stride_* elements. The leading
// dimensions, transpositions and sizes are the strided form's.
struct BatchPointers {
  std::vector<uint64_t> first, second, c;
};
BatchPointers batch_pointers(const BlasGemm& g, uint64_t first, uint64_t second, uint64_t c, size_t element_bytes);

// ---- cuDNN: convolutions.
//
// conv2d (NCHW data, KCRS weights), conv2d_nhwc (NHWC data, HWIO weights)
// and depthwise_conv2d (NCHW, [C, 1, R, S] weights: groups = C). cuDNN's
// filter formats are KCRS (CUDNN_TENSOR_NCHW) and KRSC (CUDNN_TENSOR_NHWC);
// conv2d_nhwc's HWIO weights are reordered to KRSC once, outside timing, as
// a framework keeping NHWC weights for cuDNN would store them.
enum class ConvEpilogue {
  kNone,           // cudnnConvolutionForward alone
  kFusedBiasRelu,  // cudnnConvolutionBiasActivationForward (bias + relu in one call)
  kSeparate,       // cudnnConvolutionForward, then cudnnAddTensor (bias) and/or
                   // cudnnActivationForward (relu, relu6 as CLIPPED_RELU 6), inside the timed call
};

struct DnnConv {
  bool nhwc = false;                  // data and filter layout (CUDNN_TENSOR_NHWC), else NCHW
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t k = 0, cg = 0, r = 0, s = 0;  // filter: k outputs, cg = c / groups inputs each
  int64_t groups = 1;
  int64_t pad = 0, stride = 1, dilation = 1;
  int64_t oh = 0, ow = 0;  // output
  bool weight_hwio = false;  // the op's weights are HWIO: reorder to KRSC
  bool bias = false;
  std::string activation;  // "", "relu", "relu6", "hswish", "hsigmoid"
  ConvEpilogue epilogue = ConvEpilogue::kNone;
  // Not empty when cuDNN's API has no activation for this workload: the
  // baseline does not cover it, and says so.
  std::string uncovered;
  // The types, by the names of cuDNN's enumerators: the tensors and the
  // filter in the op's dtype (CUDNN_DATA_FLOAT, CUDNN_DATA_HALF), summed in
  // f32 (the convolution descriptor's CUDNN_DATA_FLOAT) for both. f32 runs
  // with CUDNN_FMA_MATH only (no TF32, as kiln's f32 kernels); f16 may use
  // tensor cores (CUDNN_TENSOR_OP_MATH: the search's fastest algorithm of
  // either math type).
  std::string data_type = "CUDNN_DATA_FLOAT";
  std::string compute_type = "CUDNN_DATA_FLOAT";
  bool tensor_ops = false;
  // The input, output and bias as cuDNN 4-d tensors: dimensions in NCHW
  // order with the strides of the op's layout.
  std::array<int64_t, 4> x_dims() const { return {n, c, h, w}; }
  std::array<int64_t, 4> x_strides() const { return strides_of({n, c, h, w}); }
  std::array<int64_t, 4> y_dims() const { return {n, k, oh, ow}; }
  std::array<int64_t, 4> y_strides() const { return strides_of({n, k, oh, ow}); }
  // The filter's dimensions in KCRS order (cudnnSetFilter4dDescriptor takes
  // them so for either format).
  std::array<int64_t, 4> filter_dims() const { return {k, cg, r, s}; }

 private:
  std::array<int64_t, 4> strides_of(const std::array<int64_t, 4>& d) const;
};

// Whether cuDNN has a contender for the op: conv2d, conv2d_nhwc,
// depthwise_conv2d and softmax in f32 and f16.
bool cudnn_supports(const ContenderOp& op);

// UserError for an op that is not conv2d, conv2d_nhwc or depthwise_conv2d,
// or of another dtype than f32 and f16.
DnnConv dnn_conv(const ContenderOp& op);

// HWIO weights [R, S, Cg, K] to KRSC [K, R, S, Cg], elements of
// `element_bytes` bytes.
void hwio_to_krsc(const void* src, void* dst, int64_t R, int64_t S, int64_t Cg, int64_t K, size_t element_bytes);

// ---- cuDNN: softmax over the last axis of [M, N] rows, as an
// [M, N, 1, 1] tensor with CUDNN_SOFTMAX_MODE_INSTANCE.
struct DnnSoftmax {
  int64_t rows = 0, cols = 0;
  std::string data_type = "CUDNN_DATA_FLOAT";  // or CUDNN_DATA_HALF
};
DnnSoftmax dnn_softmax(const ContenderOp& op);

// The element size of a dtype the GPU plug-ins take ("f32": 4, "f16" and
// "bf16": 2); UserError for any other.
size_t gpu_element_bytes(const std::string& dtype, const std::string& library);

}  // namespace kiln::baselines
