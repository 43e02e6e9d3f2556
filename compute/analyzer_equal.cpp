// Structural equality of expressions (used by the simplifier to collect like
// terms and to keep unchanged trees shared).
#include "compute/analyzer.h"
#include "base/error.h"
#include "compute/tensor.h"

namespace kiln {

namespace {

bool list_equal(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!expr_deep_equal(a[i], b[i])) return false;
  return true;
}

}  // namespace

bool expr_deep_equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a->kind() != b->kind() || a.dtype() != b.dtype()) return false;
  switch (a->kind()) {
    case NodeKind::IntImm:
      return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
    case NodeKind::FloatImm: {
      double x = a.as<FloatImmNode>()->value, y = b.as<FloatImmNode>()->value;
      return x == y || (x != x && y != y);  // NaN equals NaN structurally
    }
    case NodeKind::StringImm:
      return a.as<StringImmNode>()->value == b.as<StringImmNode>()->value;
    case NodeKind::Var:
      return false;  // identity only, and same_as failed
    case NodeKind::Not:
      return expr_deep_equal(a.as<NotNode>()->a, b.as<NotNode>()->a);
    case NodeKind::Select: {
      auto *x = a.as<SelectNode>(), *y = b.as<SelectNode>();
      return expr_deep_equal(x->condition, y->condition) && expr_deep_equal(x->true_value, y->true_value) &&
             expr_deep_equal(x->false_value, y->false_value);
    }
    case NodeKind::Cast:
      return expr_deep_equal(a.as<CastNode>()->value, b.as<CastNode>()->value);
    case NodeKind::Call: {
      auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
      return x->op == y->op && list_equal(x->args, y->args);
    }
    case NodeKind::TensorRead: {
      auto *x = a.as<TensorReadNode>(), *y = b.as<TensorReadNode>();
      return x->tensor->op == y->tensor->op && list_equal(x->indices, y->indices);
    }
    case NodeKind::Load: {
      auto *x = a.as<LoadNode>(), *y = b.as<LoadNode>();
      return x->buffer.same_as(y->buffer) && expr_deep_equal(x->index, y->index) &&
             expr_deep_equal(x->predicate, y->predicate);
    }
    case NodeKind::Ramp: {
      auto *x = a.as<RampNode>(), *y = b.as<RampNode>();
      return x->lanes == y->lanes && expr_deep_equal(x->base, y->base) && expr_deep_equal(x->stride, y->stride);
    }
    case NodeKind::Broadcast: {
      auto *x = a.as<BroadcastNode>(), *y = b.as<BroadcastNode>();
      return x->lanes == y->lanes && expr_deep_equal(x->value, y->value);
    }
    case NodeKind::Let: {
      auto *x = a.as<LetNode>(), *y = b.as<LetNode>();
      return x->var.same_as(y->var) && expr_deep_equal(x->value, y->value) && expr_deep_equal(x->body, y->body);
    }
    case NodeKind::Reduce: {
      auto *x = a.as<ReduceNode>(), *y = b.as<ReduceNode>();
      if (x->combiner != y->combiner || x->axes.size() != y->axes.size()) return false;
      for (size_t i = 0; i < x->axes.size(); ++i)
        if (!x->axes[i].same_as(y->axes[i])) return false;
      return expr_deep_equal(x->source, y->source) && expr_deep_equal(x->condition, y->condition);
    }
    default:
      break;
  }
  internal_assert(is_binary_kind(a->kind())) << node_kind_name(a->kind());
  auto *x = static_cast<const BinaryNode*>(a.get()), *y = static_cast<const BinaryNode*>(b.get());
  return expr_deep_equal(x->a, y->a) && expr_deep_equal(x->b, y->b);
}

}  // namespace kiln
