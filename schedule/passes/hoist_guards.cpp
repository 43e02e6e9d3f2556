#include "schedule/passes/hoist_guards.h"

#include "compute/analyzer.h"
#include "compute/expr_ops.h"
#include "compute/ir_functor.h"
#include "schedule/passes/pass_util.h"

namespace kiln {
namespace passes {

namespace {

Expr join_conjuncts(const std::vector<Expr>& conj) {
  Expr r;
  for (const Expr& c : conj) r = r.defined() ? (r && c) : c;
  return r;
}

// Index arithmetic only: evaluating it anywhere in scope gives the same value.
bool reads_no_memory(const Expr& e) {
  bool pure = true;
  post_order_visit(e, [&](const Ref<Object>& n) {
    const NodeKind k = n->kind();
    if (k == NodeKind::Load || k == NodeKind::TensorRead || k == NodeKind::Call) pure = false;
  });
  return pure;
}

bool contains(const std::vector<Expr>& conj, const Expr& c) {
  for (const Expr& x : conj)
    if (expr_deep_equal(x, c)) return true;
  return false;
}

class GuardHoister : public IRMutator {
 protected:
  Stmt mutate_For(const ForNode* op, const Stmt& self) override {
    Stmt inner = IRMutator::mutate_For(op, self);
    const auto* loop = inner.as<ForNode>();
    if (!loop || (loop->for_kind != ForKind::kSerial && loop->for_kind != ForKind::kParallel)) return inner;
    std::vector<const IfThenElseNode*> guards;
    if (auto* seq = loop->body.as<SeqNode>()) {
      for (const Stmt& s : seq->seq) guards.push_back(s.as<IfThenElseNode>());
    } else {
      guards.push_back(loop->body.as<IfThenElseNode>());
    }
    std::vector<std::vector<Expr>> conj(guards.size());
    for (size_t i = 0; i < guards.size(); ++i) {
      if (!guards[i] || guards[i]->else_case.defined()) return inner;
      split_conjuncts(guards[i]->condition, &conj[i]);
    }
    std::vector<Expr> common;
    for (const Expr& c : conj[0]) {
      if (uses_var(c, loop->loop_var.node()) || !reads_no_memory(c) || contains(common, c)) continue;
      bool everywhere = true;
      for (size_t i = 1; i < conj.size() && everywhere; ++i) everywhere = contains(conj[i], c);
      if (everywhere) common.push_back(c);
    }
    if (common.empty()) return inner;
    std::vector<Stmt> body;
    for (size_t i = 0; i < guards.size(); ++i) {
      std::vector<Expr> rest;
      for (const Expr& c : conj[i])
        if (!contains(common, c)) rest.push_back(c);
      body.push_back(rest.empty() ? guards[i]->then_case
                                  : IfThenElseNode::make(join_conjuncts(rest), guards[i]->then_case));
    }
    Stmt hoisted = ForNode::make(loop->loop_var, loop->min, loop->extent, loop->for_kind, SeqNode::make(body),
                                 loop->thread_tag);
    return IfThenElseNode::make(join_conjuncts(common), hoisted);
  }
};

}  // namespace

Stmt hoist_guards(const Stmt& s) { return GuardHoister().mutate(s); }

}  // namespace passes
}  // namespace kiln
