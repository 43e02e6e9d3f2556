#include "compute/ir_functor.h"

#include "base/error.h"
#include "compute/expr_ops.h"  // operator!(Expr): without it `!c` is the builtin bool negation

namespace kiln {

// ---------------------------------------------------------------- IRVisitor

void IRVisitor::visit(const Expr& e) {
  if (!e.defined()) return;
  switch (e->kind()) {
#define KILN_NODE(Name)                                    \
  case NodeKind::Name:                                     \
    visit_##Name(static_cast<const Name##Node*>(e.get())); \
    return;
#include "compute/ir_expr_kinds.def"
#undef KILN_NODE
    default:
      internal_error() << "not an expression: " << node_kind_name(e->kind());
  }
}

void IRVisitor::visit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s->kind()) {
#define KILN_NODE(Name)                                    \
  case NodeKind::Name:                                     \
    visit_##Name(static_cast<const Name##Node*>(s.get())); \
    return;
#include "compute/ir_stmt_kinds.def"
#undef KILN_NODE
    default:
      internal_error() << "not a statement: " << node_kind_name(s->kind());
  }
}

void IRVisitor::visit_IntImm(const IntImmNode*) {}
void IRVisitor::visit_FloatImm(const FloatImmNode*) {}
void IRVisitor::visit_StringImm(const StringImmNode*) {}
void IRVisitor::visit_Var(const VarNode*) {}
void IRVisitor::visit_binary(const BinaryNode* op) {
  visit(op->a);
  visit(op->b);
}
#define KILN_BIN(Name) \
  void IRVisitor::visit_##Name(const Name##Node* op) { visit_binary(op); }
KILN_BIN(Add)
KILN_BIN(Sub) KILN_BIN(Mul) KILN_BIN(Div) KILN_BIN(Mod) KILN_BIN(FloorDiv) KILN_BIN(FloorMod) KILN_BIN(Min)
    KILN_BIN(Max) KILN_BIN(EQ) KILN_BIN(NE) KILN_BIN(LT) KILN_BIN(LE) KILN_BIN(GT) KILN_BIN(GE) KILN_BIN(And)
        KILN_BIN(Or)
#undef KILN_BIN
            void IRVisitor::visit_Not(const NotNode* op) {
  visit(op->a);
}
void IRVisitor::visit_Select(const SelectNode* op) {
  visit(op->condition);
  visit(op->true_value);
  visit(op->false_value);
}
void IRVisitor::visit_Cast(const CastNode* op) { visit(op->value); }
void IRVisitor::visit_Call(const CallNode* op) {
  for (auto& a : op->args) visit(a);
}
void IRVisitor::visit_TensorRead(const TensorReadNode* op) {
  for (auto& i : op->indices) visit(i);
}
void IRVisitor::visit_Load(const LoadNode* op) {
  visit(op->buffer);
  visit(op->index);
  visit(op->predicate);
}
void IRVisitor::visit_Ramp(const RampNode* op) {
  visit(op->base);
  visit(op->stride);
}
void IRVisitor::visit_Broadcast(const BroadcastNode* op) { visit(op->value); }
void IRVisitor::visit_Let(const LetNode* op) {
  visit(op->value);
  visit(op->var);
  visit(op->body);
}
void IRVisitor::visit_Reduce(const ReduceNode* op) {
  visit(op->source);
  visit(op->condition);
}

void IRVisitor::visit_For(const ForNode* op) {
  visit(op->loop_var);
  visit(op->min);
  visit(op->extent);
  visit(op->body);
}
void IRVisitor::visit_Allocate(const AllocateNode* op) {
  visit(op->buffer);
  for (auto& e : op->extents) visit(e);
  visit(op->body);
}
void IRVisitor::visit_Store(const StoreNode* op) {
  visit(op->buffer);
  visit(op->value);
  visit(op->index);
  visit(op->predicate);
}
void IRVisitor::visit_Seq(const SeqNode* op) {
  for (auto& s : op->seq) visit(s);
}
void IRVisitor::visit_IfThenElse(const IfThenElseNode* op) {
  visit(op->condition);
  visit(op->then_case);
  visit(op->else_case);
}
void IRVisitor::visit_LetStmt(const LetStmtNode* op) {
  visit(op->value);
  visit(op->var);
  visit(op->body);
}
void IRVisitor::visit_Evaluate(const EvaluateNode* op) { visit(op->value); }
void IRVisitor::visit_Barrier(const BarrierNode*) {}
void IRVisitor::visit_ThreadAllReduce(const ThreadAllReduceNode* op) {
  visit(op->value);
  visit(op->result);
}
void IRVisitor::visit_Token(const TokenNode* op) {
  visit(op->slot);
  visit(op->in_flight);
  visit(op->phase);
}
void IRVisitor::visit_Prefetch(const PrefetchNode* op) {
  visit(op->buffer);
  visit(op->index);
}
void IRVisitor::visit_AttrStmt(const AttrStmtNode* op) {
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visit_TensorIntrinCall(const TensorIntrinCallNode* op) {
  for (auto& o : op->operands) {
    visit(o.buffer);
    visit(o.offset);
    visit(o.extent);
    visit(o.stride);
  }
  for (auto& s : op->scalars) visit(s);
}
void IRVisitor::visit_Tensorize(const TensorizeNode* op) {
  for (auto& r : op->regions)
    for (auto& b : r.base) visit(b);
}
void IRVisitor::visit_Provide(const ProvideNode* op) {
  visit(op->value);
  for (auto& i : op->indices) visit(i);
}
void IRVisitor::visit_Realize(const RealizeNode* op) {
  for (auto& r : op->bounds) {
    visit(r.min);
    visit(r.extent);
  }
  visit(op->body);
}

// ---------------------------------------------------------------- IRMutator

Expr IRMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  switch (e->kind()) {
#define KILN_NODE(Name) \
  case NodeKind::Name:  \
    return mutate_##Name(static_cast<const Name##Node*>(e.get()), e);
#include "compute/ir_expr_kinds.def"
#undef KILN_NODE
    default:
      internal_error() << "not an expression: " << node_kind_name(e->kind());
  }
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s->kind()) {
#define KILN_NODE(Name) \
  case NodeKind::Name:  \
    return mutate_##Name(static_cast<const Name##Node*>(s.get()), s);
#include "compute/ir_stmt_kinds.def"
#undef KILN_NODE
    default:
      internal_error() << "not a statement: " << node_kind_name(s->kind());
  }
}

Expr IRMutator::mutate_IntImm(const IntImmNode*, const Expr& self) { return self; }
Expr IRMutator::mutate_FloatImm(const FloatImmNode*, const Expr& self) { return self; }
Expr IRMutator::mutate_StringImm(const StringImmNode*, const Expr& self) { return self; }
Expr IRMutator::mutate_Var(const VarNode*, const Expr& self) { return self; }
Expr IRMutator::mutate_binary(const BinaryNode* op, const Expr& self) {
  Expr a = mutate(op->a), b = mutate(op->b);
  if (a.same_as(op->a) && b.same_as(op->b)) return self;
  if (a.dtype() != b.dtype()) {
    // A child changed lanes (vectorization); broadcast the scalar side.
    if (a.dtype().lanes == 1 && b.dtype().lanes > 1) a = BroadcastNode::make(a, b.dtype().lanes);
    if (b.dtype().lanes == 1 && a.dtype().lanes > 1) b = BroadcastNode::make(b, a.dtype().lanes);
  }
  return make_binary(op->kind(), a, b);
}
#define KILN_BIN(Name) \
  Expr IRMutator::mutate_##Name(const Name##Node* op, const Expr& self) { return mutate_binary(op, self); }
KILN_BIN(Add)
KILN_BIN(Sub) KILN_BIN(Mul) KILN_BIN(Div) KILN_BIN(Mod) KILN_BIN(FloorDiv) KILN_BIN(FloorMod) KILN_BIN(Min)
    KILN_BIN(Max) KILN_BIN(EQ) KILN_BIN(NE) KILN_BIN(LT) KILN_BIN(LE) KILN_BIN(GT) KILN_BIN(GE) KILN_BIN(And)
        KILN_BIN(Or)
#undef KILN_BIN
            Expr IRMutator::mutate_Not(const NotNode* op, const Expr& self) {
  Expr a = mutate(op->a);
  return a.same_as(op->a) ? self : NotNode::make(a);
}
Expr IRMutator::mutate_Select(const SelectNode* op, const Expr& self) {
  Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
  if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
  int lanes = std::max({c.dtype().lanes, t.dtype().lanes, f.dtype().lanes});
  if (lanes > 1) {
    if (c.dtype().lanes == 1) c = BroadcastNode::make(c, lanes);
    if (t.dtype().lanes == 1) t = BroadcastNode::make(t, lanes);
    if (f.dtype().lanes == 1) f = BroadcastNode::make(f, lanes);
  }
  return SelectNode::make(c, t, f);
}
Expr IRMutator::mutate_Cast(const CastNode* op, const Expr& self) {
  Expr v = mutate(op->value);
  if (v.same_as(op->value)) return self;
  return CastNode::make(op->dtype.with_lanes(v.dtype().lanes), v);
}
Expr IRMutator::mutate_Call(const CallNode* op, const Expr& self) {
  std::vector<Expr> args;
  bool changed = false;
  int lanes = 1;
  for (auto& a : op->args) {
    args.push_back(mutate(a));
    changed |= !args.back().same_as(a);
    lanes = std::max<int>(lanes, args.back().dtype().lanes);
  }
  if (!changed) return self;
  for (auto& a : args)
    if (lanes > 1 && a.dtype().lanes == 1) a = BroadcastNode::make(a, lanes);
  return CallNode::make(op->op, std::move(args));
}
Expr IRMutator::mutate_TensorRead(const TensorReadNode* op, const Expr& self) {
  std::vector<Expr> idx;
  bool changed = false;
  for (auto& i : op->indices) {
    idx.push_back(mutate(i));
    changed |= !idx.back().same_as(i);
  }
  return changed ? TensorReadNode::make(op->tensor, std::move(idx)) : self;
}
Expr IRMutator::mutate_Load(const LoadNode* op, const Expr& self) {
  Expr idx = mutate(op->index), pred = mutate(op->predicate);
  if (idx.same_as(op->index) && pred.same_as(op->predicate)) return self;
  return LoadNode::make(op->dtype.with_lanes(idx.dtype().lanes), op->buffer, idx, pred);
}
Expr IRMutator::mutate_Ramp(const RampNode* op, const Expr& self) {
  Expr b = mutate(op->base), s = mutate(op->stride);
  if (b.same_as(op->base) && s.same_as(op->stride)) return self;
  return RampNode::make(b, s, op->lanes);
}
Expr IRMutator::mutate_Broadcast(const BroadcastNode* op, const Expr& self) {
  Expr v = mutate(op->value);
  if (v.same_as(op->value)) return self;
  if (v.dtype().lanes > 1) return v;  // already a vector
  return BroadcastNode::make(v, op->lanes);
}
Expr IRMutator::mutate_Let(const LetNode* op, const Expr& self) {
  Expr v = mutate(op->value), b = mutate(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return self;
  return LetNode::make(op->var, v, b);
}
Expr IRMutator::mutate_Reduce(const ReduceNode* op, const Expr& self) {
  Expr s = mutate(op->source), c = mutate(op->condition);
  if (s.same_as(op->source) && c.same_as(op->condition)) return self;
  return ReduceNode::make(op->combiner, s, op->axes, c);
}

Stmt IRMutator::mutate_For(const ForNode* op, const Stmt& self) {
  Expr mn = mutate(op->min), ext = mutate(op->extent);
  Stmt b = mutate(op->body);
  if (mn.same_as(op->min) && ext.same_as(op->extent) && b.same_as(op->body)) return self;
  if (!b.defined()) return b;
  return ForNode::make(op->loop_var, mn, ext, op->for_kind, b, op->thread_tag);
}
Stmt IRMutator::mutate_Allocate(const AllocateNode* op, const Stmt& self) {
  std::vector<Expr> ext;
  bool changed = false;
  for (auto& e : op->extents) {
    ext.push_back(mutate(e));
    changed |= !ext.back().same_as(e);
  }
  Stmt b = mutate(op->body);
  if (!changed && b.same_as(op->body)) return self;
  if (!b.defined()) return b;
  return AllocateNode::make(op->buffer, op->dtype, ext, op->scope, b);
}
Stmt IRMutator::mutate_Store(const StoreNode* op, const Stmt& self) {
  Expr v = mutate(op->value), i = mutate(op->index), p = mutate(op->predicate);
  if (v.same_as(op->value) && i.same_as(op->index) && p.same_as(op->predicate)) return self;
  if (v.dtype().lanes == 1 && i.dtype().lanes > 1) v = BroadcastNode::make(v, i.dtype().lanes);
  return StoreNode::make(op->buffer, v, i, p);
}
Stmt IRMutator::mutate_Seq(const SeqNode* op, const Stmt& self) {
  std::vector<Stmt> seq;
  bool changed = false;
  for (auto& s : op->seq) {
    seq.push_back(mutate(s));
    changed |= !seq.back().same_as(s);
  }
  return changed ? SeqNode::make(std::move(seq)) : self;
}
Stmt IRMutator::mutate_IfThenElse(const IfThenElseNode* op, const Stmt& self) {
  Expr c = mutate(op->condition);
  Stmt t = mutate(op->then_case), e = mutate(op->else_case);
  if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case)) return self;
  if (!t.defined()) {
    if (!e.defined()) return Stmt();
    return IfThenElseNode::make(!c, e);
  }
  return IfThenElseNode::make(c, t, e);
}
Stmt IRMutator::mutate_LetStmt(const LetStmtNode* op, const Stmt& self) {
  Expr v = mutate(op->value);
  Stmt b = mutate(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return self;
  if (!b.defined()) return b;
  return LetStmtNode::make(op->var, v, b);
}
Stmt IRMutator::mutate_Evaluate(const EvaluateNode* op, const Stmt& self) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? self : EvaluateNode::make(v);
}
Stmt IRMutator::mutate_Barrier(const BarrierNode*, const Stmt& self) { return self; }
Stmt IRMutator::mutate_ThreadAllReduce(const ThreadAllReduceNode* op, const Stmt& self) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? self : ThreadAllReduceNode::make(op->combiner, v, op->result, op->thread_tag);
}
Stmt IRMutator::mutate_Token(const TokenNode* op, const Stmt& self) {
  Expr s = mutate(op->slot);
  Expr f = op->in_flight.defined() ? mutate(op->in_flight) : Expr();
  Expr ph = op->phase.defined() ? mutate(op->phase) : Expr();
  if (s.same_as(op->slot) && f.same_as(op->in_flight) && ph.same_as(op->phase)) return self;
  if (ph.defined()) return TokenNode::make_phased(op->op, op->queue, op->pipeline, s, ph);
  return TokenNode::make(op->op, op->queue, op->pipeline, s, f);
}
Stmt IRMutator::mutate_Prefetch(const PrefetchNode* op, const Stmt& self) {
  Expr i = mutate(op->index);
  return i.same_as(op->index) ? self : PrefetchNode::make(op->buffer, i);
}
Stmt IRMutator::mutate_AttrStmt(const AttrStmtNode* op, const Stmt& self) {
  Expr v = mutate(op->value);
  Stmt b = mutate(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return self;
  if (!b.defined()) return b;
  return AttrStmtNode::make(op->node, op->key, v, b);
}
Stmt IRMutator::mutate_TensorIntrinCall(const TensorIntrinCallNode* op, const Stmt& self) {
  bool changed = false;
  std::vector<TensorIntrinCallNode::Operand> ops;
  for (auto& o : op->operands) {
    TensorIntrinCallNode::Operand n{o.buffer, mutate(o.offset), mutate(o.extent), mutate(o.stride)};
    changed |= !n.offset.same_as(o.offset) || !n.extent.same_as(o.extent) || !n.stride.same_as(o.stride);
    ops.push_back(n);
  }
  std::vector<Expr> sc;
  for (auto& s : op->scalars) {
    sc.push_back(mutate(s));
    changed |= !sc.back().same_as(s);
  }
  return changed ? TensorIntrinCallNode::make(op->intrin, ops, sc) : self;
}
Stmt IRMutator::mutate_Tensorize(const TensorizeNode* op, const Stmt& self) {
  bool changed = false;
  std::vector<TensorizeNode::Region> regions;
  for (auto& r : op->regions) {
    TensorizeNode::Region n{r.tensor, {}, r.dims};
    for (auto& b : r.base) {
      n.base.push_back(mutate(b));
      changed |= !n.base.back().same_as(b);
    }
    regions.push_back(std::move(n));
  }
  return changed ? TensorizeNode::make(op->intrin, op->phase, std::move(regions)) : self;
}
Stmt IRMutator::mutate_Provide(const ProvideNode* op, const Stmt& self) {
  Expr v = mutate(op->value);
  std::vector<Expr> idx;
  bool changed = !v.same_as(op->value);
  for (auto& i : op->indices) {
    idx.push_back(mutate(i));
    changed |= !idx.back().same_as(i);
  }
  return changed ? ProvideNode::make(op->tensor, v, idx) : self;
}
Stmt IRMutator::mutate_Realize(const RealizeNode* op, const Stmt& self) {
  std::vector<Range> bounds;
  bool changed = false;
  for (auto& r : op->bounds) {
    Range n(mutate(r.min), mutate(r.extent));
    changed |= !n.min.same_as(r.min) || !n.extent.same_as(r.extent);
    bounds.push_back(n);
  }
  Stmt b = mutate(op->body);
  if (!changed && b.same_as(op->body)) return self;
  if (!b.defined()) return b;
  return RealizeNode::make(op->tensor, bounds, op->scope, op->align, b);
}

// ---------------------------------------------------------------- utilities

namespace {
class PostOrder : public IRVisitor {
 public:
  explicit PostOrder(const std::function<void(const Ref<Object>&)>& f) : f_(f) {}
  void visit(const Expr& e) override {
    if (!e.defined()) return;
    IRVisitor::visit(e);
    f_(e);
  }
  void visit(const Stmt& s) override {
    if (!s.defined()) return;
    IRVisitor::visit(s);
    f_(s);
  }

 private:
  const std::function<void(const Ref<Object>&)>& f_;
};

class Substituter : public IRMutator {
 public:
  explicit Substituter(const VarMap& m) : m_(m) {}

 protected:
  Expr mutate_Var(const VarNode* op, const Expr& self) override {
    auto it = m_.find(op);
    return it == m_.end() ? self : it->second;
  }
  Expr mutate_Load(const LoadNode* op, const Expr& self) override {
    Expr r = IRMutator::mutate_Load(op, self);
    auto it = m_.find(op->buffer.node());
    if (it == m_.end()) return r;
    auto* l = r.as<LoadNode>();
    return LoadNode::make(l->dtype, Var(it->second.as<VarNode>()), l->index, l->predicate);
  }
  Stmt mutate_Store(const StoreNode* op, const Stmt& self) override {
    Stmt r = IRMutator::mutate_Store(op, self);
    auto it = m_.find(op->buffer.node());
    if (it == m_.end()) return r;
    auto* st = r.as<StoreNode>();
    return StoreNode::make(Var(it->second.as<VarNode>()), st->value, st->index, st->predicate);
  }

 private:
  const VarMap& m_;
};
}  // namespace

void post_order_visit(const Expr& e, const std::function<void(const Ref<Object>&)>& f) { PostOrder(f).visit(e); }
void post_order_visit(const Stmt& s, const std::function<void(const Ref<Object>&)>& f) { PostOrder(f).visit(s); }

Expr substitute(const Expr& e, const VarMap& vmap) { return vmap.empty() ? e : Substituter(vmap).mutate(e); }
Stmt substitute(const Stmt& s, const VarMap& vmap) { return vmap.empty() ? s : Substituter(vmap).mutate(s); }

bool uses_var(const Expr& e, const VarNode* v) {
  bool found = false;
  post_order_visit(e, [&](const Ref<Object>& n) { found |= n.get() == v; });
  return found;
}
bool uses_var(const Stmt& s, const VarNode* v) {
  bool found = false;
  post_order_visit(s, [&](const Ref<Object>& n) { found |= n.get() == v; });
  return found;
}

}  // namespace kiln
