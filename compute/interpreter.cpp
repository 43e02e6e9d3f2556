// Reference interpreter entry points (semantics in compute/interpreter.h):
// binding input values, whole-tensor interpretation, and sampled point
// evaluation. Both drive the same compiled evaluator (interpreter_eval.h).
#include "compute/interpreter.h"

#include <algorithm>
#include <memory>

#include "base/error.h"
#include "compute/interpreter_eval.h"

namespace kiln {

namespace {

using interp::const_shape;
using interp::index_str;
using interp::OpEvaluator;
using interp::SourceTable;
using interp::TensorSource;

// Validates the placeholder values and enters them into a source table.
SourceTable bind_inputs(const std::vector<std::pair<Tensor, HostTensor>>& inputs, const char* who) {
  SourceTable table;
  for (auto& [tensor, value] : inputs) {
    user_check(tensor.defined()) << who << ": an input tensor is undefined";
    const Operation& op = tensor->op;
    user_check(op.as<PlaceholderOpNode>())
        << who << ": '" << op->name << "' is computed by its definition; only placeholders take input values";
    user_check(!table.count(op.get())) << who << ": input '" << op->name << "' is given twice";
    std::vector<int64_t> shape = const_shape(*op);
    user_check(value.dtype == op->output_dtype()) << who << ": input '" << op->name << "' has dtype "
                                                  << value.dtype.str() << ", expected " << op->output_dtype().str();
    user_check(value.shape == shape) << who << ": input '" << op->name << "' has shape " << index_str(value.shape)
                                     << ", expected " << index_str(shape);
    user_check(static_cast<int64_t>(value.bytes.size()) == value.num_elements() * value.dtype.bytes())
        << who << ": input '" << op->name << "' holds " << value.bytes.size() << " bytes, expected "
        << value.num_elements() * value.dtype.bytes();
    TensorSource src;
    src.data = &value;
    src.shape = std::move(shape);
    src.name = op->name;
    table[op.get()] = std::move(src);
  }
  return table;
}

}  // namespace

std::vector<HostTensor> interpret(const std::vector<Tensor>& outputs,
                                  const std::vector<std::pair<Tensor, HostTensor>>& inputs) {
  for (auto& t : outputs) user_check(t.defined()) << "interpret: an output tensor is undefined";
  SourceTable table = bind_inputs(inputs, "interpret");
  std::unordered_map<const OperationNode*, HostTensor> computed;
  for (const Operation& op : post_dfs_order(outputs)) {
    if (op.as<PlaceholderOpNode>()) {
      user_check(table.count(op.get())) << "interpret: input tensor '" << op->name << "' was not given";
      continue;
    }
    auto* cop = op.as<ComputeOpNode>();
    internal_assert(cop) << node_kind_name(op->kind());
    HostTensor out(op->output_dtype(), const_shape(*op));
    OpEvaluator(cop, table).run(&out);
    HostTensor& slot = computed[op.get()] = std::move(out);
    TensorSource src;
    src.data = &slot;
    src.shape = slot.shape;
    src.name = op->name;
    table[op.get()] = std::move(src);
  }

  std::vector<HostTensor> results;
  for (auto& t : outputs) results.push_back(*table.at(t->op.get()).data);
  return results;
}

HostTensor interpret_at(const Tensor& output, const std::vector<std::pair<Tensor, HostTensor>>& inputs,
                        const std::vector<std::vector<int64_t>>& points) {
  user_check(output.defined()) << "interpret_at: the output tensor is undefined";
  const Operation& out_op = output->op;
  std::vector<int64_t> shape = const_shape(*out_op);
  std::vector<int64_t> flats;
  flats.reserve(points.size());
  for (size_t p = 0; p < points.size(); ++p) {
    const std::vector<int64_t>& pt = points[p];
    user_check(pt.size() == shape.size())
        << "interpret_at: point " << p << " " << index_str(pt) << " has " << pt.size() << " coordinates, but '"
        << out_op->name << "' has " << shape.size() << " dimensions";
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      user_check(pt[d] >= 0 && pt[d] < shape[d])
          << "interpret_at: point " << p << " " << index_str(pt) << " is outside the shape " << index_str(shape)
          << " of '" << out_op->name << "'";
      flat = flat * shape[d] + pt[d];
    }
    flats.push_back(flat);
  }

  SourceTable table = bind_inputs(inputs, "interpret_at");
  std::vector<std::unique_ptr<OpEvaluator>> evaluators;  // stable addresses for the table
  for (const Operation& op : post_dfs_order({output})) {
    if (op.as<PlaceholderOpNode>()) {
      user_check(table.count(op.get())) << "interpret_at: input tensor '" << op->name << "' was not given";
      continue;
    }
    auto* cop = op.as<ComputeOpNode>();
    internal_assert(cop) << node_kind_name(op->kind());
    evaluators.push_back(std::make_unique<OpEvaluator>(cop, table));
    TensorSource src;
    src.producer = evaluators.back().get();
    src.shape = const_shape(*op);
    src.name = op->name;
    table[op.get()] = std::move(src);
  }

  HostTensor result(out_op->output_dtype(), {static_cast<int64_t>(points.size())});
  const TensorSource& src = table.at(out_op.get());
  int64_t elem = result.dtype.bytes();
  for (size_t p = 0; p < flats.size(); ++p) {
    int64_t i = static_cast<int64_t>(p);
    if (src.data) {  // a placeholder output: its value as given
      std::copy_n(src.data->bytes.data() + flats[p] * elem, elem, result.bytes.data() + i * elem);
      continue;
    }
    interp::Val v = src.producer->value_at(flats[p]);
    if (src.producer->floating())
      result.set_float(i, v.f);
    else
      result.set_int(i, v.i);
  }
  return result;
}

}  // namespace kiln
