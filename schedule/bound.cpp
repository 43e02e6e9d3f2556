#include "schedule/bound.h"

#include <unordered_set>

#include "compute/analyzer.h"
#include "base/error.h"
#include "compute/ir_functor.h"
#include "compute/simplify.h"
#include "compute/expr_ops.h"
#include "schedule/interval.h"

namespace kiln {

namespace {

const ComputeOpNode* compute_of(const StageNode* s) { return s->op.as<ComputeOpNode>(); }

int leaf_pos(const StageNode* s, const IterVar& iv) {
  for (size_t i = 0; i < s->leaf_iter_vars.size(); ++i)
    if (s->leaf_iter_vars[i] == iv) return static_cast<int>(i);
  return -1;
}

// Replaces reads of inlined stages by their (already inlined) bodies.
class InlineReads : public IRMutator {
 public:
  InlineReads(const Schedule& sch, const BoundMap& bm) : sch_(sch), bm_(bm) {}
  using IRMutator::mutate;

 protected:
  Expr mutate_TensorRead(const TensorReadNode* op, const Expr& self) override {
    Expr r = IRMutator::mutate_TensorRead(op, self);
    if (!sch_.has_stage(op->tensor->op)) return r;
    StageNode* s = sch_[op->tensor->op].node();
    if (s->attach_type != AttachType::kInline) return r;
    auto* c = compute_of(s);
    auto* read = r.as<TensorReadNode>();
    VarMap vmap;
    for (size_t d = 0; d < c->axis.size(); ++d) vmap[c->axis[d]->var.node()] = read->indices[d];
    return substitute(bm_.at(s).body, vmap);
  }

 private:
  const Schedule& sch_;
  const BoundMap& bm_;
};

// Collects the index tuples with which `body` reads the stage `target`.
std::vector<std::vector<Expr>> reads_of(const Expr& body, const Schedule& sch, const StageNode* target) {
  std::vector<std::vector<Expr>> out;
  post_order_visit(body, [&](const Ref<Object>& n) {
    if (n->kind() != NodeKind::TensorRead) return;
    auto* r = static_cast<const TensorReadNode*>(n.get());
    if (sch.has_stage(r->tensor->op) && sch[r->tensor->op].node() == target) out.push_back(r->indices);
  });
  return out;
}

Expr range_max(const Range& r) { return r.min + r.extent - 1; }

// An index with floor division and modulo by the same constant, simplified
// first: a consumer whose axes were fused reads (f / c) * c + f % c, which
// is f, where an interval of each part separately would cover whole rows
// of c (a looser region than the loop reads).
Expr recombine_div_mod(const Expr& index) {
  bool div_mod = false;
  post_order_visit(index, [&](const Ref<Object>& n) {
    div_mod |= n->kind() == NodeKind::FloorDiv || n->kind() == NodeKind::FloorMod;
  });
  return div_mod ? simplify(index) : index;
}

// Whether the enclosing loop `iv` of `stage` is relaxed for a stage stored
// in `scope`: thread axes for shared memory, thread and block axes for
// global memory; nothing for local memory (one thread's own region) or
// warp memory (a warp's fragments, computed outside the lane loops).

bool relaxed_for_scope(const StageNode* stage, const IterVar& iv, MemScope scope) {
  auto it = stage->iter_attrs.find(iv.get());
  if (it == stage->iter_attrs.end() || it->second.for_kind != ForKind::kThreadBinding) return false;
  const std::string& tag = it->second.thread_tag;
  const bool thread = tag.rfind("threadIdx.", 0) == 0;
  if (scope == MemScope::kShared) return thread;
  return scope == MemScope::kGlobal;
}

void pass_down_domains(const StageNode* s, Analyzer* ana, StageBounds* b) {
  for (auto& rel : s->relations) {
    if (rel.kind == IterVarRelation::kSplit) {
      const Range& p = b->dom.at(rel.parent.get());
      const DType t = rel.parent->var->dtype;  // the halves' type too (see Stage::split)
      Expr e = cast(t, p.extent);
      const int64_t* ce = as_const_int(e);
      Expr inner_ext, outer_ext;
      if (rel.factor > 0) {
        int64_t f = (ce && *ce < rel.factor) ? *ce : rel.factor;
        inner_ext = make_const(t, f);
        outer_ext = ana->simplify(floordiv(e + make_const(t, f - 1), make_const(t, f)));
      } else {
        int64_t n = (ce && *ce < rel.nparts) ? *ce : rel.nparts;
        outer_ext = make_const(t, n);
        inner_ext = ana->simplify(floordiv(e + make_const(t, n - 1), make_const(t, n)));
      }
      b->dom[rel.outer.get()] = Range(make_zero(t), outer_ext);
      b->dom[rel.inner.get()] = Range(make_zero(t), inner_ext);
      ana->bind(rel.outer->var, b->dom[rel.outer.get()]);
      ana->bind(rel.inner->var, b->dom[rel.inner.get()]);
    } else {
      const Range& o = b->dom.at(rel.outer.get());
      const Range& i = b->dom.at(rel.inner.get());
      const DType t = rel.fused->var->dtype;  // i64 when the product can reach 2^31 (see Stage::fuse)
      b->dom[rel.fused.get()] = Range(make_zero(t), ana->simplify(cast(t, o.extent) * cast(t, i.extent)));
      ana->bind(rel.fused->var, b->dom[rel.fused.get()]);
    }
  }
}

// Attach chain sanity: no cycles, no inline targets.
void check_attach_chain(const StageNode* s) {
  std::unordered_set<const StageNode*> seen{s};
  for (const StageNode* p = s; p->attach_type == AttachType::kScope; p = p->attach_stage) {
    const StageNode* parent = p->attach_stage;
    user_check(parent->attach_type != AttachType::kInline)
        << "compute_at: '" << p->op->name << "' is computed at '" << parent->op->name
        << "', which is inlined and has no loops";
    user_check(seen.insert(parent).second) << "compute_at: stages '" << s->op->name << "' and '" << parent->op->name
                                           << "' are computed at each other (a cycle)";
  }
}

}  // namespace

std::vector<std::pair<const StageNode*, int>> enclosing_loops(const StageNode* s) {
  if (s->attach_type != AttachType::kScope) return {};
  auto out = enclosing_loops(s->attach_stage);
  int pos = leaf_pos(s->attach_stage, s->attach_ivar);
  user_check(pos >= 0) << "compute_at: axis '" << s->attach_ivar->var->name << "' is no longer a leaf of stage '"
                       << s->attach_stage->op->name << "' (it was split or fused after compute_at)";
  for (int i = 0; i <= pos; ++i) out.emplace_back(s->attach_stage, i);
  return out;
}

Range loop_range(const StageBounds& b, const IterVar& leaf) { return Range(0, b.dom.at(leaf.get()).extent); }

namespace {

// A consumer's index (over its root axes) in its leaf loops, one relation
// at a time from the roots down, each fuse's floor division and modulo
// recombined as soon as it appears: axes fused in two levels, as (n, (h,
// w)), read n * HW + h * W + w, which is the fused loop once the inner
// pair has recombined; substituted all at once (iter_var_values), the
// simplifier first splits the pairs' operands apart, and the region covers
// whole images instead of the rows the loop reads.
Expr index_over_leaves(const Expr& index, const StageNode* s, const StageBounds& b) {
  Expr e = index;
  for (const IterVarRelation& rel : s->relations) {
    VarMap step;
    if (rel.kind == IterVarRelation::kSplit) {
      const Range& p = b.dom.at(rel.parent.get());
      step[rel.parent->var.node()] = rel.outer->var * b.dom.at(rel.inner.get()).extent + rel.inner->var + p.min;
      e = substitute(e, step);
    } else {
      const Range& o = b.dom.at(rel.outer.get());
      const Range& i = b.dom.at(rel.inner.get());
      const Var& fused = rel.fused->var;
      step[rel.outer->var.node()] = cast(rel.outer->var->dtype, floordiv(fused, i.extent) + o.min);
      step[rel.inner->var.node()] = cast(rel.inner->var->dtype, floormod(fused, i.extent) + i.min);
      e = recombine_div_mod(substitute(e, step));
    }
  }
  VarMap offsets;
  for (const IterVar& iv : s->leaf_iter_vars) {
    const Expr& mn = b.dom.at(iv.get()).min;
    if (!is_zero(mn)) offsets[iv->var.node()] = iv->var + mn;
  }
  return recombine_div_mod(offsets.empty() ? e : substitute(e, offsets));
}

}  // namespace

VarMap iter_var_values(const StageNode* s, const StageBounds& b) {
  VarMap v;
  // Every loop runs from 0; a root axis that is itself a leaf is offset by
  // its range's min.
  for (auto& iv : s->leaf_iter_vars) {
    const Expr& mn = b.dom.at(iv.get()).min;
    v[iv->var.node()] = is_zero(mn) ? Expr(iv->var) : iv->var + mn;
  }
  for (auto it = s->relations.rbegin(); it != s->relations.rend(); ++it) {
    if (it->kind == IterVarRelation::kSplit) {
      const Range& p = b.dom.at(it->parent.get());
      Expr inner_ext = b.dom.at(it->inner.get()).extent;
      v[it->parent->var.node()] = v.at(it->outer->var.node()) * inner_ext + v.at(it->inner->var.node()) + p.min;
    } else {
      // A fused i64 axis gives its (narrower) parts values in their own type;
      // they are below the parts' extents, so the cast is exact.
      Expr fused = v.at(it->fused->var.node());
      const Range& o = b.dom.at(it->outer.get());
      const Range& i = b.dom.at(it->inner.get());
      v[it->outer->var.node()] = cast(it->outer->var->dtype, floordiv(fused, i.extent) + o.min);
      v[it->inner->var.node()] = cast(it->inner->var->dtype, floormod(fused, i.extent) + i.min);
    }
  }
  return v;
}

BoundMap infer_bounds(const Schedule& sch) {
  BoundMap bm;
  std::vector<Stage> stages = sch.stages();
  // Effective bodies (inlining), producers first.
  for (auto& st : stages) {
    StageNode* s = st.node();
    StageBounds& b = bm.stages[s];
    if (auto* c = compute_of(s)) b.body = InlineReads(sch, bm).mutate(c->body);
    if (s->attach_type == AttachType::kScope) check_attach_chain(s);
  }
  // Consumers first: a stage's region comes from the loops of its readers.
  for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
    StageNode* s = it->node();
    if (s->is_placeholder || s->attach_type == AttachType::kInline) continue;
    StageBounds& b = bm.stages[s];
    auto* c = compute_of(s);
    std::vector<Expr> shape = s->op->output_shape();
    size_t nd = shape.size();

    // Loops (var nodes) that enclose this stage: fixed while relaxing readers.
    // On a GPU a stage's storage is shared by more than the loop instance it
    // is computed in: a shared-memory stage holds what the whole block needs
    // (thread axes relaxed), a global one what the whole grid needs.
    std::unordered_set<const VarNode*> fixed;
    for (auto& [stage, pos] : enclosing_loops(s)) {
      const IterVar& iv = stage->leaf_iter_vars[pos];
      if (!relaxed_for_scope(stage, iv, s->scope)) fixed.insert(iv->var.node());
    }

    std::vector<Interval> region(nd);
    std::vector<bool> touched(nd, false);
    bool any_consumer = false;
    if (!s->is_output) {
      for (auto& other : stages) {
        StageNode* cs = other.node();
        if (cs == s || cs->is_placeholder || cs->attach_type == AttachType::kInline) continue;
        auto reads = reads_of(bm.stages[cs].body, sch, s);
        if (reads.empty()) continue;
        any_consumer = true;
        if (s->attach_type == AttachType::kScope) {
          // The consumer must run inside the loop this stage is attached to.
          bool inside = false;
          for (auto& [stage, pos] : enclosing_loops(cs))
            inside |= stage == s->attach_stage && pos >= leaf_pos(s->attach_stage, s->attach_ivar);
          inside |= cs == s->attach_stage;
          user_check(inside) << "compute_at: '" << s->op->name << "' is computed at loop '" << s->attach_ivar->var->name
                             << "' of '" << s->attach_stage->op->name << "', but its consumer '" << cs->op->name
                             << "' is computed outside that loop";
        }
        const StageBounds& cb = bm.stages.at(cs);
        // Every leaf of the consumer and of the stages it is attached in,
        // except the loops enclosing this stage, ranges over its domain.
        std::unordered_map<const VarNode*, Range> relaxed;
        auto add_leaves = [&](const StageNode* st) {
          const StageBounds& sb = bm.stages.at(st);
          for (auto& iv : st->leaf_iter_vars)
            if (!fixed.count(iv->var.node())) relaxed[iv->var.node()] = loop_range(sb, iv);
        };
        add_leaves(cs);
        for (const StageNode* p = cs; p->attach_type == AttachType::kScope; p = p->attach_stage)
          add_leaves(p->attach_stage);
        VarIntervalFn lookup = [&](const VarNode* v, Interval* out) {
          auto r = relaxed.find(v);
          if (r == relaxed.end()) return false;
          *out = Interval{r->second.min, range_max(r->second)};
          return true;
        };
        for (auto& idx : reads) {
          for (size_t d = 0; d < nd; ++d) {
            Interval iv = eval_interval(index_over_leaves(idx[d], cs, cb), lookup);
            region[d] = touched[d] ? interval_union(region[d], iv) : iv;
            touched[d] = true;
          }
        }
      }
      user_check(any_consumer || s->is_output)
          << "stage '" << s->op->name << "' is not read by any stage of the schedule";
    }

    Analyzer ana;
    for (auto& [stage, pos] : enclosing_loops(s)) {
      const IterVar& iv = stage->leaf_iter_vars[pos];
      ana.bind(iv->var, loop_range(bm.stages.at(stage), iv));
    }
    b.realize.clear();
    for (size_t d = 0; d < nd; ++d) {
      Expr full_ext = shape[d];
      Range full(make_zero(DType::i32()), full_ext);
      Range r = full;
      Range storage = full;
      if (touched[d] && region[d].bounded()) {
        Expr lo = ana.simplify(region[d].min), hi = ana.simplify(region[d].max);
        Expr extent = ana.simplify(hi - lo + 1);
        // Never compute outside the tensor's own domain. Clamping only
        // shrinks the region, so the unclamped extent bounds the storage.
        bool clamp_lo = !ana.can_prove(lo >= 0), clamp_hi = !ana.can_prove(hi <= full_ext - 1);
        Expr lo_c = clamp_lo ? ana.simplify(max(lo, 0)) : lo;
        Expr ext_c = extent;
        if (clamp_lo)
          ext_c = ana.simplify(min(hi, full_ext - 1) - lo_c + 1);
        else if (clamp_hi)
          ext_c = ana.simplify(min(extent, full_ext - lo));
        int64_t cap = *as_const_int(full_ext);
        auto bound = ana.const_int_bound(extent);
        if (bound.max_value < ConstIntBound::kPosInf) {
          r = Range(lo_c, ext_c);
          storage = Range(lo_c, make_const(DType::i32(), std::max<int64_t>(1, std::min(bound.max_value, cap))));
        }
      }
      b.realize.push_back(storage);
      if (c) b.dom[c->axis[d].get()] = r;
    }
    if (c)
      for (auto& iv : c->reduce_axis) b.dom[iv.get()] = iv->dom;
    for (auto& iv : s->root_iter_vars) ana.bind(iv->var, b.dom.at(iv.get()));
    pass_down_domains(s, &ana, &b);
  }
  return bm;
}

}  // namespace kiln
