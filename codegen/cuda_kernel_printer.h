// Prints one kernel nest of a lowered function as CUDA C: the printer
// behind emit_cuda (codegen/cuda_codegen.h), which says what the code looks
// like. Its definitions are split by subject: expressions and statements
// (cuda_kernel_printer.cpp), pipelines' tokens and warp specialization
// (cuda_printer_pipelines.cpp), tensor instructions and their fragments
// (cuda_printer_intrinsics.cpp). Internal to codegen/.
#pragma once

#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "codegen/cuda_module.h"
#include "codegen/cuda_tensor_maps.h"
#include "compute/function.h"
#include "compute/stmt.h"
#include "schedule/gpu_kernels.h"
#include "schedule/gpu_limits.h"

namespace kiln {

class CudaKernelPrinter {
 public:
  CudaKernelPrinter(const GpuKernel& k, const LoweredFunc& f, const GpuLimits& limits);

  // The kernel's CUDA C under kernel_name; *launch gets its name, grid,
  // block, shared memory and parameters.
  std::string print(const std::string& kernel_name, CudaKernelLaunch* launch);

 private:
  // A warp-specialized pipeline (attr::kWarpSpecialized): its mbarriers,
  // their arrival counts, and who arrives on them.
  struct WarpSpecialized {
    int64_t slots = 0, consumer_warps = 0, producer_warps = 0;
    bool async = false, plain = false;  // the producer's fills: cp.async copies, plain stores to shared
    int64_t bulk_bytes = 0;             // and the bytes its bulk copies move per fill (sm_90)
    // Every producer thread arrives on full once per fill: by cp.async where
    // its fills are cp.async copies, else by a plain arrival (which also
    // releases plain stores). With bulk copies alone, only one thread's
    // expect-tx arrival would count, and a thread that issues no copy could
    // fall two phases behind the consumers, where the parity it waits for
    // names a later phase, and wait forever.
    bool plain_arrival() const { return plain || !async; }
    std::string full, empty;
  };

  // cuda_kernel_printer.cpp
  std::ostream& line();
  std::string name_of(const VarNode* v);
  std::string expr(const Expr& e, int lane = -1);
  std::string binary(const Expr& e, const char* op, int lane);
  std::string call2(const Expr& e, const std::string& fn, int lane);
  std::string call(const CallNode* op, int lane);
  static std::string vec_type(DType t);
  bool stored_narrow(const Var& buffer, DType t) const;
  bool aligned_ramp(const Expr& index, int64_t elem_bytes, Expr* base);
  static std::string packed_type(int lanes);
  static std::string packed_conv(DType t, bool to_f32);
  std::string vec_expr(const Expr& e);
  void stmt(const Stmt& s);
  void nested(const Stmt& s);
  void for_loop(const ForNode* op);
  std::string raw_load(const LoadNode* op, int lane);
  const Var& scratch_var(DType t);
  void allreduce(const ThreadAllReduceNode* op);
  void check_not_fragment(const Var& buffer, const char* how) const;
  void store(const StoreNode* op);

  // cuda_printer_pipelines.cpp
  void token(const TokenNode* op);
  void find_warp_specialized(const Ref<Object>& n);
  void warp_specialized(const AttrStmtNode* op);
  void mbarrier_token(const TokenNode* op);

  // cuda_printer_intrinsics.cpp
  void warp_fragments(const AllocateNode* op);
  void intrin_call(const TensorIntrinCallNode* op);

  const GpuKernel& kernel_;
  const LoweredFunc& func_;
  std::map<int, WarpSpecialized> pipelines_;     // by pipeline id
  std::unique_ptr<CudaTensorMaps> tensor_maps_;  // the kernel's tensor map parameters, after its buffers
  const WarpSpecialized* region_ = nullptr;      // the one being printed
  std::unordered_map<const AttrStmtNode*, int> regions_;
  std::unordered_set<const VarNode*> thread_vars_;  // loops bound to threadIdx
  std::unordered_map<const VarNode*, std::string> names_;
  std::unordered_set<std::string> taken_;
  std::unordered_set<const VarNode*> written_;
  std::unordered_set<const VarNode*> declared_;  // local arrays declared so far
  std::unordered_set<const VarNode*> local_;     // every local array
  std::unordered_set<const VarNode*> warp_;      // every warp-scope (fragment) array
  std::unordered_set<const VarNode*> shared_vars_;
  const GpuLimits& limits_;
  std::vector<std::pair<DType, Var>> scratch_;
  std::ostringstream body_;
  int indent_ = 0;
};

}  // namespace kiln
