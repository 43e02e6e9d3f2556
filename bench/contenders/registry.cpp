// Which baseline libraries this build has, and which ops each covers.
#include "baselines/contender.h"
#include "baselines/halide_client.h"
#include "compute/error.h"

#ifdef KILN_HAVE_ONEDNN
#include "baselines/onednn_kernels.h"
#endif

namespace kiln::baselines {

#ifdef KILN_HAVE_OPENBLAS
std::string openblas_version_string();  // openblas_ops.cpp (loads the library)
bool openblas_installed();
#endif

std::vector<std::string> baseline_names() { return {"onednn", "openblas", "halide"}; }

bool baseline_available(const std::string& name) {
#ifdef KILN_HAVE_ONEDNN
  if (name == "onednn") return true;
#endif
#ifdef KILN_HAVE_OPENBLAS
  if (name == "openblas") return openblas_installed();
#endif
  if (name == "halide") return !halide_helper_path().empty();
  return false;
}

std::string baseline_version(const std::string& name) {
#ifdef KILN_HAVE_ONEDNN
  if (name == "onednn") return onednn_version();
#endif
#ifdef KILN_HAVE_OPENBLAS
  if (name == "openblas") return openblas_version_string();
#endif
  if (name == "halide") return "Halide (helper " + halide_helper_path() + ")";
  return name + " (not available)";
}

bool baseline_supports(const std::string& name, const OpInstance& op) {
  static const std::vector<std::string> all = {
      "matmul",           "batch_matmul", "dense",      "conv2d",  "conv2d_nhwc", "conv2d_nchwc",
      "depthwise_conv2d", "max_pool2d",   "avg_pool2d", "softmax", "layer_norm"};
  static const std::vector<std::string> gemm = {"matmul", "batch_matmul", "dense"};
  const auto& ops = name == "openblas" ? gemm : all;
  if (op.dtype != DType::f32()) return false;
  for (auto& o : ops)
    if (o == op.op) return true;
  return false;
}

int64_t param_or(const OpInstance& op, const std::string& name, int64_t fallback) {
  auto it = op.ints.find(name);
  return it == op.ints.end() ? fallback : it->second;
}

#ifndef KILN_HAVE_ONEDNN
std::unique_ptr<Contender> make_onednn_contender(const OpInstance&, const std::vector<rt::NDArray>&,
                                                 const rt::NDArray&) {
  user_error() << "this kiln was built without oneDNN (install libdnnl-dev and rebuild)";
}
#endif

#ifndef KILN_HAVE_OPENBLAS
std::unique_ptr<Contender> make_openblas_contender(const OpInstance&, const std::vector<rt::NDArray>&,
                                                   const rt::NDArray&) {
  user_error() << "this kiln was built without OpenBLAS (install libopenblas-dev and rebuild)";
}
#endif

}  // namespace kiln::baselines
