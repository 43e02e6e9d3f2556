// cuBLAS contenders for the GEMM ops on a GPU: matmul and dense with
// cublasGemmEx, batch_matmul with the faster (timed in set-up) of
// cublasGemmStridedBatchedEx and cublasGemmBatchedEx (pointer arrays), all
// with CUBLAS_GEMM_DEFAULT (cuBLAS's own heuristic). kiln's row-major products
// become column-major ones (gpu_mapping.h: C^T = op(B)^T . op(A)^T).
//
// A workload with an epilogue (bias, relu, gelu) runs as one cublasLtMatmul
// with the matching fused epilogue (CUBLASLT_EPILOGUE_BIAS, RELU_BIAS,
// GELU_BIAS, RELU, GELU), the algorithm cuBLASLt's heuristic ranks first
// with a 32 MiB workspace: what a user who cares about speed calls, rather
// than a GEMM and a separate pass. cuBLASLt's GELU is the tanh
// approximation (within 5e-4 of the erf GELU kiln computes, inside the
// output check's tolerance): the baseline does slightly less work there.
//
// Every dtype sums in f32 (gpu_mapping.h BlasGemm's types), as kiln's
// kernels do. f32 computes with CUBLAS_COMPUTE_32F: full f32 FMAs, no TF32
// tensor cores. f16 (CUDA_R_16F) and bf16 (CUDA_R_16BF) store 16 bits and
// accumulate in f32 (CUBLAS_COMPUTE_32F): the handle keeps cuBLAS's default
// math mode, under which CUBLAS_GEMM_DEFAULT runs them on tensor cores
// (CUBLAS_GEMM_DEFAULT_TENSOR_OP is the same algorithm, deprecated).
//
// This is the cuBLAS plug-in (contender.h): it runs on device pointers kiln
// allocated in GPU 0's primary context, on the default stream.
#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "bench/contenders/contender.h"
#include "bench/contenders/cuda_runtime_util.h"
#include "bench/contenders/gpu_mapping.h"

namespace kiln::baselines {

namespace {

constexpr size_t kLtWorkspace = size_t{32} << 20;

void check_cublas(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) user_error() << call << " failed (" << cublasGetStatusName(s) << ")";
}

// The handles, created once, on first use, in the primary context kiln made
// current; never destroyed (the process ends with them).
struct Handles {
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  std::string error;
};

const Handles& handles() {
  static Handles h = [] {
    Handles x;
    x.error = cuda_runtime_unavailable("cuBLAS");
    if (!x.error.empty()) return x;
    if (cublasStatus_t s = cublasCreate(&x.blas); s != CUBLAS_STATUS_SUCCESS) {
      x.error = std::string("cuBLAS could not initialize (cublasCreate: ") + cublasGetStatusName(s) + ")";
      return x;
    }
    if (cublasStatus_t s = cublasLtCreate(&x.lt); s != CUBLAS_STATUS_SUCCESS) {
      x.error = std::string("cuBLASLt could not initialize (cublasLtCreate: ") + cublasGetStatusName(s) + ")";
      return x;
    }
    // The default stream, kiln's: its CUDA events time what cuBLAS issues.
    if (cublasStatus_t s = cublasSetStream(x.blas, nullptr); s != CUBLAS_STATUS_SUCCESS)
      x.error = std::string("cublasSetStream failed (") + cublasGetStatusName(s) + ")";
    return x;
  }();
  return h;
}

// The mapping's types by name (gpu_mapping.h) as cuBLAS's enumerators.
cudaDataType_t cuda_type(const std::string& name) {
  if (name == "CUDA_R_16F") return CUDA_R_16F;
  if (name == "CUDA_R_16BF") return CUDA_R_16BF;
  internal_assert(name == "CUDA_R_32F") << "no cuBLAS data type " << name;
  return CUDA_R_32F;
}

cublasComputeType_t compute_type(const std::string& name) {
  internal_assert(name == "CUBLAS_COMPUTE_32F") << "no cuBLAS compute type " << name;
  return CUBLAS_COMPUTE_32F;
}

// "CUDA_R_16BF CUBLAS_COMPUTE_32F", for impl().
std::string types_text(const BlasGemm& g) { return g.data_type + " " + g.compute_type; }

cublasOperation_t op_of(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

// cublasGemmEx for matmul and dense.
class CublasGemm : public GpuContender {
 public:
  CublasGemm(const BlasGemm& g, uint64_t first, uint64_t second, uint64_t c)
      : g_(g),
        type_(cuda_type(g.data_type)),
        compute_(compute_type(g.compute_type)),
        first_(device_ptr(first)),
        second_(device_ptr(second)),
        c_(device_ptr(c)) {}
  void enqueue() override {
    const float alpha = 1.0f, beta = 0.0f;
    check_cublas(cublasGemmEx(handles().blas, op_of(g_.trans_first), op_of(g_.trans_second), int(g_.m), int(g_.n),
                              int(g_.k), &alpha, first_, type_, int(g_.ld_first), second_, type_, int(g_.ld_second),
                              &beta, c_, type_, int(g_.ldc), compute_, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  }
  std::string impl() const override { return "cublasGemmEx " + types_text(g_) + " CUBLAS_GEMM_DEFAULT"; }

 private:
  BlasGemm g_;
  cudaDataType_t type_;
  cublasComputeType_t compute_;
  void *first_, *second_, *c_;
};

// batch_matmul in both of cuBLAS's batched forms: cublasGemmStridedBatchedEx
// (each operand's batches a fixed stride apart) and cublasGemmBatchedEx
// (arrays of per-batch pointers in device memory, built once here). Set-up
// times both on the workload's buffers (CUDA events on the default stream,
// a warm-up call each, then the best of kRounds calls, the forms
// alternating) and keeps the faster; impl() names it and both set-up times,
// so the bench's JSON says which won. The bench then times the winner like
// any contender.
class CublasBatchedGemm : public GpuContender {
 public:
  CublasBatchedGemm(const BlasGemm& g, size_t element_bytes, uint64_t first, uint64_t second, uint64_t c)
      : g_(g),
        type_(cuda_type(g.data_type)),
        compute_(compute_type(g.compute_type)),
        first_(device_ptr(first)),
        second_(device_ptr(second)),
        c_(device_ptr(c)) {
    const BatchPointers p = batch_pointers(g, first, second, c, element_bytes);
    const size_t bytes = sizeof(uint64_t) * p.first.size();
    pointers_ = CudaMemory(3 * bytes);
    char* base = static_cast<char*>(pointers_.get());
    check_cuda(cudaMemcpy(base, p.first.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    check_cuda(cudaMemcpy(base + bytes, p.second.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    check_cuda(cudaMemcpy(base + 2 * bytes, p.c.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    first_array_ = reinterpret_cast<const void* const*>(base);
    second_array_ = reinterpret_cast<const void* const*>(base + bytes);
    c_array_ = reinterpret_cast<void* const*>(base + 2 * bytes);
    choose();
  }
  void enqueue() override { pointer_arrays_ ? enqueue_arrays() : enqueue_strided(); }
  std::string impl() const override { return impl_; }

 private:
  static constexpr int kRounds = 5;

  void enqueue_strided() {
    const float alpha = 1.0f, beta = 0.0f;
    check_cublas(
        cublasGemmStridedBatchedEx(handles().blas, op_of(g_.trans_first), op_of(g_.trans_second), int(g_.m), int(g_.n),
                                   int(g_.k), &alpha, first_, type_, int(g_.ld_first), g_.stride_first, second_, type_,
                                   int(g_.ld_second), g_.stride_second, &beta, c_, type_, int(g_.ldc), g_.stride_c,
                                   int(g_.batch), compute_, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
  }
  void enqueue_arrays() {
    const float alpha = 1.0f, beta = 0.0f;
    check_cublas(cublasGemmBatchedEx(handles().blas, op_of(g_.trans_first), op_of(g_.trans_second), int(g_.m),
                                     int(g_.n), int(g_.k), &alpha, first_array_, type_, int(g_.ld_first), second_array_,
                                     type_, int(g_.ld_second), &beta, c_array_, type_, int(g_.ldc), int(g_.batch),
                                     compute_, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmBatchedEx");
  }
  void choose() {
    EventTimer timer;
    // Milliseconds of one call of the form.
    auto time_once = [&](bool arrays) {
      return timer.time([&] { arrays ? enqueue_arrays() : enqueue_strided(); });
    };
    float best[2] = {1e30f, 1e30f};  // strided, arrays
    for (int form = 0; form < 2; ++form) time_once(form == 1);  // warm-up
    for (int r = 0; r < kRounds; ++r)
      for (int form = 0; form < 2; ++form) best[form] = std::min(best[form], time_once(form == 1));
    pointer_arrays_ = best[1] < best[0];
    const char* strided = "cublasGemmStridedBatchedEx";
    const char* arrays = "cublasGemmBatchedEx";
    std::ostringstream os;
    os << (pointer_arrays_ ? arrays : strided) << " x" << g_.batch << " " << types_text(g_)
       << " CUBLAS_GEMM_DEFAULT (the faster batched form in set-up: " << strided << " " << std::fixed
       << std::setprecision(4) << best[0] << " ms, " << arrays << " (pointer arrays) " << best[1] << " ms)";
    impl_ = os.str();
  }

  BlasGemm g_;
  cudaDataType_t type_;
  cublasComputeType_t compute_;
  void *first_, *second_, *c_;
  CudaMemory pointers_;
  const void* const* first_array_ = nullptr;
  const void* const* second_array_ = nullptr;
  void* const* c_array_ = nullptr;
  bool pointer_arrays_ = false;
  std::string impl_;
};

cublasLtEpilogue_t lt_epilogue(const BlasGemm& g) {
  if (g.bias) return g.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : g.gelu ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  return g.relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_GELU;
}

std::string epilogue_name(const BlasGemm& g) {
  if (g.bias) return g.relu ? "RELU_BIAS" : g.gelu ? "GELU_BIAS" : "BIAS";
  return g.relu ? "RELU" : "GELU";
}

// One cublasLtMatmul with the epilogue fused.
class CublasLtGemm : public GpuContender {
 public:
  CublasLtGemm(const BlasGemm& g, uint64_t first, uint64_t second, uint64_t c, uint64_t bias)
      : g_(g), first_(device_ptr(first)), second_(device_ptr(second)), c_(device_ptr(c)), workspace_(kLtWorkspace) {
    internal_assert(!g.batched) << "batch_matmul has no epilogue";
    const cudaDataType_t type = cuda_type(g.data_type);
    // f32 alpha and beta (the scale type of CUBLAS_COMPUTE_32F).
    check_cublas(cublasLtMatmulDescCreate(&desc_, compute_type(g.compute_type), CUDA_R_32F),
                 "cublasLtMatmulDescCreate");
    const cublasOperation_t ta = op_of(g.trans_first), tb = op_of(g.trans_second);
    check_cublas(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA");
    check_cublas(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB");
    const cublasLtEpilogue_t ep = lt_epilogue(g);
    check_cublas(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep),
                 "cublasLtMatmulDescSetAttribute(EPILOGUE)");
    if (g.bias) {
      void* b = device_ptr(bias);
      check_cublas(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b),
                   "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
      check_cublas(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type, sizeof type),
                   "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)");
    }
    // The stored matrices: op(first) is m x k, op(second) k x n.
    check_cublas(cublasLtMatrixLayoutCreate(&a_, type, g.trans_first ? g.k : g.m, g.trans_first ? g.m : g.k,
                                            g.ld_first),
                 "cublasLtMatrixLayoutCreate");
    check_cublas(cublasLtMatrixLayoutCreate(&b_, type, g.trans_second ? g.n : g.k, g.trans_second ? g.k : g.n,
                                            g.ld_second),
                 "cublasLtMatrixLayoutCreate");
    check_cublas(cublasLtMatrixLayoutCreate(&c_layout_, type, g.m, g.n, g.ldc), "cublasLtMatrixLayoutCreate");
    cublasLtMatmulPreference_t pref = nullptr;
    check_cublas(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    const size_t ws = workspace_.bytes();
    check_cublas(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
                 "cublasLtMatmulPreferenceSetAttribute");
    int found = 0;
    const cublasStatus_t s =
        cublasLtMatmulAlgoGetHeuristic(handles().lt, desc_, a_, b_, c_layout_, c_layout_, pref, 1, &heuristic_, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    check_cublas(s, "cublasLtMatmulAlgoGetHeuristic");
    user_check(found > 0) << "cuBLASLt has no algorithm for this GEMM with epilogue " << epilogue_name(g);
    int id = -1;
    cublasLtMatmulAlgoConfigGetAttribute(&heuristic_.algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, nullptr);
    impl_ = "cublasLtMatmul " + types_text(g) + " epilogue " + epilogue_name(g) + ", heuristic algo " +
            std::to_string(id) + ", workspace " + std::to_string(heuristic_.workspaceSize) + " B";
  }
  ~CublasLtGemm() override {
    if (c_layout_) cublasLtMatrixLayoutDestroy(c_layout_);
    if (b_) cublasLtMatrixLayoutDestroy(b_);
    if (a_) cublasLtMatrixLayoutDestroy(a_);
    if (desc_) cublasLtMatmulDescDestroy(desc_);
  }
  void enqueue() override {
    const float alpha = 1.0f, beta = 0.0f;
    check_cublas(cublasLtMatmul(handles().lt, desc_, &alpha, first_, a_, second_, b_, &beta, c_, c_layout_, c_,
                                c_layout_, &heuristic_.algo, workspace_.get(), workspace_.bytes(), nullptr),
                 "cublasLtMatmul");
  }
  std::string impl() const override { return impl_; }

 private:
  BlasGemm g_;
  void *first_, *second_, *c_;
  CudaMemory workspace_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_layout_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
  std::string impl_;
};

class CublasPlugin : public GpuContenderPlugin {
 public:
  std::string unavailable_reason() const override { return handles().error; }
  std::string version() const override {
    int major = 0, minor = 0, patch = 0;
    cublasGetProperty(MAJOR_VERSION, &major);
    cublasGetProperty(MINOR_VERSION, &minor);
    cublasGetProperty(PATCH_LEVEL, &patch);
    return "cuBLAS " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch) +
           " (cublasGemmEx; batch_matmul: the faster of cublasGemmStridedBatchedEx and cublasGemmBatchedEx; "
           "cublasLt fused epilogues; f32, f16 and bf16 with CUBLAS_COMPUTE_32F)";
  }
  bool supports(const ContenderOp& op) const override { return cublas_supports(op); }
  std::unique_ptr<GpuContender> make(const ContenderOp& op, const std::vector<DeviceTensor>& inputs,
                                     const DeviceTensor& out) const override {
    user_check(handles().error.empty()) << handles().error;
    const size_t element_bytes = gpu_element_bytes(op.dtype, "cuBLAS");
    const BlasGemm g = blas_gemm(op);
    for (const DeviceTensor& t : inputs) check_shared_pointer(t.ptr, "cuBLAS");
    const uint64_t first = inputs.at(size_t(g.first_input)).ptr, second = inputs.at(size_t(g.second_input)).ptr;
    if (g.has_epilogue())
      return std::make_unique<CublasLtGemm>(g, first, second, out.ptr,
                                            g.bias ? inputs.at(size_t(g.bias_input)).ptr : 0);
    if (g.batched) return std::make_unique<CublasBatchedGemm>(g, element_bytes, first, second, out.ptr);
    return std::make_unique<CublasGemm>(g, first, second, out.ptr);
  }
};

}  // namespace
}  // namespace kiln::baselines

extern "C" const kiln::baselines::GpuContenderPlugin* KILN_GPU_CONTENDER_ENTRY() {
  static const kiln::baselines::CublasPlugin plugin;
  return &plugin;
}
