// OpenBLAS contenders for the GEMM ops: matmul (transposed operands),
// dense (x . W^T) and batch_matmul (one sgemm per batch; Debian's OpenBLAS
// has no batched sgemm). A bias / relu / gelu epilogue, which BLAS cannot
// fuse, runs as a pass over the output after the sgemm, inside the timed
// call: that is what a user of BLAS would run. A single-row product (M = 1,
// e.g. a dense layer at batch 1) calls cblas_sgemv, as a BLAS user would.
//
// This is the OpenBLAS plug-in (contender.h). OpenBLAS starts its worker
// threads when it is loaded, and kiln's tuner forks builders only while the
// process runs a single thread; so the plug-in does not link OpenBLAS
// either, but loads it (dlopen) when a contender is made, after any tuning:
// opening the plug-in to ask whether it is available starts no thread.
#include <cblas.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>

#include "base/error.h"
#include "bench/contenders/contender.h"

namespace kiln::baselines {

namespace {

struct OpenblasApi {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_sgemv) sgemv = nullptr;
  decltype(&openblas_get_config) config = nullptr;
};

// The library, loaded on first use. UserError when it cannot be loaded.
const OpenblasApi& api() {
  static OpenblasApi a = [] {
    OpenblasApi x;
    void* lib = dlopen(KILN_OPENBLAS_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      x.sgemm = reinterpret_cast<decltype(&cblas_sgemm)>(dlsym(lib, "cblas_sgemm"));
      x.sgemv = reinterpret_cast<decltype(&cblas_sgemv)>(dlsym(lib, "cblas_sgemv"));
      x.config = reinterpret_cast<decltype(&openblas_get_config)>(dlsym(lib, "openblas_get_config"));
    }
    return x;
  }();
  user_check(a.sgemm && a.sgemv && a.config)
      << "cannot load OpenBLAS (" << KILN_OPENBLAS_PATH << "; install Debian's libopenblas0)";
  return a;
}

struct Gemm {
  bool ta = false, tb = false;
  int64_t batch = 1, M = 0, N = 0, K = 0;
  float *a = nullptr, *b = nullptr, *c = nullptr;
  const float* bias = nullptr;
  bool relu = false, gelu = false;
};

class OpenblasGemm : public Contender {
 public:
  explicit OpenblasGemm(const Gemm& g) : g_(g), sgemm_(api().sgemm), sgemv_(api().sgemv) {}
  bool is_gemv() const { return g_.M == 1 && g_.batch == 1; }
  void run() override {
    const int64_t lda = g_.ta ? g_.M : g_.K, ldb = g_.tb ? g_.K : g_.N;
    if (is_gemv())  // c = op(b)^T a: b is [K, N] (or [N, K] when transposed), row-major
      sgemv_(CblasRowMajor, g_.tb ? CblasNoTrans : CblasTrans, g_.tb ? g_.N : g_.K, g_.tb ? g_.K : g_.N, 1.0f, g_.b,
             ldb, g_.a, 1, 0.0f, g_.c, 1);
    for (int64_t i = 0; i < g_.batch && !is_gemv(); ++i)
      sgemm_(CblasRowMajor, g_.ta ? CblasTrans : CblasNoTrans, g_.tb ? CblasTrans : CblasNoTrans, g_.M, g_.N, g_.K,
             1.0f, g_.a + i * g_.M * g_.K, lda, g_.b + i * g_.K * g_.N, ldb, 0.0f, g_.c + i * g_.M * g_.N, g_.N);
    if (!g_.bias && !g_.relu && !g_.gelu) return;
    for (int64_t r = 0; r < g_.batch * g_.M; ++r) {
      float* row = g_.c + r * g_.N;
      for (int64_t j = 0; j < g_.N; ++j) {
        float v = row[j] + (g_.bias ? g_.bias[j] : 0.0f);
        if (g_.relu) v = v > 0 ? v : 0;
        if (g_.gelu) v = 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
        row[j] = v;
      }
    }
  }
  void finish() override {}
  std::string impl() const override {
    const std::string epilogue = g_.bias || g_.relu || g_.gelu ? " + epilogue" : "";
    if (is_gemv()) return "cblas_sgemv" + epilogue;
    return g_.batch > 1 ? "cblas_sgemm x" + std::to_string(g_.batch) + epilogue : "cblas_sgemm" + epilogue;
  }

 private:
  Gemm g_;
  decltype(&cblas_sgemm) sgemm_;
  decltype(&cblas_sgemv) sgemv_;
};

std::unique_ptr<Contender> make_openblas_contender(const ContenderOp& op, const std::vector<rt::NDArray>& in,
                                                   const rt::NDArray& out) {
  user_check(op.f32) << "the OpenBLAS contender compares f32 ops only";
  Gemm g;
  g.c = out.data_as<float>();
  g.a = in.at(0).data_as<float>();
  g.b = in.at(1).data_as<float>();
  if (op.op == "matmul" || op.op == "dense") {
    const bool dense = op.op == "dense";
    g.M = op.ints.at(dense ? "N" : "M");
    g.N = op.ints.at(dense ? "OUT" : "N");
    g.K = op.ints.at(dense ? "IN" : "K");
    g.ta = !dense && param_or(op, "trans_a", 0);
    g.tb = dense || param_or(op, "trans_b", 0);
    if (param_or(op, "bias", 0)) g.bias = in.at(2).data_as<float>();
    g.relu = param_or(op, "relu", 0);
    g.gelu = param_or(op, "gelu", 0);
  } else if (op.op == "batch_matmul") {
    g.batch = op.ints.at("B");
    g.M = op.ints.at("M");
    g.N = op.ints.at("N");
    g.K = op.ints.at("K");
    g.ta = param_or(op, "trans_a", 0);
    g.tb = param_or(op, "trans_b", 0);
  } else {
    user_error() << "OpenBLAS has no contender for op '" << op.op << "' (GEMM ops only)";
  }
  return std::make_unique<OpenblasGemm>(g);
}

class OpenblasPlugin : public ContenderPlugin {
 public:
  std::string unavailable_reason() const override {
    if (access(KILN_OPENBLAS_PATH, R_OK) == 0) return "";
    return std::string("OpenBLAS is not installed (no ") + KILN_OPENBLAS_PATH + "; install Debian's libopenblas0)";
  }
  std::string version() const override { return api().config(); }  // "OpenBLAS 0.3.21 ..."
  std::unique_ptr<Contender> make(const ContenderOp& op, const std::vector<rt::NDArray>& inputs,
                                  const rt::NDArray& out) const override {
    return make_openblas_contender(op, inputs, out);
  }
};

}  // namespace
}  // namespace kiln::baselines

extern "C" const kiln::baselines::ContenderPlugin* KILN_CONTENDER_ENTRY() {
  static const kiln::baselines::OpenblasPlugin plugin;
  return &plugin;
}
