// Statement simplification (see simplify.h).
#include "compute/simplify.h"

#include <memory>
#include <vector>

#include "base/error.h"
#include "compute/ir_functor.h"

namespace kiln {

namespace {

using Bound = ConstIntBound;

// Scoped bindings undone in reverse order (one variable may be constrained
// twice, e.g. by `i >= 2 && i < 8`).
class ScopeStack {
 public:
  ScopeStack() = default;
  ScopeStack(const ScopeStack&) = delete;
  ScopeStack& operator=(const ScopeStack&) = delete;
  ~ScopeStack() {
    while (!scopes_.empty()) scopes_.pop_back();
  }
  void save(Analyzer* an, const Var& v) { scopes_.push_back(std::make_unique<Analyzer::VarScope>(an, v)); }

 private:
  std::vector<std::unique_ptr<Analyzer::VarScope>> scopes_;
};

class StmtSimplifier : public IRMutator {
 public:
  explicit StmtSimplifier(Analyzer* an) : an_(an) {}
  using IRMutator::mutate;

  Expr mutate(const Expr& e) override { return e.defined() ? an_->simplify(e) : e; }

 protected:
  Stmt mutate_For(const ForNode* op, const Stmt& self) override {
    Expr mn = mutate(op->min), ext = mutate(op->extent);
    if (an_->const_int_bound(ext).max_value <= 0) return Stmt();
    if (is_one(ext) && op->for_kind != ForKind::kThreadBinding)
      return mutate(substitute(op->body, {{op->loop_var.node(), mn}}));
    Stmt body;
    {
      Analyzer::VarScope scope(an_, op->loop_var);
      an_->bind(op->loop_var, Range(mn, ext));
      body = mutate(op->body);
    }
    if (!body.defined()) return Stmt();
    if (mn.same_as(op->min) && ext.same_as(op->extent) && body.same_as(op->body)) return self;
    return ForNode::make(op->loop_var, mn, ext, op->for_kind, body, op->thread_tag);
  }

  Stmt mutate_IfThenElse(const IfThenElseNode* op, const Stmt& self) override {
    Expr c = mutate(op->condition);
    if (is_one(c)) return mutate(op->then_case);
    if (is_zero(c)) return op->else_case.defined() ? mutate(op->else_case) : Stmt();
    Stmt t, e;
    {
      ScopeStack scopes;
      refine(c, true, &scopes);
      t = mutate(op->then_case);
    }
    if (op->else_case.defined()) {
      ScopeStack scopes;
      refine(c, false, &scopes);
      e = mutate(op->else_case);
    }
    if (!t.defined() && !e.defined()) return Stmt();
    if (!t.defined()) return IfThenElseNode::make(an_->simplify(NotNode::make(c)), e);
    if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case)) return self;
    return IfThenElseNode::make(c, t, e);
  }

  Stmt mutate_LetStmt(const LetStmtNode* op, const Stmt& self) override {
    Expr v = mutate(op->value);
    Stmt body;
    {
      Analyzer::VarScope scope(an_, op->var);
      an_->bind(op->var, v);
      body = mutate(op->body);
    }
    if (!body.defined()) return Stmt();
    if (v.same_as(op->value) && body.same_as(op->body)) return self;
    return LetStmtNode::make(op->var, v, body);
  }

  Stmt mutate_AttrStmt(const AttrStmtNode* op, const Stmt& self) override {
    auto* iv = op->node.as<IterVarNode>();
    if (op->key != attr::kThreadExtent || !iv) return IRMutator::mutate_AttrStmt(op, self);
    Expr v = mutate(op->value);
    Stmt body;
    {
      Analyzer::VarScope scope(an_, iv->var);
      an_->bind(iv->var, Range(make_zero(iv->var.dtype()), v));
      body = mutate(op->body);
    }
    if (!body.defined()) return Stmt();
    if (v.same_as(op->value) && body.same_as(op->body)) return self;
    return AttrStmtNode::make(op->node, op->key, v, body);
  }

  Stmt mutate_Store(const StoreNode* op, const Stmt& self) override {
    Expr v = mutate(op->value), i = mutate(op->index), p = mutate(op->predicate);
    if (p.defined() && is_one(p)) p = Expr();
    if (v.same_as(op->value) && i.same_as(op->index) && p.same_as(op->predicate)) return self;
    return StoreNode::make(op->buffer, v, i, p);
  }

 private:
  // Records the constant bounds that `cond == truth` implies for variables
  // compared against expressions, for the duration of `scopes`.
  void refine(const Expr& cond, bool truth, ScopeStack* scopes) {
    if (auto* n = cond.as<NotNode>()) return refine(n->a, !truth, scopes);
    if ((truth && cond->kind() == NodeKind::And) || (!truth && cond->kind() == NodeKind::Or)) {
      auto* op = static_cast<const BinaryNode*>(cond.get());
      refine(op->a, truth, scopes);
      refine(op->b, truth, scopes);
      return;
    }
    if (!is_comparison_kind(cond->kind())) return;
    auto* op = static_cast<const BinaryNode*>(cond.get());
    if (!op->a.dtype().is_int() || !op->a.dtype().is_scalar()) return;
    NodeKind k = cond->kind();
    if (!truth) {
      switch (k) {
        case NodeKind::LT:
          k = NodeKind::GE;
          break;
        case NodeKind::LE:
          k = NodeKind::GT;
          break;
        case NodeKind::GT:
          k = NodeKind::LE;
          break;
        case NodeKind::GE:
          k = NodeKind::LT;
          break;
        case NodeKind::NE:
          k = NodeKind::EQ;
          break;
        default:
          return;  // not (a == b) says nothing about a bound
      }
    }
    if (auto* v = op->a.as<VarNode>()) constrain(Var(v), k, an_->const_int_bound(op->b), scopes);
    if (auto* v = op->b.as<VarNode>()) {
      // e < v  is  v > e, and so on.
      NodeKind swapped = k;
      switch (k) {
        case NodeKind::LT:
          swapped = NodeKind::GT;
          break;
        case NodeKind::LE:
          swapped = NodeKind::GE;
          break;
        case NodeKind::GT:
          swapped = NodeKind::LT;
          break;
        case NodeKind::GE:
          swapped = NodeKind::LE;
          break;
        default:
          break;
      }
      constrain(Var(v), swapped, an_->const_int_bound(op->a), scopes);
    }
  }

  // v `k` e holds, with e in bound b.
  void constrain(const Var& v, NodeKind k, Bound b, ScopeStack* scopes) {
    int64_t lo = Bound::kNegInf, hi = Bound::kPosInf;
    auto dec = [](int64_t x) { return x == Bound::kPosInf || x == Bound::kNegInf ? x : x - 1; };
    auto inc = [](int64_t x) { return x == Bound::kPosInf || x == Bound::kNegInf ? x : x + 1; };
    switch (k) {
      case NodeKind::LT:
        hi = dec(b.max_value);
        break;
      case NodeKind::LE:
        hi = b.max_value;
        break;
      case NodeKind::GT:
        lo = inc(b.min_value);
        break;
      case NodeKind::GE:
        lo = b.min_value;
        break;
      case NodeKind::EQ:
        lo = b.min_value;
        hi = b.max_value;
        break;
      default:
        return;
    }
    if (lo == Bound::kNegInf && hi == Bound::kPosInf) return;
    scopes->save(an_, v);
    an_->constrain(v, lo, hi);
  }

  Analyzer* an_;
};

}  // namespace

Expr simplify(const Expr& e) {
  Analyzer an;
  return an.simplify(e);
}

Stmt simplify(const Stmt& s) {
  Analyzer an;
  return simplify(s, &an);
}

Stmt simplify(const Stmt& s, Analyzer* analyzer) {
  internal_assert(analyzer != nullptr);
  if (!s.defined()) return s;
  Stmt r = StmtSimplifier(analyzer).mutate(s);
  return r.defined() ? r : EvaluateNode::make(make_zero(DType::i32()));
}

}  // namespace kiln
