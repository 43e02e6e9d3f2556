// cuDNN contenders on a GPU: conv2d (NCHW), conv2d_nhwc (NHWC) and
// depthwise_conv2d (NCHW, group count = channels) with
// cudnnConvolutionForward and the fastest algorithm of cuDNN's own search
// (cudnnFindConvolutionForwardAlgorithmEx on the workload's buffers, with
// a workspace as large as the largest algorithm asks, up to 4 GiB), and
// softmax with cudnnSoftmaxForward (CUDNN_SOFTMAX_ACCURATE, per row).
//
// Epilogues (gpu_mapping.h ConvEpilogue): bias + relu is one
// cudnnConvolutionBiasActivationForward call with the algorithm the search
// found; bias alone, relu alone and relu6 (CLIPPED_RELU at 6) run as
// cudnnAddTensor / cudnnActivationForward after the convolution, inside the
// timed call; hard-swish and hard-sigmoid have no cuDNN activation, and the
// baseline says it does not cover those workloads.
//
// The types are gpu_mapping.h DnnConv's: f32 convolutions use
// CUDNN_FMA_MATH (no TF32 tensor cores: kiln's f32 kernels compute in f32);
// f16 ones store f16 (CUDNN_DATA_HALF) and accumulate in f32 (the
// convolution's compute type CUDNN_DATA_FLOAT), tensor cores allowed
// (CUDNN_TENSOR_OP_MATH).
//
// This is the cuDNN plug-in (contender.h): it runs on device pointers kiln
// allocated in GPU 0's primary context, on the default stream.
#include <cudnn.h>

#include <algorithm>
#include <exception>
#include <vector>

#include "bench/contenders/contender.h"
#include "bench/contenders/cuda_runtime_util.h"
#include "bench/contenders/gpu_mapping.h"

namespace kiln::baselines {

namespace {

constexpr size_t kMaxWorkspace = size_t{4} << 30;

void check_cudnn(cudnnStatus_t s, const char* call) {
  if (s != CUDNN_STATUS_SUCCESS) user_error() << call << " failed (" << cudnnGetErrorString(s) << ")";
}

struct Handle {
  cudnnHandle_t h = nullptr;
  std::string error;
};

// Created once, on first use, in the primary context kiln made current;
// never destroyed (the process ends with it).
const Handle& handle() {
  static Handle h = [] {
    Handle x;
    x.error = cuda_runtime_unavailable("cuDNN");
    if (!x.error.empty()) return x;
    if (cudnnStatus_t s = cudnnCreate(&x.h); s != CUDNN_STATUS_SUCCESS) {
      x.error = std::string("cuDNN could not initialize (cudnnCreate: ") + cudnnGetErrorString(s) + ")";
      return x;
    }
    if (cudnnStatus_t s = cudnnSetStream(x.h, nullptr); s != CUDNN_STATUS_SUCCESS)
      x.error = std::string("cudnnSetStream failed (") + cudnnGetErrorString(s) + ")";
    return x;
  }();
  return h;
}

// The mapping's types by name (gpu_mapping.h) as cuDNN's enumerators.
cudnnDataType_t dnn_type(const std::string& name) {
  if (name == "CUDNN_DATA_HALF") return CUDNN_DATA_HALF;
  internal_assert(name == "CUDNN_DATA_FLOAT") << "no cuDNN data type " << name;
  return CUDNN_DATA_FLOAT;
}

const char* algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "?";
  }
}

// A 4-d tensor descriptor with explicit strides, destroyed with the object.
class TensorDesc {
 public:
  TensorDesc(cudnnDataType_t t, const std::array<int64_t, 4>& d, const std::array<int64_t, 4>& s) {
    check_cudnn(cudnnCreateTensorDescriptor(&desc_), "cudnnCreateTensorDescriptor");
    check_cudnn(cudnnSetTensor4dDescriptorEx(desc_, t, int(d[0]), int(d[1]), int(d[2]), int(d[3]), int(s[0]),
                                             int(s[1]), int(s[2]), int(s[3])),
                "cudnnSetTensor4dDescriptorEx");
  }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(desc_); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

class DnnConvolution : public GpuContender {
 public:
  DnnConvolution(const DnnConv& c, const std::string& dtype, const std::vector<DeviceTensor>& in,
                 const DeviceTensor& out)
      : c_(c),
        type_(dnn_type(c.data_type)),
        x_(type_, c.x_dims(), c.x_strides()),
        y_(type_, c.y_dims(), c.y_strides()),
        bias_desc_(type_, {1, c.k, 1, 1}, {c.k, 1, 1, 1}),
        x_ptr_(device_ptr(in.at(0).ptr)),
        w_ptr_(device_ptr(in.at(1).ptr)),
        y_ptr_(device_ptr(out.ptr)),
        bias_ptr_(c.bias ? device_ptr(in.at(2).ptr) : nullptr) {
    const size_t elem = gpu_element_bytes(dtype, "cuDNN");
    cudnnHandle_t h = handle().h;
    if (c.weight_hwio) {  // HWIO -> KRSC once, outside timing
      const size_t bytes = size_t(c.k * c.r * c.s * c.cg) * elem;
      std::vector<unsigned char> hwio(bytes), krsc(bytes);
      check_cuda(cudaMemcpy(hwio.data(), w_ptr_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
      hwio_to_krsc(hwio.data(), krsc.data(), c.r, c.s, c.cg, c.k, elem);
      weights_ = CudaMemory(bytes);
      check_cuda(cudaMemcpy(weights_.get(), krsc.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
      w_ptr_ = weights_.get();
    }
    check_cudnn(cudnnCreateFilterDescriptor(&w_), "cudnnCreateFilterDescriptor");
    const auto f = c.filter_dims();
    check_cudnn(cudnnSetFilter4dDescriptor(w_, type_, c.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, int(f[0]),
                                           int(f[1]), int(f[2]), int(f[3])),
                "cudnnSetFilter4dDescriptor");
    check_cudnn(cudnnCreateConvolutionDescriptor(&conv_), "cudnnCreateConvolutionDescriptor");
    check_cudnn(cudnnSetConvolution2dDescriptor(conv_, int(c.pad), int(c.pad), int(c.stride), int(c.stride),
                                                int(c.dilation), int(c.dilation), CUDNN_CROSS_CORRELATION,
                                                dnn_type(c.compute_type)),
                "cudnnSetConvolution2dDescriptor");
    check_cudnn(cudnnSetConvolutionGroupCount(conv_, int(c.groups)), "cudnnSetConvolutionGroupCount");
    check_cudnn(cudnnSetConvolutionMathType(conv_, c.tensor_ops ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
                "cudnnSetConvolutionMathType");
    int n = 0, k = 0, oh = 0, ow = 0;
    check_cudnn(cudnnGetConvolution2dForwardOutputDim(conv_, x_.get(), w_, &n, &k, &oh, &ow),
                "cudnnGetConvolution2dForwardOutputDim");
    internal_assert(n == c.n && k == c.k && oh == c.oh && ow == c.ow)
        << "cuDNN's output " << n << "x" << k << "x" << oh << "x" << ow << " is not the op's";

    // The epilogue's activation (the algorithms are timed with it).
    if (!c.activation.empty()) {
      check_cudnn(cudnnCreateActivationDescriptor(&act_), "cudnnCreateActivationDescriptor");
      const bool relu6 = c.activation == "relu6";
      check_cudnn(cudnnSetActivationDescriptor(act_, relu6 ? CUDNN_ACTIVATION_CLIPPED_RELU : CUDNN_ACTIVATION_RELU,
                                               CUDNN_PROPAGATE_NAN, relu6 ? 6.0 : 0.0),
                  "cudnnSetActivationDescriptor");
    }

    // The workspace: as much as the hungriest algorithm wants (capped).
    size_t ws = 0;
    for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a) {
      size_t bytes = 0;
      if (cudnnGetConvolutionForwardWorkspaceSize(h, x_.get(), w_, conv_, y_.get(),
                                                  static_cast<cudnnConvolutionFwdAlgo_t>(a),
                                                  &bytes) == CUDNN_STATUS_SUCCESS)
        ws = std::max(ws, std::min(bytes, kMaxWorkspace));
    }
    CudaMemory search_ws(ws);
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    check_cudnn(cudnnFindConvolutionForwardAlgorithmEx(h, x_.get(), x_ptr_, w_, w_ptr_, conv_, y_.get(), y_ptr_,
                                                       CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf,
                                                       search_ws.get(), search_ws.bytes()),
                "cudnnFindConvolutionForwardAlgorithmEx");
    // The search times each algorithm once, which on small layers ranks
    // them by noise (an FMA algorithm ahead of the tensor-core ones, seen on
    // an H100 at batch 1): each algorithm it found is timed again, as kiln
    // bench times contenders, and the fastest kept.
    const cudnnConvolutionFwdAlgoPerf_t* best = nullptr;
    double best_ms = 0;
    int timed = 0;
    for (int i = 0; i < found; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& p = perf[i];
      if (p.status != CUDNN_STATUS_SUCCESS || (!c.tensor_ops && p.mathType == CUDNN_TENSOR_OP_MATH)) continue;
      algo_ = p.algo;
      check_cudnn(cudnnSetConvolutionMathType(conv_, p.mathType), "cudnnSetConvolutionMathType");
      workspace_ = CudaMemory(p.memory);
      double ms = 0;
      try {
        ms = time_calls_ms([&] { run(); });
      } catch (const std::exception&) {  // found, yet refused with this epilogue: not a candidate
        continue;
      }
      ++timed;
      if (!best || ms < best_ms) best = &p, best_ms = ms;
    }
    user_check(best != nullptr) << "cuDNN's search found no algorithm for this convolution";
    algo_ = best->algo;
    check_cudnn(cudnnSetConvolutionMathType(conv_, best->mathType), "cudnnSetConvolutionMathType");
    workspace_ = CudaMemory(best->memory);

    impl_ = std::string(c.epilogue == ConvEpilogue::kFusedBiasRelu ? "cudnnConvolutionBiasActivationForward"
                                                                   : "cudnnConvolutionForward") +
            " " + algo_name(algo_) + (best->mathType == CUDNN_TENSOR_OP_MATH ? " tensor-op" : "") + ", workspace " +
            std::to_string(best->memory) + " B (fastest of " + std::to_string(timed) + " algorithms timed)";
    if (c.epilogue == ConvEpilogue::kSeparate)
      impl_ += std::string(c.bias ? " + cudnnAddTensor" : "") + (act_ ? " + cudnnActivationForward" : "");
  }
  ~DnnConvolution() override {
    if (act_) cudnnDestroyActivationDescriptor(act_);
    if (conv_) cudnnDestroyConvolutionDescriptor(conv_);
    if (w_) cudnnDestroyFilterDescriptor(w_);
  }
  void enqueue() override { run(); }
  std::string impl() const override { return impl_; }

 private:
  void run() {
    const float one = 1.0f, zero = 0.0f;
    cudnnHandle_t h = handle().h;
    if (c_.epilogue == ConvEpilogue::kFusedBiasRelu) {
      // z = y with alpha2 = 0: y = relu(conv(x, w) + bias).
      check_cudnn(cudnnConvolutionBiasActivationForward(h, &one, x_.get(), x_ptr_, w_, w_ptr_, conv_, algo_,
                                                        workspace_.get(), workspace_.bytes(), &zero, y_.get(), y_ptr_,
                                                        bias_desc_.get(), bias_ptr_, act_, y_.get(), y_ptr_),
                  "cudnnConvolutionBiasActivationForward");
      return;
    }
    check_cudnn(cudnnConvolutionForward(h, &one, x_.get(), x_ptr_, w_, w_ptr_, conv_, algo_, workspace_.get(),
                                        workspace_.bytes(), &zero, y_.get(), y_ptr_),
                "cudnnConvolutionForward");
    if (c_.bias)
      check_cudnn(cudnnAddTensor(h, &one, bias_desc_.get(), bias_ptr_, &one, y_.get(), y_ptr_), "cudnnAddTensor");
    if (act_)
      check_cudnn(cudnnActivationForward(h, act_, &one, y_.get(), y_ptr_, &zero, y_.get(), y_ptr_),
                  "cudnnActivationForward");
  }

  DnnConv c_;
  cudnnDataType_t type_;
  TensorDesc x_, y_, bias_desc_;
  void *x_ptr_, *w_ptr_, *y_ptr_, *bias_ptr_;
  CudaMemory weights_, workspace_;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnActivationDescriptor_t act_ = nullptr;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  std::string impl_;
};

class DnnSoftmaxContender : public GpuContender {
 public:
  DnnSoftmaxContender(const DnnSoftmax& s, uint64_t x, uint64_t y)
      : desc_(dnn_type(s.data_type), {s.rows, s.cols, 1, 1}, {s.cols, 1, 1, 1}), x_(device_ptr(x)), y_(device_ptr(y)) {}
  void enqueue() override {
    const float one = 1.0f, zero = 0.0f;
    check_cudnn(cudnnSoftmaxForward(handle().h, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one, desc_.get(),
                                    x_, &zero, desc_.get(), y_),
                "cudnnSoftmaxForward");
  }
  std::string impl() const override { return "cudnnSoftmaxForward CUDNN_SOFTMAX_ACCURATE MODE_INSTANCE"; }

 private:
  TensorDesc desc_;
  void *x_, *y_;
};

class CudnnPlugin : public GpuContenderPlugin {
 public:
  std::string unavailable_reason() const override { return handle().error; }
  std::string version() const override {
    const size_t v = cudnnGetVersion();  // 91900 for 9.19.0
    return "cuDNN " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100) +
           " (cudnnConvolutionForward with cudnnFindConvolutionForwardAlgorithmEx's fastest algorithm; "
           "cudnnSoftmaxForward)";
  }
  bool supports(const ContenderOp& op) const override { return cudnn_supports(op); }
  std::unique_ptr<GpuContender> make(const ContenderOp& op, const std::vector<DeviceTensor>& inputs,
                                     const DeviceTensor& out) const override {
    user_check(handle().error.empty()) << handle().error;
    user_check(cudnn_supports(op)) << "cuDNN has no contender for " << op.canonical
                                   << " (conv2d, conv2d_nhwc, depthwise_conv2d and softmax, in f32 and f16)";
    for (const DeviceTensor& t : inputs) check_shared_pointer(t.ptr, "cuDNN");
    if (op.op == "softmax")
      return std::make_unique<DnnSoftmaxContender>(dnn_softmax(op), inputs.at(0).ptr, out.ptr);
    const DnnConv c = dnn_conv(op);
    user_check(c.uncovered.empty()) << c.uncovered;
    return std::make_unique<DnnConvolution>(c, op.dtype, inputs, out);
  }
};

}  // namespace
}  // namespace kiln::baselines

extern "C" const kiln::baselines::GpuContenderPlugin* KILN_GPU_CONTENDER_ENTRY() {
  static const kiln::baselines::CudnnPlugin plugin;
  return &plugin;
}
