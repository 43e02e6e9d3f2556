#include "schedule/tensorize.h"

#include <algorithm>
#include <functional>
#include <sstream>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/ir_functor.h"
#include "compute/printer.h"

namespace kiln {

namespace {

// An index as base + sum(coef[j] * axis_j) over the intrinsic's axes.
struct Affine {
  Expr base;
  std::vector<int64_t> coef;
  bool moves() const {
    return std::any_of(coef.begin(), coef.end(), [](int64_t c) { return c != 0; });
  }
};

std::string coef_text(const std::vector<int64_t>& coef, const std::vector<Var>& axes) {
  std::ostringstream os;
  bool first = true;
  for (size_t j = 0; j < coef.size(); ++j) {
    if (coef[j] == 0) continue;
    os << (first ? "" : " + ") << coef[j] << "*" << axes[j]->name;
    first = false;
  }
  return first ? "constant" : os.str();
}

class Matcher {
 public:
  Matcher(const StageNode* s, int pos, const TensorIntrin& intrin, Analyzer& ana) : intrin_(intrin), ana_(ana) {
    std::ostringstream os;
    os << "tensorize(stage '" << s->op->name << "' at '" << s->leaf_iter_vars[pos]->var->name << "', intrinsic '"
       << intrin->name << "')";
    where_ = os.str();
    auto* c = intrin->output->op.as<ComputeOpNode>();
    for (const IterVar& iv : c->axis) axes_.push_back(iv->var);
    for (const IterVar& iv : c->reduce_axis) axes_.push_back(iv->var);
  }

  const std::string& where() const { return where_; }
  const std::vector<Var>& axes() const { return axes_; }

  // The stage's expression (inner loops replaced by the intrinsic's axes)
  // against the intrinsic's.
  void match(const Expr& e, const Expr& i) {
    if (e->kind() == NodeKind::TensorRead && i->kind() == NodeKind::TensorRead)
      return match_read(e.as<TensorReadNode>(), i.as<TensorReadNode>(), e, i);
    if (e->kind() != i->kind() || e.dtype() != i.dtype()) {
      if (e->kind() == NodeKind::Cast || i->kind() == NodeKind::Cast || e->kind() == i->kind())
        mismatch(e, i, "types differ: " + e.dtype().str() + " against " + i.dtype().str());
      mismatch(e, i, "the operations differ");
    }
    switch (e->kind()) {
      case NodeKind::IntImm:
        if (e.as<IntImmNode>()->value != i.as<IntImmNode>()->value) mismatch(e, i, "the constants differ");
        return;
      case NodeKind::FloatImm:
        if (e.as<FloatImmNode>()->value != i.as<FloatImmNode>()->value) mismatch(e, i, "the constants differ");
        return;
      case NodeKind::Var:
        if (!e.same_as(i)) mismatch(e, i, "the variables differ");
        return;
      case NodeKind::Cast:
        return match(e.as<CastNode>()->value, i.as<CastNode>()->value);
      case NodeKind::Not:
        return match(e.as<NotNode>()->a, i.as<NotNode>()->a);
      case NodeKind::Select: {
        auto *a = e.as<SelectNode>(), *b = i.as<SelectNode>();
        match(a->condition, b->condition);
        match(a->true_value, b->true_value);
        return match(a->false_value, b->false_value);
      }
      case NodeKind::Call: {
        auto *a = e.as<CallNode>(), *b = i.as<CallNode>();
        if (a->op != b->op) mismatch(e, i, "the functions differ");
        for (size_t k = 0; k < a->args.size(); ++k) match(a->args[k], b->args[k]);
        return;
      }
      default:
        break;
    }
    if (is_binary_kind(e->kind())) {
      auto *a = static_cast<const BinaryNode*>(e.get()), *b = static_cast<const BinaryNode*>(i.get());
      match(a->a, b->a);
      return match(a->b, b->b);
    }
    mismatch(e, i, std::string("kiln cannot match a ") + node_kind_name(e->kind()) + " inside a tensorized body");
  }

  // The output: the stage writes its tensor at `idx`, the intrinsic its
  // output at its own axes.
  TensorizeNode::Region output_region(const Tensor& self, const std::vector<Expr>& idx) {
    std::vector<Expr> f;
    auto* c = intrin_->output->op.as<ComputeOpNode>();
    for (const IterVar& iv : c->axis) f.push_back(iv->var);
    return region("writes", self, idx, intrin_->output, f);
  }

  // The input regions, in the intrinsic's operand order.
  std::vector<TensorizeNode::Region> input_regions() const {
    std::vector<TensorizeNode::Region> out;
    for (const Tensor& p : intrin_->inputs) {
      auto it = std::find_if(inputs_.begin(), inputs_.end(),
                             [&](const std::pair<Tensor, TensorizeNode::Region>& m) { return m.first.same_tensor(p); });
      internal_assert(it != inputs_.end()) << where_ << ": input '" << p.name() << "' was never matched";
      out.push_back(it->second);
    }
    return out;
  }

  [[noreturn]] void fail(const std::string& what) const { user_error() << where_ << ": " << what; }

 private:
  [[noreturn]] void mismatch(const Expr& e, const Expr& i, const std::string& why) const {
    fail("the stage computes `" + to_string(e) + "` where the intrinsic computes `" + to_string(i) + "`: " + why);
  }

  void match_read(const TensorReadNode* e, const TensorReadNode* i, const Expr& ee, const Expr& ie) {
    Tensor t(e->tensor), p(i->tensor);
    if (t.dtype() != p.dtype())
      mismatch(ee, ie, "'" + t.name() + "' holds " + t.dtype().str() + ", the intrinsic's '" + p.name() + "' " +
                           p.dtype().str());
    TensorizeNode::Region r = region("reads", t, e->indices, p, i->indices);
    for (auto& [known, kr] : inputs_) {
      if (!known.same_tensor(p)) continue;
      bool same = Tensor(kr.tensor).same_tensor(t) && kr.dims == r.dims;
      for (size_t d = 0; same && d < r.base.size(); ++d) same = ana_.can_prove(kr.base[d] == r.base[d]);
      if (!same)
        mismatch(ee, ie, "the intrinsic reads '" + p.name() + "' in two places that the stage reads differently");
      return;
    }
    inputs_.emplace_back(p, r);
  }

  Affine affine(const Expr& index, const std::string& what) {
    Affine a;
    Expr e = ana_.simplify(index);
    VarMap zero;
    for (const Var& v : axes_) zero[v.node()] = make_const(v.dtype(), int64_t{0});
    a.base = ana_.simplify(substitute(e, zero));
    Expr rebuilt = a.base;
    for (const Var& v : axes_) {
      VarMap unit = zero;
      unit[v.node()] = make_const(v.dtype(), int64_t{1});
      Expr c = ana_.simplify(substitute(e, unit) - a.base);
      const int64_t* k = as_const_int(c);
      if (!k) fail("the index `" + to_string(index) + "` of " + what + " is not affine in the tensorized loops");
      a.coef.push_back(*k);
      if (*k != 0) rebuilt = rebuilt + cast(e.dtype(), v) * make_const(e.dtype(), *k);
    }
    if (!is_zero(ana_.simplify(e - rebuilt)))
      fail("the index `" + to_string(index) + "` of " + what + " is not affine in the tensorized loops");
    return a;
  }

  // The region of `t` (read or written at `idx`) bound to the intrinsic's
  // operand `p` (accessed at `f`): each dimension of p that moves with the
  // intrinsic's axes runs along the one dimension of t that moves the same
  // way; t's other dimensions stay put.
  TensorizeNode::Region region(const char* verb, const Tensor& t, const std::vector<Expr>& idx, const Tensor& p,
                               const std::vector<Expr>& f) {
    std::vector<Affine> ta, pa;
    for (size_t d = 0; d < idx.size(); ++d)
      ta.push_back(affine(idx[d], "'" + t.name() + "' (dimension " + std::to_string(d) + ")"));
    for (size_t d = 0; d < f.size(); ++d)
      pa.push_back(affine(f[d], "the intrinsic's '" + p.name() + "' (dimension " + std::to_string(d) + ")"));
    auto pattern = [&](const std::vector<Affine>& as) {
      std::string s = "[";
      for (size_t d = 0; d < as.size(); ++d) s += (d ? ", " : "") + coef_text(as[d].coef, axes_);
      return s + "]";
    };
    auto differs = [&](const std::string& why) {
      fail("the stage " + std::string(verb) + " '" + t.name() + "' with the index pattern " + pattern(ta) +
           " where the intrinsic's '" + p.name() + "' has " + pattern(pa) + " (in the intrinsic's axes): " + why);
    };
    TensorizeNode::Region r;
    r.tensor = t;
    for (const Affine& a : ta) r.base.push_back(a.base);
    std::vector<bool> used(ta.size(), false);
    const std::vector<Expr> shape = p.shape();
    for (size_t d = 0; d < pa.size(); ++d) {
      if (!pa[d].moves()) {
        if (*as_const_int(shape[d]) != 1 || !is_zero(pa[d].base))
          differs("the intrinsic's dimension " + std::to_string(d) + " does not move with its axes");
        r.dims.push_back(-1);
        continue;
      }
      int found = -1;
      for (size_t k = 0; k < ta.size(); ++k)
        if (ta[k].coef == pa[d].coef) {
          if (found >= 0) differs("two dimensions of '" + t.name() + "' move alike");
          found = static_cast<int>(k);
        }
      if (found < 0)
        differs("no dimension of '" + t.name() + "' moves as the intrinsic's dimension " + std::to_string(d) + " (" +
                coef_text(pa[d].coef, axes_) + ")");
      used[found] = true;
      r.base[found] = ana_.simplify(ta[found].base - cast(ta[found].base.dtype(), pa[d].base));
      r.dims.push_back(found);
    }
    for (size_t k = 0; k < ta.size(); ++k)
      if (ta[k].moves() && !used[k])
        differs("dimension " + std::to_string(k) + " of '" + t.name() + "' moves (" + coef_text(ta[k].coef, axes_) +
                ") along no dimension of the intrinsic's");
    return r;
  }

  TensorIntrin intrin_;
  Analyzer& ana_;
  std::string where_;
  std::vector<Var> axes_;  // the intrinsic's axes, then its reduction axes
  std::vector<std::pair<Tensor, TensorizeNode::Region>> inputs_;
};

std::string loops_text(const std::vector<std::pair<std::string, int64_t>>& loops) {
  std::string s = "[";
  for (size_t k = 0; k < loops.size(); ++k)
    s += (k ? ", " : "") + loops[k].first + " (" + std::to_string(loops[k].second) + ")";
  return s + "]";
}

}  // namespace

Expr guard_outside(const StageNode* s, int pos, const StageBounds& bounds, const Expr& cond, Analyzer& ana) {
  auto* lt = cond.as<LTNode>();
  if (!lt) return Expr();
  const Expr lhs = ana.simplify(lt->a);
  const auto& leaves = s->leaf_iter_vars;
  VarMap zero;
  for (size_t l = static_cast<size_t>(pos); l < leaves.size(); ++l)
    zero[leaves[l]->var.node()] = make_const(leaves[l]->var.dtype(), int64_t{0});
  const Expr rest = ana.simplify(substitute(lhs, zero));
  int64_t block = 1;  // F: one more than the inner part's largest value
  Expr rebuilt = rest;
  for (size_t l = static_cast<size_t>(pos); l < leaves.size(); ++l) {
    const Var& v = leaves[l]->var;
    VarMap unit = zero;
    unit[v.node()] = make_const(v.dtype(), int64_t{1});
    int64_t c = 0, e = 0, m = 0;
    if (!as_const_int(ana.simplify(substitute(lhs, unit) - rest), &c) || c < 0) return Expr();
    if (c == 0) continue;
    if (!as_const_int(ana.simplify(loop_range(bounds, leaves[l]).extent), &e) ||
        !as_const_int(ana.simplify(loop_range(bounds, leaves[l]).min), &m) || m != 0)
      return Expr();
    block += c * (e - 1);
    rebuilt = rebuilt + cast(rest.dtype(), v) * make_const(rest.dtype(), c);
  }
  if (!is_zero(ana.simplify(lhs - rebuilt))) return Expr();  // not linear in the inner loops
  // A min or max of multiples is a multiple (the analyzer's modular sets do
  // not look through them).
  std::function<bool(const Expr&)> multiple = [&](const Expr& e) {
    if (auto* mn = e.as<MinNode>()) return multiple(mn->a) && multiple(mn->b);
    if (auto* mx = e.as<MaxNode>()) return multiple(mx->a) && multiple(mx->b);
    const ModularSet m = ana.modular_set(e);
    return m.coeff % block == 0 && m.base % block == 0;
  };
  if (!multiple(rest) || !multiple(lt->b)) return Expr();
  return rest < lt->b;
}

TensorizeMatch match_tensorize(const StageNode* s, int pos, const TensorIntrin& intrin, const StageBounds& bounds,
                               const VarMap& values, const Expr& body, Analyzer& ana) {
  Matcher m(s, pos, intrin, ana);
  const auto& leaves = s->leaf_iter_vars;
  const int n = static_cast<int>(leaves.size());
  auto* ic = intrin->output->op.as<ComputeOpNode>();
  auto* sc = s->op.as<ComputeOpNode>();
  internal_assert(ic && sc) << m.where();

  // The inner loops: plain, constant extents, each along one root axis (a
  // root axis may run along several, each matched to an axis of the
  // intrinsic: a k split into k steps and the elements of a step).
  std::vector<int> owner(static_cast<size_t>(n), -1);  // root index of each inner leaf
  std::vector<std::vector<int>> inner_of(s->root_iter_vars.size());
  std::vector<int64_t> extent(static_cast<size_t>(n), 0);
  for (int l = pos; l < n; ++l) {
    const IterVar& leaf = leaves[l];
    auto it = s->iter_attrs.find(leaf.get());
    if (it != s->iter_attrs.end() && (it->second.for_kind != ForKind::kSerial || !it->second.pragmas.empty()))
      m.fail("loop '" + leaf->var->name + "' below the tensorized axis is " +
             (it->second.for_kind != ForKind::kSerial ? std::string(for_kind_name(it->second.for_kind))
                                                      : std::string("annotated with a pragma")) +
             "; the intrinsic replaces these loops, so leave them plain");
    if (!as_const_int(ana.simplify(loop_range(bounds, leaf).extent), &extent[l]))
      m.fail("loop '" + leaf->var->name + "' below the tensorized axis has no constant extent");
    for (size_t r = 0; r < s->root_iter_vars.size(); ++r) {
      if (!uses_var(values.at(s->root_iter_vars[r]->var.node()), leaf->var.node())) continue;
      if (owner[l] >= 0)
        m.fail("loop '" + leaf->var->name + "' runs along both '" + s->root_iter_vars[owner[l]]->var->name +
               "' and '" + s->root_iter_vars[r]->var->name + "' (a fused loop); the intrinsic needs one loop per axis");
      owner[l] = static_cast<int>(r);
      inner_of[r].push_back(l);
    }
    if (owner[l] < 0) m.fail("loop '" + leaf->var->name + "' below the tensorized axis runs along no axis of the stage");
  }

  // Data-parallel and reduction loops, in root-axis order (and loop order
  // within an axis), against the intrinsic's axes and reduction axes.
  std::vector<int> data, reduce;
  for (size_t r = 0; r < s->root_iter_vars.size(); ++r) {
    auto& into = s->root_iter_vars[r]->iter_kind == IterKind::kReduce ? reduce : data;
    into.insert(into.end(), inner_of[r].begin(), inner_of[r].end());
  }
  auto described = [&](const std::vector<int>& ls) {
    std::vector<std::pair<std::string, int64_t>> v;
    for (int l : ls) v.emplace_back(leaves[l]->var->name, extent[l]);
    return loops_text(v);
  };
  auto declared = [&](const std::vector<IterVar>& ivs) {
    std::vector<std::pair<std::string, int64_t>> v;
    for (const IterVar& iv : ivs) v.emplace_back(iv->var->name, *as_const_int(iv->dom.extent));
    return loops_text(v);
  };
  auto same_shape = [&](const std::vector<int>& ls, const std::vector<IterVar>& ivs) {
    if (ls.size() != ivs.size()) return false;
    for (size_t k = 0; k < ls.size(); ++k)
      if (extent[ls[k]] != *as_const_int(ivs[k]->dom.extent)) return false;
    return true;
  };
  if (!same_shape(data, ic->axis) || !same_shape(reduce, ic->reduce_axis))
    m.fail("the loops below the tensorized axis run over " + described(data) + " and reduce over " +
           described(reduce) + ", but the intrinsic computes over " + declared(ic->axis) + " and reduces over " +
           declared(ic->reduce_axis));

  // Each inner loop variable becomes the intrinsic's axis (plus the loop's start).
  VarMap to_axes;
  for (size_t k = 0; k < data.size() + reduce.size(); ++k) {
    const int l = k < data.size() ? data[k] : reduce[k - data.size()];
    const Var& a = m.axes()[k];
    const Var& lv = leaves[l]->var;
    to_axes[lv.node()] = cast(lv.dtype(), a) + cast(lv.dtype(), loop_range(bounds, leaves[l]).min);
    ana.bind(a, Range(make_const(a.dtype(), int64_t{0}), make_const(a.dtype(), extent[l])));
  }
  const Expr e = substitute(body, to_axes);

  auto* er = e.as<ReduceNode>();
  auto* ir = ic->body.as<ReduceNode>();
  Expr condition;
  if (!er != !ir)
    m.fail(std::string("the stage ") + (er ? "reduces" : "does not reduce") + " but the intrinsic " +
           (ir ? "does" : "does not"));
  if (er) {
    if (er->combiner != ir->combiner)
      m.fail(std::string("the stage reduces with ") + combiner_name(er->combiner) + " where the intrinsic reduces with " +
             combiner_name(ir->combiner));
    const bool ec = er->condition.defined() && !is_one(er->condition);
    const bool icond = ir->condition.defined() && !is_one(ir->condition);
    if (icond) m.fail("the intrinsic's reduction has a condition; declare it over whole tiles");
    if (ec) {
      condition = ana.simplify(er->condition);  // k.outer*4 + k.inner over 4 is k.outer
      for (size_t k = 0; k < m.axes().size(); ++k)
        if (uses_var(condition, m.axes()[k].node())) {
          const int l = k < data.size() ? data[k] : reduce[k - data.size()];
          m.fail("the reduction's condition `" + to_string(body.as<ReduceNode>()->condition) + "` depends on loop '" +
                 leaves[l]->var->name +
                 "' below the tensorized axis; a condition can only skip whole calls, so it may read the loops "
                 "outside the axis alone");
        }
    }
    if (er->dtype != ir->dtype) m.fail("the stage reduces in " + er->dtype.str() + " where the intrinsic reduces in " + ir->dtype.str());
    m.match(er->source, ir->source);
  } else {
    m.match(e, ic->body);
  }
  TensorizeMatch out;
  out.inputs = m.input_regions();
  std::vector<Expr> idx;
  for (const IterVar& iv : sc->axis) idx.push_back(substitute(values.at(iv->var.node()), to_axes));
  out.output = m.output_region(Tensor(s->op), idx);
  out.condition = condition;
  for (const Var& a : m.axes()) ana.unbind(a);
  return out;
}

}  // namespace kiln
