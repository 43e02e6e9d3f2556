// The tensor map parameters of a CUDA kernel (runtime/tensor_map.h). Each
// tensor copy (cuda.tensor_copy.*, schedule/passes/bulk_copy.h) reads its
// source argument through a map of as many dimensions as the copy's box
// (compute/tensor_copy_box.h; 2-D for a box of rows: the argument as rows of
// the copy's source stride S); the kernel takes one
// `const __grid_constant__ kiln_tensor_map` per distinct (argument, map),
// after its buffers, and every launcher encodes it for the argument.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compute/function.h"
#include "compute/stmt.h"
#include "compute/tensor_copy_box.h"
#include "runtime/tensor_map.h"

namespace kiln {

struct CudaTensorMapParam {
  const VarNode* buffer = nullptr;
  int arg_index = -1;  // into the function's arguments
  rt::cuda::TensorMapSpec spec;
  std::string name;                 // the parameter's C name
  std::vector<TensorCopyDim> view;  // spec's dimensions, in its order: where a copy's coordinates come from
};

// The map a tensor copy reads through (the last row of the source may
// overhang the argument; the copies never reach it), the argument's index
// and, when `view` is given, the map's dimensions as the copy's box views
// the source. User errors: a copy from something other than an argument, or
// one whose map the hardware cannot have.
rt::cuda::TensorMapSpec cuda_tensor_map_spec(const TensorIntrinCallNode& copy, const LoweredFunc& f, int* arg_index,
                                             std::vector<TensorCopyDim>* view = nullptr);

class CudaTensorMaps {
 public:
  // The maps of the tensor copies in `kernel` (malformed calls are left to
  // the printer's instruction check), each named after its argument's C
  // name (`arg_names`) + "_map", unique among `taken`, which gains them.
  CudaTensorMaps(const Stmt& kernel, const LoweredFunc& f,
                 const std::unordered_map<const VarNode*, std::string>& arg_names,
                 std::unordered_set<std::string>* taken);
  const std::vector<CudaTensorMapParam>& params() const { return params_; }
  // The parameter `copy` reads through.
  const CudaTensorMapParam& of(const TensorIntrinCallNode& copy) const;

 private:
  const LoweredFunc& func_;
  std::vector<CudaTensorMapParam> params_;
};

}  // namespace kiln
