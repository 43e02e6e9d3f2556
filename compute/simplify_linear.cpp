// LinearForm: sums of products for the simplifier (see simplify_linear.h).
#include "compute/simplify_linear.h"

#include "compute/analyzer.h"
#include "base/error.h"

namespace kiln {

// Wrapping arithmetic at the width of the type (no signed-overflow UB in
// int64), noting whether the exact result was lost.
int64_t LinearForm::wadd(int64_t a, int64_t b) {
  int64_t r = wrap_to_type(dtype_, static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)));
  if (static_cast<__int128>(a) + b != r) exact_ = false;
  return r;
}
int64_t LinearForm::wmul(int64_t a, int64_t b) {
  int64_t r = wrap_to_type(dtype_, static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)));
  if (static_cast<__int128>(a) * b != r) exact_ = false;
  return r;
}

LinearForm LinearForm::of(const Expr& e) {
  LinearForm f(e.dtype());
  f.add_expr(e, 1);
  return f;
}

void LinearForm::add_expr(const Expr& e, int64_t scale) {
  if (scale == 0) return;
  switch (e->kind()) {
    case NodeKind::IntImm:
      add_constant(wmul(e.as<IntImmNode>()->value, scale));
      return;
    case NodeKind::Add: {
      auto* op = e.as<AddNode>();
      add_expr(op->a, scale);
      add_expr(op->b, scale);
      return;
    }
    case NodeKind::Sub: {
      auto* op = e.as<SubNode>();
      add_expr(op->a, scale);
      add_expr(op->b, wmul(scale, -1));
      return;
    }
    case NodeKind::Mul: {
      auto* op = e.as<MulNode>();
      if (auto* c = op->b.as<IntImmNode>()) {
        add_expr(op->a, wmul(scale, c->value));
        return;
      }
      if (auto* c = op->a.as<IntImmNode>()) {
        add_expr(op->b, wmul(scale, c->value));
        return;
      }
      break;
    }
    default:
      break;
  }
  add_atom(e, scale);
}

void LinearForm::add_atom(const Expr& atom, int64_t coeff) {
  internal_assert(atom.dtype() == dtype_) << atom.dtype().str() << " vs " << dtype_.str();
  if (coeff == 0) return;
  for (size_t i = 0; i < terms_.size(); ++i) {
    if (!expr_deep_equal(terms_[i].atom, atom)) continue;
    terms_[i].coeff = wadd(terms_[i].coeff, coeff);
    if (terms_[i].coeff == 0) terms_.erase(terms_.begin() + static_cast<long>(i));
    return;
  }
  terms_.push_back({atom, coeff});
}

void LinearForm::add(const LinearForm& o, int64_t scale) {
  exact_ = exact_ && o.exact_;
  for (auto& t : o.terms_) add_atom(t.atom, wmul(t.coeff, scale));
  add_constant(wmul(o.constant_, scale));
}

void LinearForm::add_constant(int64_t c) { constant_ = wadd(constant_, c); }
void LinearForm::set_constant(int64_t c) { constant_ = wrap_to_type(dtype_, c); }

void LinearForm::scale(int64_t c) {
  if (c == 0) {
    terms_.clear();
    constant_ = 0;
    return;
  }
  std::vector<LinearTerm> kept;
  for (auto& t : terms_) {
    int64_t v = wmul(t.coeff, c);
    if (v != 0) kept.push_back({t.atom, v});
  }
  terms_ = std::move(kept);
  constant_ = wmul(constant_, c);
}

void LinearForm::merge_div_mod() {
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t i = 0; i < terms_.size() && !changed; ++i) {
      const Expr& m = terms_[i].atom;
      NodeKind div_kind;
      if (m->kind() == NodeKind::FloorMod)
        div_kind = NodeKind::FloorDiv;
      else if (m->kind() == NodeKind::Mod)
        div_kind = NodeKind::Div;
      else
        continue;
      auto* mod = static_cast<const BinaryNode*>(m.get());
      const int64_t* c = mod->b.as<IntImmNode>() ? &mod->b.as<IntImmNode>()->value : nullptr;
      if (!c || *c == 0) continue;
      int64_t k = terms_[i].coeff;
      for (size_t j = 0; j < terms_.size(); ++j) {
        const Expr& d = terms_[j].atom;
        if (d->kind() != div_kind) continue;
        auto* div = static_cast<const BinaryNode*>(d.get());
        if (!is_const_int(div->b, *c) || terms_[j].coeff != wmul(k, *c)) continue;
        // floordiv(floormod(x, c1), c) * c + floormod(x, c) with c | c1 is
        // floormod(x, c1) (the simplifier folds floormod(floormod(x, c1), c)
        // to floormod(x, c)): axes fused in two levels read it.
        Expr x;
        if (expr_deep_equal(div->a, mod->a)) {
          x = mod->a;
        } else if (auto* inner = div->a.as<FloorModNode>(); inner && div_kind == NodeKind::FloorDiv) {
          const IntImmNode* c1 = inner->b.as<IntImmNode>();
          if (!c1 || *c <= 0 || c1->value <= 0 || c1->value % *c != 0 || !expr_deep_equal(inner->a, mod->a)) continue;
          x = div->a;
        } else {
          continue;
        }
        terms_.erase(terms_.begin() + static_cast<long>(std::max(i, j)));
        terms_.erase(terms_.begin() + static_cast<long>(std::min(i, j)));
        add_expr(x, k);
        changed = true;
        break;
      }
    }
  }
}

Expr LinearForm::to_expr() const {
  auto term = [&](const LinearTerm& t, int64_t c) -> Expr {
    if (c == 1) return t.atom;
    return MulNode::make(t.atom, make_const(dtype_, c));
  };
  // -v is representable in the type (not the most negative value).
  auto negatable = [&](int64_t v) { return v != INT64_MIN && wrap_to_type(dtype_, -v) == -v; };
  Expr acc;
  for (auto& t : terms_)
    if (t.coeff > 0) acc = acc.defined() ? AddNode::make(acc, term(t, t.coeff)) : term(t, t.coeff);
  int64_t c = constant_;
  for (auto& t : terms_) {
    if (t.coeff > 0) continue;
    if (!acc.defined()) {
      if (c > 0) {  // (16 - i)
        acc = make_const(dtype_, c);
        c = 0;
      } else {
        acc = term(t, t.coeff);
        continue;
      }
    }
    if (negatable(t.coeff))
      acc = SubNode::make(acc, term(t, -t.coeff));
    else
      acc = AddNode::make(acc, term(t, t.coeff));
  }
  if (!acc.defined()) return make_const(dtype_, c);
  if (c > 0) return AddNode::make(acc, make_const(dtype_, c));
  if (c < 0 && negatable(c)) return SubNode::make(acc, make_const(dtype_, -c));
  if (c < 0) return AddNode::make(acc, make_const(dtype_, c));
  return acc;
}

}  // namespace kiln
