// The baselines `kiln bench` can compare with, as the bench layer sees them:
// their names, whether each can run here, and their contenders. oneDNN and
// OpenBLAS (CPU), cuBLAS and cuDNN (GPU) are plug-ins opened on first use
// (contender.h); Halide is a helper process (halide_client.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bench/contenders/contender.h"
#include "kernels/op_registry.h"

namespace kiln::baselines {

// By the names `kiln bench --baselines` takes: "onednn", "openblas", "halide".
std::vector<std::string> baseline_names();
// The GPU baselines of `kiln bench --target cuda`: "cublas", "cudnn".
std::vector<std::string> gpu_baseline_names();
// Both, in the order of the tables' columns.
std::vector<std::string> all_baseline_names();
bool is_gpu_baseline(const std::string& name);
// "" when the baseline can run here; else why not, naming the Debian package
// to install (or the helper to build). Opens the plug-in (which starts no
// threads: the libraries are loaded lazily or start theirs on first use). A
// GPU plug-in initializes the CUDA runtime: ask only once kiln's driver
// runtime holds GPU 0's primary context (a cuda bench does).
std::string baseline_unavailable_reason(const std::string& name);
bool baseline_available(const std::string& name);
// A short description of the library and its version, for reports.
std::string baseline_version(const std::string& name);
// Whether the library has a contender for this op (OpenBLAS: GEMM ops only;
// a GPU baseline: what its plug-in says, false when it is unavailable).
bool baseline_supports(const std::string& name, const OpInstance& op);

// The plug-ins' view of an op instance.
ContenderOp contender_op(const OpInstance& op);

// An in-process contender ("onednn" or "openblas"); UserError when the
// baseline is unavailable or cannot run this instance.
std::unique_ptr<Contender> make_contender(const std::string& name, const OpInstance& op,
                                          const std::vector<rt::NDArray>& inputs, const rt::NDArray& out);

// A GPU contender ("cublas" or "cudnn") on kiln's device buffers; UserError
// when the baseline is unavailable or cannot run this instance.
std::unique_ptr<GpuContender> make_gpu_contender(const std::string& name, const OpInstance& op,
                                                 const std::vector<DeviceTensor>& inputs, const DeviceTensor& out);

}  // namespace kiln::baselines
