#include "schedule/passes/pass_util.h"

#include "base/error.h"
#include "compute/hw_instructions.h"
#include "compute/ir_functor.h"
#include "compute/tensor.h"  // stmt.h needs TensorNode complete

namespace kiln {
namespace passes {

void split_conjuncts(const Expr& e, std::vector<Expr>* out) {
  if (auto* a = e.as<AndNode>()) {
    split_conjuncts(a->a, out);
    split_conjuncts(a->b, out);
  } else {
    out->push_back(e);
  }
}

bool is_no_op(const Stmt& s) {
  if (!s.defined()) return true;
  switch (s->kind()) {
    case NodeKind::Evaluate: {
      const Expr& v = s.as<EvaluateNode>()->value;
      return !v.defined() || v.as<IntImmNode>() || v.as<FloatImmNode>() || v.as<StringImmNode>();
    }
    case NodeKind::Seq:
      for (auto& x : s.as<SeqNode>()->seq)
        if (!is_no_op(x)) return false;
      return true;
    case NodeKind::For:
      return is_no_op(s.as<ForNode>()->body);
    case NodeKind::IfThenElse: {
      auto* op = s.as<IfThenElseNode>();
      return is_no_op(op->then_case) && is_no_op(op->else_case);
    }
    case NodeKind::LetStmt:
      return is_no_op(s.as<LetStmtNode>()->body);
    case NodeKind::AttrStmt:
      return is_no_op(s.as<AttrStmtNode>()->body);
    case NodeKind::Allocate:
      return is_no_op(s.as<AllocateNode>()->body);
    case NodeKind::Realize:
      return is_no_op(s.as<RealizeNode>()->body);
    default:
      return false;
  }
}

Stmt make_no_op() { return EvaluateNode::make(make_zero(DType::i32())); }

BufferUse buffer_use(const Stmt& s, const std::unordered_set<const VarNode*>& buffers) {
  BufferUse u;
  post_order_visit(s, [&](const Ref<Object>& n) {
    if (n->kind() == NodeKind::Load) {
      u.reads |= buffers.count(static_cast<const LoadNode*>(n.get())->buffer.node()) > 0;
    } else if (n->kind() == NodeKind::Store) {
      u.writes |= buffers.count(static_cast<const StoreNode*>(n.get())->buffer.node()) > 0;
    } else if (n->kind() == NodeKind::TensorIntrinCall) {
      auto* c = static_cast<const TensorIntrinCallNode*>(n.get());
      const HwInstruction& h = find_hw_instruction(c->intrin);
      for (size_t k = 0; k < c->operands.size() && k < h.operands.size(); ++k)
        if (buffers.count(c->operands[k].buffer.node())) (h.operands[k].written ? u.writes : u.reads) = true;
    }
  });
  return u;
}

const TokenNode* producer_full_push(const SeqNode* s) {
  auto* push = s->seq.empty() ? nullptr : s->seq.back().as<TokenNode>();
  return push && push->op == TokenNode::Op::kPush && push->queue == TokenNode::Queue::kFull ? push : nullptr;
}

}  // namespace passes
}  // namespace kiln
