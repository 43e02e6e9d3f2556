#include "compute/tensor_intrin.h"

#include <algorithm>

#include "base/error.h"
#include "compute/expr_ops.h"

namespace kiln {

const char* intrin_phase_name(IntrinPhase p) {
  switch (p) {
    case IntrinPhase::kBody:
      return "body";
    case IntrinPhase::kReset:
      return "reset";
    case IntrinPhase::kUpdate:
      return "update";
  }
  return "?";
}

Expr IntrinBuffer::index(const std::vector<Expr>& idx) const {
  internal_assert(idx.size() == strides.size()) << "intrinsic operand of " << strides.size() << " dimensions indexed with "
                                                << idx.size();
  Expr flat = offset;
  for (size_t d = 0; d < idx.size(); ++d) flat = flat + cast(offset.dtype(), idx[d]) * strides[d];
  return flat;
}

TensorIntrinCallNode::Operand IntrinBuffer::at(const std::vector<Expr>& idx, int64_t extent, int stride_dim) const {
  Expr stride = stride_dim < 0 ? make_const(offset.dtype(), int64_t{1}) : strides.at(static_cast<size_t>(stride_dim));
  return {data, index(idx), make_const(DType::i32(), extent), stride};
}

Expr IntrinBuffer::load(const std::vector<Expr>& idx) const { return LoadNode::make(dtype, data, index(idx)); }

Stmt IntrinBuffer::store(const std::vector<Expr>& idx, Expr value) const {
  return StoreNode::make(data, std::move(value), index(idx));
}

bool TensorIntrinDecl::is_reduction() const {
  auto* c = output->op.as<ComputeOpNode>();
  return c && !c->reduce_axis.empty();
}

std::vector<int64_t> TensorIntrinDecl::shape_of(size_t operand) const {
  const Tensor& t = operand < inputs.size() ? inputs[operand] : output;
  std::vector<int64_t> shape;
  for (const Expr& e : t.shape()) shape.push_back(*as_const_int(e));
  return shape;
}

Stmt TensorIntrinDecl::lower(IntrinPhase phase, const std::vector<IntrinBuffer>& operands) const {
  switch (phase) {
    case IntrinPhase::kReset:
      internal_assert(lowering.reset && operands.size() == 1) << name << ": reset of " << operands.size() << " operands";
      return lowering.reset(operands[0]);
    case IntrinPhase::kUpdate:
      internal_assert(static_cast<bool>(lowering.update)) << name << " has no update lowering";
      return lowering.update(operands);
    case IntrinPhase::kBody:
      if (lowering.body) return lowering.body(operands);
      internal_assert(lowering.reset && lowering.update) << name << " has no body lowering";
      return SeqNode::make({lowering.reset(operands.back()), lowering.update(operands)});
  }
  return Stmt();
}

TensorIntrin decl_tensor_intrin(std::string name, const Tensor& output, std::vector<Tensor> inputs,
                                TensorIntrinLowering lowering, std::vector<IntrinRequirement> requirements) {
  user_check(!name.empty()) << "a tensor intrinsic needs a name";
  user_check(output.defined()) << "tensor intrinsic '" << name << "': no output tensor";
  auto* c = output->op.as<ComputeOpNode>();
  user_check(c) << "tensor intrinsic '" << name << "': its output '" << output.name()
                << "' must be a compute op (what the instruction computes)";
  // Placeholders and compute ops have constant shapes; reduction axes may not.
  for (const IterVar& r : c->reduce_axis)
    user_check(as_const_int(r->dom.extent) && as_const_int(r->dom.min) && *as_const_int(r->dom.min) == 0)
        << "tensor intrinsic '" << name << "': reduction axis '" << r->var->name << "' needs a constant range from 0";
  const std::vector<Tensor> read = input_tensors(output->op);
  for (const Tensor& t : inputs) {
    user_check(t.defined() && t->op.as<PlaceholderOpNode>())
        << "tensor intrinsic '" << name << "': its inputs must be placeholders";
    user_check(std::any_of(read.begin(), read.end(), [&](const Tensor& r) { return r.same_tensor(t); }))
        << "tensor intrinsic '" << name << "': input '" << t.name() << "' is not read by '" << output.name() << "'";
  }
  for (const Tensor& r : read)
    user_check(std::any_of(inputs.begin(), inputs.end(), [&](const Tensor& t) { return r.same_tensor(t); }))
        << "tensor intrinsic '" << name << "': '" << output.name() << "' reads '" << r.name()
        << "', which is not among its inputs";
  if (requirements.empty()) requirements.resize(inputs.size() + 1);
  user_check(requirements.size() == inputs.size() + 1)
      << "tensor intrinsic '" << name << "': " << requirements.size() << " operand requirements for "
      << inputs.size() + 1 << " operands (the inputs, then the output)";
  for (const IntrinRequirement& r : requirements)
    user_check(r.offset_factor >= 1) << "tensor intrinsic '" << name << "': an offset factor must be at least 1";
  const bool reduction = !c->reduce_axis.empty();
  if (reduction) {
    user_check(lowering.body || (lowering.reset && lowering.update))
        << "tensor intrinsic '" << name << "' reduces: it needs a body lowering, or reset and update lowerings";
    user_check(!lowering.update == !lowering.reset)
        << "tensor intrinsic '" << name << "': reset and update lowerings go together";
  } else {
    user_check(static_cast<bool>(lowering.body)) << "tensor intrinsic '" << name << "' needs a body lowering";
  }
  auto d = std::make_shared<TensorIntrinDecl>();
  d->name = std::move(name);
  d->output = output;
  d->inputs = std::move(inputs);
  d->requirements = std::move(requirements);
  d->lowering = std::move(lowering);
  return d;
}

}  // namespace kiln
