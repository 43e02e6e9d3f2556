#include "schedule/passes/vectorize.h"

#include <unordered_map>

#include "compute/analyzer.h"
#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/ir_functor.h"
#include "schedule/passes/pass_util.h"

namespace kiln {
namespace passes {

namespace {

Expr broadcast_to(const Expr& e, int lanes) {
  if (!e.defined() || e.dtype().lanes == lanes) return e;
  internal_assert(e.dtype().lanes == 1) << "lane mismatch while vectorizing";
  return BroadcastNode::make(e, lanes);
}

// a && b where either may be undefined (= true).
Expr and_pred(const Expr& a, const Expr& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return a && b;
}

bool has_vectors(const Stmt& s) {
  bool found = false;
  post_order_visit(s, [&](const Ref<Object>& n) {
    if (found) return;
    switch (n->kind()) {
#define KILN_NODE(Name) case NodeKind::Name:
#include "compute/ir_expr_kinds.def"
#undef KILN_NODE
      found = static_cast<const ExprNode*>(n.get())->dtype.lanes > 1;
      if (auto* l = n.as<LoadNode>()) found |= l->predicate.defined();
      break;
      case NodeKind::Store:
        found = static_cast<const StoreNode*>(n.get())->predicate.defined();
        break;
      default:
        break;
    }
  });
  return found;
}

// Widens the body of one vectorized loop. `failed()` tells whether the body
// held something that cannot be widened; the result is then meaningless.
class Vectorizer : public IRMutator {
 public:
  using IRMutator::mutate;
  Vectorizer(const VarNode* var, Expr min, int lanes)
      : var_(var), lanes_(lanes), ramp_(RampNode::make(min, make_const(min.dtype(), int64_t{1}), lanes)) {}

  bool failed() const { return failed_; }

  // Every Load from a buffer written in the body must read exactly where
  // some Store writes (same lane -> same element); otherwise lanes would see
  // each other's writes in a different order than the serial loop.
  bool lanes_independent(const Stmt& body) const {
    bool ok = true;
    post_order_visit(body, [&](const Ref<Object>& n) {
      auto* l = n->kind() == NodeKind::Load ? static_cast<const LoadNode*>(n.get()) : nullptr;
      if (!ok || !l) return;
      auto it = stores_.find(l->buffer.node());
      if (it == stores_.end()) return;
      bool match = false;
      for (auto& idx : it->second) match |= expr_deep_equal(idx, l->index);
      ok = match;
    });
    return ok;
  }

 protected:
  Expr mutate_Var(const VarNode* op, const Expr& self) override {
    if (op == var_) return ramp_;
    auto it = remap_.find(op);
    return it == remap_.end() ? self : it->second;
  }

  Expr mutate_binary(const BinaryNode* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    NodeKind k = op->kind();
    int la = a.dtype().lanes, lb = b.dtype().lanes;
    if (la == 1 && lb == 1) return make_binary(k, a, b);
    bool int_division = a.dtype().is_integer() && (k == NodeKind::Div || k == NodeKind::Mod ||
                                                   k == NodeKind::FloorDiv || k == NodeKind::FloorMod);
    if (int_division && (pred_if_.defined() || pred_sel_.defined()) && lb > 1) {
      // A masked-off lane may hold a zero divisor the scalar loop never used.
      auto* bc = b.as<BroadcastNode>();
      const int64_t* c = bc ? as_const_int(bc->value) : nullptr;
      if (!c || *c == 0) failed_ = true;
    }
    if (a.dtype().is_integer()) {
      Expr r = ramp_arith(k, a, b);
      if (r.defined()) return r;
    }
    return make_binary(k, broadcast_to(a, lanes_), broadcast_to(b, lanes_));
  }

  // Loads in a branch get the branch's condition as predicate: the other
  // lanes' addresses may be out of bounds (padding), which a scalar select
  // never touched but a vector load would.
  Expr mutate_Select(const SelectNode* op, const Expr& self) override {
    Expr c = mutate(op->condition);
    Expr cv = broadcast_to(c, lanes_);
    Expr saved = pred_sel_;
    pred_sel_ = and_pred(saved, cv);
    Expr t = mutate(op->true_value);
    pred_sel_ = and_pred(saved, !cv);
    Expr f = mutate(op->false_value);
    pred_sel_ = saved;
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
    if (c.dtype().lanes == 1 && t.dtype().lanes == 1 && f.dtype().lanes == 1) return SelectNode::make(c, t, f);
    return SelectNode::make(cv, broadcast_to(t, lanes_), broadcast_to(f, lanes_));
  }

  Expr mutate_Load(const LoadNode* op, const Expr& self) override {
    Expr idx = mutate(op->index);
    if (idx.dtype().lanes == 1 && !pred_if_.defined()) {
      return idx.same_as(op->index) ? self : LoadNode::make(op->dtype, op->buffer, idx);
    }
    Expr pred = idx.dtype().lanes == 1 ? pred_if_ : and_pred(pred_if_, pred_sel_);
    return LoadNode::make(op->dtype.with_lanes(lanes_), op->buffer, broadcast_to(idx, lanes_), pred);
  }

  Expr mutate_Let(const LetNode* op, const Expr& self) override {
    Expr v = mutate(op->value);
    if (v.dtype().lanes == 1) return IRMutator::mutate_Let(op, self);
    Var nv(op->var->name, v.dtype());
    remap_[op->var.node()] = nv;
    Expr b = mutate(op->body);
    remap_.erase(op->var.node());
    return LetNode::make(nv, v, b);
  }

  Expr mutate_Ramp(const RampNode*, const Expr& self) override { return fail(self); }
  Expr mutate_Broadcast(const BroadcastNode*, const Expr& self) override { return fail(self); }
  Expr mutate_TensorRead(const TensorReadNode*, const Expr& self) override { return fail(self); }
  Expr mutate_Reduce(const ReduceNode*, const Expr& self) override { return fail(self); }

  Stmt mutate_Store(const StoreNode* op, const Stmt& self) override {
    Expr v = mutate(op->value), idx = mutate(op->index);
    if (idx.dtype().lanes == 1 || idx.as<BroadcastNode>()) return fail(self);  // all lanes write one element
    stores_[op->buffer.node()].push_back(idx);
    return StoreNode::make(op->buffer, broadcast_to(v, lanes_), idx, pred_if_);
  }

  Stmt mutate_IfThenElse(const IfThenElseNode* op, const Stmt& self) override {
    std::vector<Expr> conj;
    split_conjuncts(op->condition, &conj);
    Expr scalar_cond, vector_cond;
    for (auto& c : conj) {
      Expr m = mutate(c);
      if (m.dtype().lanes == 1)
        scalar_cond = and_pred(scalar_cond, m);
      else
        vector_cond = and_pred(vector_cond, m);
    }
    if (!vector_cond.defined()) {
      Stmt t = mutate(op->then_case), e = mutate(op->else_case);
      return IfThenElseNode::make(scalar_cond, t, e);
    }
    if (op->else_case.defined()) return fail(self);
    Expr saved = pred_if_;
    pred_if_ = and_pred(saved, vector_cond);
    Stmt t = mutate(op->then_case);
    pred_if_ = saved;
    return scalar_cond.defined() ? IfThenElseNode::make(scalar_cond, t) : t;
  }

  Stmt mutate_For(const ForNode* op, const Stmt& self) override {
    Expr mn = mutate(op->min), ext = mutate(op->extent);
    if (!mn.same_as(op->min) || !ext.same_as(op->extent)) return fail(self);
    return IRMutator::mutate_For(op, self);
  }

  Stmt mutate_LetStmt(const LetStmtNode* op, const Stmt& self) override {
    Expr v = mutate(op->value);
    if (v.dtype().lanes == 1) return IRMutator::mutate_LetStmt(op, self);
    Var nv(op->var->name, v.dtype());
    remap_[op->var.node()] = nv;
    Stmt b = mutate(op->body);
    remap_.erase(op->var.node());
    return LetStmtNode::make(nv, v, b);
  }

  Stmt mutate_AttrStmt(const AttrStmtNode* op, const Stmt& self) override {
    if (!mutate(op->value).same_as(op->value)) return fail(self);
    return IRMutator::mutate_AttrStmt(op, self);
  }

  Stmt mutate_Allocate(const AllocateNode*, const Stmt& self) override { return fail(self); }
  Stmt mutate_Barrier(const BarrierNode*, const Stmt& self) override { return fail(self); }
  Stmt mutate_Token(const TokenNode*, const Stmt& self) override { return fail(self); }
  Stmt mutate_Prefetch(const PrefetchNode*, const Stmt& self) override { return fail(self); }
  Stmt mutate_ThreadAllReduce(const ThreadAllReduceNode*, const Stmt& self) override { return fail(self); }
  Stmt mutate_TensorIntrinCall(const TensorIntrinCallNode*, const Stmt& self) override { return fail(self); }
  Stmt mutate_Provide(const ProvideNode*, const Stmt& self) override { return fail(self); }
  Stmt mutate_Realize(const RealizeNode*, const Stmt& self) override { return fail(self); }

 private:
  template <class T>
  T fail(const T& self) {
    failed_ = true;
    return self;
  }

  // ramp +- ramp, ramp +- scalar, ramp * scalar stay ramps; broadcast op
  // broadcast stays a broadcast. Undefined when no rule applies.
  Expr ramp_arith(NodeKind k, const Expr& a, const Expr& b) {
    auto scalar_of = [](const Expr& e) -> Expr {
      if (e.dtype().lanes == 1) return e;
      if (auto* bc = e.as<BroadcastNode>()) return bc->value;
      return Expr();
    };
    auto* ra = a.as<RampNode>();
    auto* rb = b.as<RampNode>();
    Expr sa = scalar_of(a), sb = scalar_of(b);
    auto ramp = [&](Expr base, Expr stride) -> Expr {
      if (is_zero(stride)) return BroadcastNode::make(base, lanes_);
      return RampNode::make(base, stride, lanes_);
    };
    switch (k) {
      case NodeKind::Add:
        if (ra && rb) return ramp(ra->base + rb->base, ra->stride + rb->stride);
        if (ra && sb.defined()) return ramp(ra->base + sb, ra->stride);
        if (sa.defined() && rb) return ramp(sa + rb->base, rb->stride);
        break;
      case NodeKind::Sub:
        if (ra && rb) return ramp(ra->base - rb->base, ra->stride - rb->stride);
        if (ra && sb.defined()) return ramp(ra->base - sb, ra->stride);
        if (sa.defined() && rb) return ramp(sa - rb->base, make_zero(rb->stride.dtype()) - rb->stride);
        break;
      case NodeKind::Mul:
        if (ra && sb.defined()) return ramp(ra->base * sb, ra->stride * sb);
        if (sa.defined() && rb) return ramp(sa * rb->base, sa * rb->stride);
        break;
      default:
        break;
    }
    if (sa.defined() && sb.defined()) return BroadcastNode::make(make_binary(k, sa, sb), lanes_);
    return Expr();
  }

  const VarNode* var_;
  const int lanes_;
  const Expr ramp_;
  bool failed_ = false;
  Expr pred_if_;                                    // lanes enabled by enclosing lane-varying IfThenElse
  Expr pred_sel_;                                   // lanes selected by enclosing lane-varying Select branches
  std::unordered_map<const VarNode*, Expr> remap_;  // let vars that became vectors
  std::unordered_map<const VarNode*, std::vector<Expr>> stores_;
};

class LoopVectorizer : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  Stmt mutate_For(const ForNode* op, const Stmt& self) override {
    Stmt body = mutate(op->body);
    if (op->for_kind != ForKind::kVectorized) {
      if (body.same_as(op->body)) return self;
      return ForNode::make(op->loop_var, op->min, op->extent, op->for_kind, body, op->thread_tag);
    }
    const int64_t* ext = as_const_int(op->extent);
    if (ext && *ext >= 2 && *ext <= 0xffff && !has_vectors(body)) {
      Vectorizer v(op->loop_var.node(), op->min, static_cast<int>(*ext));
      Stmt r = v.mutate(body);
      if (!v.failed() && v.lanes_independent(r)) return r;
    }
    return ForNode::make(op->loop_var, op->min, op->extent, ForKind::kSerial, body);
  }
};

}  // namespace

Stmt vectorize(const Stmt& s) {
  Stmt r = LoopVectorizer().mutate(s);
  return r.defined() ? r : make_no_op();
}

}  // namespace passes
}  // namespace kiln
