#include "codegen/cuda_tensor_maps.h"

#include <cstdint>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/hw_instructions.h"
#include "compute/ir_functor.h"

namespace kiln {

rt::cuda::TensorMapSpec cuda_tensor_map_spec(const TensorIntrinCallNode& c, const LoweredFunc& f, int* arg_index,
                                             std::vector<TensorCopyDim>* view_out) {
  const VarNode* src = c.operands[1].buffer.node();
  int arg = -1;
  for (size_t i = 0; i < f.args.size(); ++i)
    if (f.args[i].data.node() == src) arg = static_cast<int>(i);
  user_check(arg >= 0) << "a tensor copy reads '" << c.operands[1].buffer->name
                       << "', which is not an argument of the function; a tensor map describes an argument";
  int64_t elems = 1;
  for (int64_t d : f.args[static_cast<size_t>(arg)].shape) elems *= d;
  const int64_t bytes = c.operands[1].buffer->pointee.bytes();
  std::vector<TensorCopyDim> dims;
  const std::string view = tensor_copy_map_dims(tensor_copy_box_dims(c), elems, &dims);
  user_check(view.empty()) << "a tensor copy from '" << c.operands[1].buffer->name
                           << "' has a box that no tensor map of it moves: " << view;
  rt::cuda::TensorMapSpec s;
  s.rank = static_cast<int>(dims.size());
  s.element_bytes = static_cast<int>(bytes);
  s.swizzle = cuda_tensor_copy_swizzled(c) ? 128 : 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    s.dims[d] = static_cast<uint64_t>(dims[d].extent);
    s.box[d] = static_cast<uint32_t>(dims[d].box);
    if (d > 0) s.strides[d - 1] = static_cast<uint64_t>(dims[d].distance * bytes);
  }
  std::string problem = rt::cuda::tensor_map_problem(s);
  // PTX's coordinates are signed 32-bit.
  for (int d = 0; d < s.rank && problem.empty(); ++d)
    if (s.dims[d] > INT32_MAX) problem = "its coordinates pass what a signed 32-bit integer holds";
  user_check(problem.empty()) << "a tensor copy from '" << c.operands[1].buffer->name << "' needs a "
                              << rt::cuda::describe(s) << ": " << problem;
  *arg_index = arg;
  if (view_out) *view_out = std::move(dims);
  return s;
}

CudaTensorMaps::CudaTensorMaps(const Stmt& kernel, const LoweredFunc& f,
                               const std::unordered_map<const VarNode*, std::string>& arg_names,
                               std::unordered_set<std::string>* taken)
    : func_(f) {
  post_order_visit(kernel, [&](const Ref<Object>& n) {
    if (n->kind() != NodeKind::TensorIntrinCall) return;
    auto* c = static_cast<const TensorIntrinCallNode*>(n.get());
    if (c->intrin.rfind(kCudaTensorCopyPrefix, 0) != 0 || !hw_call_problem(*c).empty()) return;
    int arg = 0;
    std::vector<TensorCopyDim> view;
    const rt::cuda::TensorMapSpec s = cuda_tensor_map_spec(*c, f, &arg, &view);
    for (const CudaTensorMapParam& m : params_)
      if (m.buffer == c->operands[1].buffer.node() && m.spec == s) return;
    const std::string base = arg_names.at(c->operands[1].buffer.node()) + "_map";
    std::string name = base;
    for (int k = 1; taken->count(name); ++k) name = base + std::to_string(k);
    taken->insert(name);
    params_.push_back({c->operands[1].buffer.node(), arg, s, name, std::move(view)});
  });
}

const CudaTensorMapParam& CudaTensorMaps::of(const TensorIntrinCallNode& copy) const {
  int arg = 0;
  const rt::cuda::TensorMapSpec s = cuda_tensor_map_spec(copy, func_, &arg);
  for (const CudaTensorMapParam& m : params_)
    if (m.buffer == copy.operands[1].buffer.node() && m.spec == s) return m;
  internal_assert(false) << "no tensor map for a tensor copy from " << copy.operands[1].buffer->name;
  return params_.front();
}

}  // namespace kiln
