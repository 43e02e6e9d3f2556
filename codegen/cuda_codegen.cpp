// CUDA C for a lowered function (see cuda_codegen.h): the preludes its kernels need, then each kernel.
#include "codegen/cuda_codegen.h"

#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "codegen/cuda_allreduce.h"
#include "codegen/cuda_async_prelude.h"
#include "codegen/cuda_c_spelling.h"
#include "codegen/cuda_kernel_printer.h"
#include "codegen/cuda_mbarrier_prelude.h"
#include "codegen/cuda_mma_prelude.h"
#include "codegen/cuda_prelude.h"
#include "codegen/cuda_wgmma_prelude.h"
#include "compute/hw_instructions.h"
#include "compute/ir_functor.h"
#include "schedule/gpu_kernels.h"

namespace kiln {

namespace {

using cuda_c::is_narrow_float;
using cuda_c::sanitize;

// Helpers the kernels call for the semantics compute/expr.h states: floor
// division of integers, and min/max of floats that propagate NaN and keep
// the first operand on ties (CUDA's fminf/fmaxf drop a NaN operand).
const char* const kArithmeticHelpers = R"(// kiln: arithmetic as compute/expr.h defines it
template <typename T> __device__ __forceinline__ T kiln_floordiv(T a, T b) {
  T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T> __device__ __forceinline__ T kiln_floormod(T a, T b) {
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <typename T> __device__ __forceinline__ T kiln_imin(T a, T b) { return b < a ? b : a; }
template <typename T> __device__ __forceinline__ T kiln_imax(T a, T b) { return a < b ? b : a; }
template <typename T> __device__ __forceinline__ T kiln_fmin(T a, T b) { return a != a ? a : (b != b ? b : (b < a ? b : a)); }
template <typename T> __device__ __forceinline__ T kiln_fmax(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? b : a)); }
__device__ __forceinline__ float kiln_bits_f32(unsigned int u) { union { unsigned int u; float f; } v; v.u = u; return v.f; }
__device__ __forceinline__ double kiln_bits_f64(unsigned long long u) { union { unsigned long long u; double f; } v; v.u = u; return v.f; }

)";

}  // namespace

CudaSource emit_cuda(const LoweredFunc& f, const GpuLimits& limits) {
  CudaSource src;
  src.function = f.name;
  std::vector<GpuKernel> kernels = gpu_kernels(f, limits);
  std::ostringstream os;
  os << "// kiln: " << f.name << " for " << limits.arch << ", " << kernels.size() << " kernel"
     << (kernels.size() == 1 ? "" : "s") << "\n";
  os << cuda_prelude() << "\n" << kArithmeticHelpers;
  bool reduces_across_threads = false, narrow = false, mma = false, async = false, mbarriers = false;
  std::set<std::pair<int64_t, std::string>> wgmma;  // (N, input type) of the wgmma calls
  bool wgmma_waits = false;                         // commit-and-wait calls
  for (auto& a : f.args) narrow |= is_narrow_float(a.dtype);
  for (auto& k : kernels)
    post_order_visit(k.body, [&](const Ref<Object>& n) {
      reduces_across_threads |= n->kind() == NodeKind::ThreadAllReduce;
      mma |= n->kind() == NodeKind::TensorIntrinCall;
      if (n->kind() == NodeKind::TensorIntrinCall) {
        const std::string& in = static_cast<const TensorIntrinCallNode*>(n.get())->intrin;
        if (in.rfind(kCudaWgmmaPrefix, 0) == 0) wgmma.insert(cuda_wgmma_shape(in));
        wgmma_waits |= in == kCudaWgmmaCommitWait;
      }
      async |= n->kind() == NodeKind::Token;
      if (n->kind() == NodeKind::Token) mbarriers |= static_cast<const TokenNode*>(n.get())->phase.defined();
      if (n->kind() == NodeKind::Allocate) narrow |= is_narrow_float(static_cast<const AllocateNode*>(n.get())->dtype);
      if (n->kind() == NodeKind::Cast) narrow |= is_narrow_float(static_cast<const CastNode*>(n.get())->dtype);
    });
  if (narrow || mma) os << cuda_narrow_float_prelude();
  if (mma) os << cuda_mma_prelude();
  if (!wgmma.empty() || wgmma_waits) os << cuda_wgmma_prelude(wgmma);
  if (async && limits.sm_version >= 80) os << cuda_async_prelude();
  if (mbarriers && limits.sm_version >= 80) os << cuda_mbarrier_prelude();
  if (reduces_across_threads) os << cuda_allreduce_helpers();
  for (size_t i = 0; i < kernels.size(); ++i) {
    CudaKernelLaunch launch;
    const std::string name = sanitize(f.name) + "_kernel" + std::to_string(i);
    os << "// grid " << kernels[i].grid[0] << " x " << kernels[i].grid[1] << " x " << kernels[i].grid[2] << ", block "
       << kernels[i].block[0] << " x " << kernels[i].block[1] << " x " << kernels[i].block[2] << ", "
       << kernels[i].shared_bytes << " bytes of shared memory" << (kernels[i].dynamic_shared_bytes ? " (dynamic)" : "")
       << "\n";
    os << CudaKernelPrinter(kernels[i], f, limits).print(name, &launch) << "\n";
    src.launches.push_back(launch);
  }
  src.code = os.str();
  return src;
}

}  // namespace kiln
