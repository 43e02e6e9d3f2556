#include "compute/stmt.h"

#include "base/error.h"
#include "compute/tensor.h"

namespace kiln {

const char* for_kind_name(ForKind k) {
  switch (k) {
    case ForKind::kSerial:
      return "for";
    case ForKind::kParallel:
      return "parallel";
    case ForKind::kVectorized:
      return "vectorized";
    case ForKind::kUnrolled:
      return "unrolled";
    case ForKind::kThreadBinding:
      return "thread_binding";
  }
  return "?";
}

const char* mem_scope_name(MemScope s) {
  switch (s) {
    case MemScope::kGlobal:
      return "global";
    case MemScope::kShared:
      return "shared";
    case MemScope::kLocal:
      return "local";
    case MemScope::kWarp:
      return "warp";
  }
  return "?";
}

MemScope parse_mem_scope(const std::string& s) {
  if (s == "global") return MemScope::kGlobal;
  if (s == "shared") return MemScope::kShared;
  if (s == "local") return MemScope::kLocal;
  if (s == "warp") return MemScope::kWarp;
  user_error() << "unknown memory scope '" << s << "' (expected global, shared, local or warp)";
}

Stmt ForNode::make(Var v, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag) {
  internal_assert(body.defined());
  internal_assert(v.dtype() == min.dtype() && v.dtype() == extent.dtype())
      << "loop " << v->name << ": var " << v.dtype().str() << " min " << min.dtype().str() << " extent "
      << extent.dtype().str();
  return Stmt(
      new ForNode(std::move(v), std::move(min), std::move(extent), kind, std::move(thread_tag), std::move(body)));
}

Stmt AllocateNode::make(Var buf, DType t, std::vector<Expr> extents, MemScope scope, Stmt body) {
  internal_assert(buf.dtype().is_handle());
  return Stmt(new AllocateNode(std::move(buf), t, std::move(extents), scope, std::move(body)));
}

Stmt StoreNode::make(Var buf, Expr value, Expr index, Expr pred) {
  internal_assert(buf.dtype().is_handle());
  internal_assert(value.dtype().lanes == index.dtype().lanes)
      << "store lanes " << value.dtype().lanes << " vs index " << index.dtype().lanes;
  return Stmt(new StoreNode(std::move(buf), std::move(value), std::move(index), std::move(pred)));
}

Stmt SeqNode::make(std::vector<Stmt> seq) {
  std::vector<Stmt> flat;
  for (auto& s : seq) {
    if (!s.defined()) continue;
    if (auto* inner = s.as<SeqNode>()) {
      for (auto& x : inner->seq) flat.push_back(x);
    } else {
      flat.push_back(s);
    }
  }
  if (flat.empty()) return Stmt();
  if (flat.size() == 1) return flat[0];
  return Stmt(new SeqNode(std::move(flat)));
}

Stmt IfThenElseNode::make(Expr c, Stmt then_case, Stmt else_case) {
  internal_assert(c.dtype().is_bool() && then_case.defined());
  return Stmt(new IfThenElseNode(std::move(c), std::move(then_case), std::move(else_case)));
}

Stmt LetStmtNode::make(Var v, Expr value, Stmt body) {
  return Stmt(new LetStmtNode(std::move(v), std::move(value), std::move(body)));
}

Stmt EvaluateNode::make(Expr v) { return Stmt(new EvaluateNode(std::move(v))); }
Stmt BarrierNode::make(MemScope scope) { return Stmt(new BarrierNode(scope)); }

Stmt TokenNode::make(Op op, Queue queue, int pipeline, Expr slot, Expr in_flight) {
  internal_assert(slot.defined()) << "a pipeline token needs its slot";
  internal_assert(!in_flight.defined() || (op == Op::kPop && queue == Queue::kFull))
      << "only a pop of a full token says how many fills may stay in flight";
  internal_assert(op != Op::kWait) << "a wait token belongs to a warp-specialized pipeline (make_phased)";
  return Stmt(new TokenNode(op, queue, pipeline, std::move(slot), std::move(in_flight), Expr()));
}

Stmt TokenNode::make_phased(Op op, Queue queue, int pipeline, Expr slot, Expr phase) {
  internal_assert(slot.defined() && phase.defined()) << "a warp-specialized pipeline's token needs its slot and phase";
  internal_assert(op != Op::kWait || queue == Queue::kFree) << "only the execute stage's drain waits (on free tokens)";
  return Stmt(new TokenNode(op, queue, pipeline, std::move(slot), Expr(), std::move(phase)));
}

Stmt PrefetchNode::make(Var buffer, Expr index) {
  internal_assert(index.defined() && index.dtype().is_int() && index.dtype().lanes == 1)
      << "a prefetch needs a scalar integer index";
  return Stmt(new PrefetchNode(std::move(buffer), std::move(index)));
}

Stmt ThreadAllReduceNode::make(Combiner c, Expr value, Var result, std::string thread_tag) {
  internal_assert(value.dtype().lanes == 1) << "a cross-thread reduction combines scalars";
  internal_assert(result.dtype().is_handle()) << "a cross-thread reduction writes into a buffer";
  return Stmt(new ThreadAllReduceNode(c, std::move(value), std::move(result), std::move(thread_tag)));
}

Stmt AttrStmtNode::make(Ref<Object> node, std::string key, Expr value, Stmt body) {
  return Stmt(new AttrStmtNode(std::move(node), std::move(key), std::move(value), std::move(body)));
}

Stmt TensorIntrinCallNode::make(std::string intrin, std::vector<Operand> operands, std::vector<Expr> scalars) {
  return Stmt(new TensorIntrinCallNode(std::move(intrin), std::move(operands), std::move(scalars)));
}

Stmt TensorizeNode::make(TensorIntrin intrin, IntrinPhase phase, std::vector<Region> regions) {
  internal_assert(intrin) << "tensorize without an intrinsic";
  for (auto& r : regions)
    internal_assert(r.tensor.defined() && static_cast<int>(r.base.size()) == Tensor(r.tensor).ndim())
        << "tensorize region of '" << (r.tensor.defined() ? r.tensor->op->name : "?") << "' needs one base index per dimension";
  return Stmt(new TensorizeNode(std::move(intrin), phase, std::move(regions)));
}

Stmt ProvideNode::make(Ref<TensorNode> t, Expr value, std::vector<Expr> indices) {
  return Stmt(new ProvideNode(std::move(t), std::move(value), std::move(indices)));
}

Stmt RealizeNode::make(Ref<TensorNode> t, std::vector<Range> bounds, MemScope scope, std::vector<Align> align,
                       Stmt body) {
  return Stmt(new RealizeNode(std::move(t), std::move(bounds), scope, std::move(align), std::move(body)));
}

}  // namespace kiln
