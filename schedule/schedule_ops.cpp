#include "schedule/schedule_ops.h"

#include <algorithm>
#include <map>

#include "compute/analyzer.h"
#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/printer.h"
#include "schedule/passes/storage_flatten.h"
#include "schedule/tensorize.h"

namespace kiln {

namespace {

const ComputeOpNode* compute_of(const StageNode* s) { return s->op.as<ComputeOpNode>(); }

// Points every tensor read at the current op of its stage (reads may still
// name an op that cache_read/cache_write/rfactor replaced).
class CanonicalizeReads : public IRMutator {
 public:
  explicit CanonicalizeReads(const Schedule& sch) : sch_(sch) {}
  using IRMutator::mutate;

 protected:
  Expr mutate_TensorRead(const TensorReadNode* op, const Expr& self) override {
    Expr r = IRMutator::mutate_TensorRead(op, self);
    if (!sch_.has_stage(op->tensor->op)) return r;
    const Operation& cur = sch_[op->tensor->op]->op;
    if (cur == op->tensor->op) return r;
    return TensorReadNode::make(Tensor(cur), r.as<TensorReadNode>()->indices);
  }

 private:
  const Schedule& sch_;
};

struct Guard {
  Expr cond;
  int level;  // deepest leaf position it mentions; -1 for none
  bool uses_reduce_leaf;
};

class NestBuilder {
 public:
  NestBuilder(const Schedule& sch, const BoundMap& bm) : sch_(sch), bm_(bm) {
    for (auto& st : sch.stages()) {
      StageNode* s = st.node();
      if (s->attach_type == AttachType::kScope) {
        int pos = -1;
        for (size_t i = 0; i < s->attach_stage->leaf_iter_vars.size(); ++i)
          if (s->attach_stage->leaf_iter_vars[i] == s->attach_ivar) pos = static_cast<int>(i);
        attached_[{s->attach_stage, pos}].push_back(s);
      }
    }
  }

  // The stage's loop nest, with its attached children inside, not realized;
  // marked when its stores stream (Stage::stream_stores).
  Stmt build(const StageNode* s) {
    Stmt nest = build_loops(s);
    if (!s->stream_stores) return nest;
    return AttrStmtNode::make(Tensor(s->op), attr::kStreamStores, Expr(1), nest);
  }

  Stmt build_loops(const StageNode* s) {
    const StageBounds& b = bm_.at(s);
    auto* c = compute_of(s);
    internal_assert(c) << s->op->name;
    VarMap values = iter_var_values(s, b);
    const auto& leaves = s->leaf_iter_vars;
    int n = static_cast<int>(leaves.size());

    Analyzer ana;
    for (auto& [stage, pos] : enclosing_loops(s)) {
      const IterVar& iv = stage->leaf_iter_vars[pos];
      ana.bind(iv->var, loop_range(bm_.at(stage), iv));
    }
    for (auto& iv : leaves) ana.bind(iv->var, loop_range(b, iv));

    // Guards: every root axis and every split parent must stay in its range.
    std::vector<Guard> guards;
    auto add_guard = [&](const IterVar& iv) {
      const Range& r = b.dom.at(iv.get());
      const Expr raw_offset = values.at(iv->var.node()) - r.min;
      Expr offset = ana.simplify(raw_offset);
      Expr cond = ana.simplify(offset < r.extent);
      if (is_one(cond) || ana.can_prove(cond)) return;
      Guard g{cond, -1, false};
      for (int i = 0; i < n; ++i)
        if (uses_var(cond, leaves[i]->var.node())) {
          g.level = i;
          g.uses_reduce_leaf |= leaves[i]->iter_kind == IterKind::kReduce;
        }
      // A condition simplified down to no leaf at all (its axis' loop runs
      // at most once, so the analyzer replaced the loop var by 0) stays inside
      // that loop: outside, it would also skip the stages computed at this
      // one's loops, which on a GPU are filled by every thread of the block.
      if (g.level < 0)
        for (int i = 0; i < n; ++i)
          if (uses_var(raw_offset, leaves[i]->var.node())) {
            g.level = i;
            g.uses_reduce_leaf |= leaves[i]->iter_kind == IterKind::kReduce;
          }
      guards.push_back(g);
    };
    for (auto& iv : s->root_iter_vars) add_guard(iv);
    for (auto& rel : s->relations)
      if (rel.kind == IterVarRelation::kSplit && !is_root(s, rel.parent)) add_guard(rel.parent);
    // On a GPU the stages computed at this one's loops may be filled by every
    // thread of the block together (shared memory), so no guard of this
    // stage, which may depend on the thread index, may enclose them: guards
    // go inside the deepest loop a stage is attached at.
    if (on_gpu(s)) {
      int floor = -1;
      for (auto& [key, children] : attached_)
        if (key.first == s) floor = std::max(floor, key.second);
      for (auto& g : guards) g.level = std::max(g.level, floor);
    }

    // The computation.
    Tensor self(s->op);
    std::vector<Expr> idx;
    for (auto& iv : c->axis) idx.push_back(values.at(iv->var.node()));
    Expr body = CanonicalizeReads(sch_).mutate(substitute(b.body, values));
    const int tensorized = tensorized_leaf(s);
    if (tensorized >= 0) return build_tensorized(s, body, values, guards, tensorized, ana);
    if (auto* red = body.as<ReduceNode>()) {
      const int across = thread_reduce_leaf(s);
      if (across >= 0) return build_cross_thread(s, red, self, idx, guards, across, ana);
    }
    Stmt update, init;
    int first_reduce = n;
    if (auto* red = body.as<ReduceNode>()) {
      Expr acc = combiner_apply(red->combiner, self(idx), red->source);
      update = ProvideNode::make(self, acc, idx);
      if (red->condition.defined() && !is_one(red->condition)) update = IfThenElseNode::make(red->condition, update);
      init = ProvideNode::make(self, combiner_identity(red->combiner, red->dtype), idx);
      for (int i = 0; i < n; ++i)
        if (leaves[i]->iter_kind == IterKind::kReduce) {
          first_reduce = i;
          break;
        }
    } else {
      update = ProvideNode::make(self, body, idx);
    }

    // Init nest: the data-parallel leaves after the first reduction leaf.
    if (init.defined()) {
      for (int i = n - 1; i > first_reduce; --i) {
        if (leaves[i]->iter_kind == IterKind::kReduce) continue;
        init = wrap_guards(init, guards, i, /*data_par_only=*/true);
        init = make_loop(s, leaves[i], init);
      }
    }

    Stmt stmt = update;
    for (int i = n - 1; i >= 0; --i) {
      stmt = wrap_guards(stmt, guards, i, false);
      stmt = inject_attached(s, i, stmt);
      stmt = make_loop(s, leaves[i], stmt);
      if (i == first_reduce) stmt = SeqNode::make({init, stmt});
    }
    stmt = wrap_guards(stmt, guards, -1, false);
    return stmt;
  }

  // The position of the stage's tensorized leaf, or -1.
  static int tensorized_leaf(const StageNode* s) {
    int pos = -1;
    for (auto& [iv, attr] : s->iter_attrs) {
      if (!attr.tensor_intrin) continue;
      for (size_t i = 0; i < s->leaf_iter_vars.size(); ++i)
        if (s->leaf_iter_vars[i].get() == iv) pos = static_cast<int>(i);
      user_check(pos >= 0) << "stage '" << s->op->name << "' is tensorized at axis '" << iv->var->name
                           << "', which was split or fused afterwards: tensorize a leaf axis of the final loop nest";
    }
    return pos;
  }

  // The nest of a stage tensorized at leaf `pos`: its loops outside `pos`,
  // around the intrinsic's body, or, when reduction loops also run outside
  // `pos`, its update, with its reset where the reduction's init goes.
  Stmt build_tensorized(const StageNode* s, const Expr& body, const VarMap& values, const std::vector<Guard>& guards,
                        int pos, Analyzer& ana) {
    const auto& leaves = s->leaf_iter_vars;
    const int n = static_cast<int>(leaves.size());
    const TensorIntrin& intrin = s->iter_attrs.at(leaves[pos].get()).tensor_intrin;
    const std::string where =
        "tensorize(stage '" + s->op->name + "' at '" + leaves[pos]->var->name + "', intrinsic '" + intrin->name + "')";
    // A guard on the inner loops that holds for whole blocks of the
    // intrinsic or none moves outside them; any other is a tail.
    std::vector<Guard> outer_guards = guards;
    for (auto& g : outer_guards) {
      if (g.level < pos) continue;
      const Expr moved = guard_outside(s, pos, bm_.at(s), g.cond, ana);
      user_check(moved.defined()) << where << ": the loops below the tensorized axis have a tail (the guard `"
                                  << to_string(g.cond) << "`); a tensorized nest covers whole tiles, so choose "
                                  << "factors that divide the axes";
      g.cond = moved;
      g.level = -1;
      g.uses_reduce_leaf = false;
      for (int i = 0; i < pos; ++i)
        if (uses_var(moved, leaves[i]->var.node())) {
          g.level = i;
          g.uses_reduce_leaf |= leaves[i]->iter_kind == IterKind::kReduce;
        }
    }
    for (auto& [key, children] : attached_)
      user_check(key.first != s || key.second < pos)
          << where << ": stage '" << children.front()->op->name << "' is computed at loop '"
          << leaves[key.second]->var->name << "', inside the tensorized loops";
    user_check(thread_reduce_leaf(s) < 0) << where << ": a reduction across threads cannot be tensorized";
    const TensorizeMatch m = match_tensorize(s, pos, intrin, bm_.at(s), values, body, ana);
    std::vector<TensorizeNode::Region> operands = m.inputs;
    operands.push_back(m.output);

    // The reduction is split into steps when a reduction loop of more than
    // one iteration runs outside the tensorized axis; loops of one
    // iteration (a 1x1 kernel's taps) leave the whole reduction to the call.
    int first_reduce = n;
    for (int i = 0; i < n; ++i) {
      int64_t e = 0;
      const bool single = as_const_int(ana.simplify(loop_range(bm_.at(s), leaves[i]).extent), &e) && e == 1;
      if (leaves[i]->iter_kind == IterKind::kReduce && !(i < pos && single)) {
        first_reduce = i;
        break;
      }
    }
    const bool split = first_reduce < pos;
    Stmt init;
    if (split) {
      user_check(intrin->lowering.reset && intrin->lowering.update)
          << where << ": reduction loop '" << leaves[first_reduce]->var->name
          << "' runs outside the tensorized axis, so the reduction is split into steps, but the intrinsic has no "
          << "reset and update lowerings (only a body): put every reduction loop below the tensorized axis";
      init = TensorizeNode::make(intrin, IntrinPhase::kReset, {m.output});
      for (int i = pos - 1; i > first_reduce; --i) {
        if (leaves[i]->iter_kind == IterKind::kReduce) continue;
        init = wrap_guards(init, outer_guards, i, /*data_par_only=*/true);
        init = make_loop(s, leaves[i], init);
      }
    }
    Stmt stmt = TensorizeNode::make(intrin, split ? IntrinPhase::kUpdate : IntrinPhase::kBody, operands);
    if (m.condition.defined()) {
      // A skipped update leaves the sum as it is; a skipped body (the
      // whole reduction in one call) must still leave the identity.
      user_check(split || intrin->lowering.reset)
          << where << ": the reduction has a condition (`" << to_string(m.condition)
          << "`) and the intrinsic has no reset lowering to give the skipped calls' result";
      stmt =
          split ? IfThenElseNode::make(m.condition, stmt)
                : IfThenElseNode::make(m.condition, stmt, TensorizeNode::make(intrin, IntrinPhase::kReset, {m.output}));
    }
    for (int i = pos - 1; i >= 0; --i) {
      stmt = wrap_guards(stmt, outer_guards, i, false);
      stmt = inject_attached(s, i, stmt);
      stmt = make_loop(s, leaves[i], stmt);
      if (i == first_reduce) stmt = SeqNode::make({init, stmt});
    }
    return wrap_guards(stmt, outer_guards, -1, false);
  }

  // The position of the stage's reduction leaf bound to a thread index, or
  // -1 (Stage::bind allows at most one).
  static int thread_reduce_leaf(const StageNode* s) {
    for (size_t i = 0; i < s->leaf_iter_vars.size(); ++i) {
      const IterVar& iv = s->leaf_iter_vars[i];
      auto it = s->iter_attrs.find(iv.get());
      if (iv->iter_kind == IterKind::kReduce && it != s->iter_attrs.end() &&
          it->second.for_kind == ForKind::kThreadBinding)
        return static_cast<int>(i);
    }
    return -1;
  }

  // A reduction with its leaf `across` bound to a thread index (TVM's
  // cross-thread reduction). Each thread folds its share (the other
  // reduction leaves) into a local partial value, the threads of the group
  // combine their partials (ThreadAllReduce, which every thread of the block
  // must reach: no guard encloses it, the guards only select what a thread
  // contributes), and the result is stored: by every thread into its own
  // copy of a local stage, by the group's first thread otherwise.
  //   for (data-parallel leaves and `across`, in leaf order)
  //     partial = identity
  //     for (the other reduction leaves) if (guards) partial = partial (+) source
  //     result = allreduce(partial)
  //     if (data-parallel guards [&& across == first]) self[idx] = result
  Stmt build_cross_thread(const StageNode* s, const ReduceNode* red, const Tensor& self, const std::vector<Expr>& idx,
                          const std::vector<Guard>& guards, int across, Analyzer& ana) {
    const auto& leaves = s->leaf_iter_vars;
    const int n = static_cast<int>(leaves.size());
    // Every thread of the block runs every loop the same number of times: a
    // loop whose extent varies (a tail clamped to the tensor) runs to its
    // largest extent, and its iterations past the real one only select.
    std::vector<Expr> extents(n);
    std::vector<Expr> past_end(n);
    for (int i = 0; i < n; ++i) {
      extents[i] = loop_range(bm_.at(s), leaves[i]).extent;
      if (as_const_int(extents[i])) continue;
      const ConstIntBound b = ana.const_int_bound(extents[i]);
      user_check(b.max_value < ConstIntBound::kPosInf)
          << "stage '" << s->op->name << "' reduces across threads inside loop '" << leaves[i]->var->name
          << "', whose extent " << to_string(extents[i]) << " has no constant upper bound";
      past_end[i] = leaves[i]->var < cast(leaves[i]->var->dtype, extents[i]);
      extents[i] = make_const(extents[i].dtype(), b.max_value);
    }
    const DType t = red->dtype;
    const Expr zero = make_const(DType::i32(), int64_t{0});
    Var partial = Var::handle(s->op->name + ".partial", t);
    Var result = Var::handle(s->op->name + ".result", t);

    Expr counted = red->condition.defined() && !is_one(red->condition) ? red->condition : Expr();
    Expr stored;
    auto conj = [](const Expr& a, const Expr& b) { return !a.defined() ? b : (!b.defined() ? a : a && b); };
    for (auto& g : guards) {
      counted = conj(counted, g.cond);
      if (!g.uses_reduce_leaf) stored = conj(stored, g.cond);
    }
    auto serial = [&](int i) { return leaves[i]->iter_kind == IterKind::kReduce && i != across; };
    for (int i = 0; i < n; ++i) {
      if (!past_end[i].defined()) continue;
      counted = conj(counted, past_end[i]);
      if (!serial(i)) stored = conj(stored, past_end[i]);
    }
    Stmt update = StoreNode::make(partial, combiner_apply(red->combiner, LoadNode::make(t, partial, zero), red->source),
                                  zero);
    if (counted.defined()) update = IfThenElseNode::make(counted, update);
    for (int i = n - 1; i >= 0; --i) {
      if (!serial(i)) continue;
      update = inject_attached(s, i, update);
      update = make_loop(s, leaves[i], update, extents[i]);
    }
    if (s->scope != MemScope::kLocal)
      stored = conj(leaves[across]->var == loop_range(bm_.at(s), leaves[across]).min, stored);
    Stmt store = ProvideNode::make(self, LoadNode::make(t, result, zero), idx);
    if (stored.defined()) store = IfThenElseNode::make(stored, store);
    const std::string& tag = s->iter_attrs.at(leaves[across].get()).thread_tag;
    Stmt stmt = SeqNode::make({StoreNode::make(partial, combiner_identity(red->combiner, t), zero), update,
                               ThreadAllReduceNode::make(red->combiner, LoadNode::make(t, partial, zero), result, tag),
                               store});
    const std::vector<Expr> one{make_const(DType::i32(), int64_t{1})};
    stmt = AllocateNode::make(partial, t, one, MemScope::kLocal,
                              AllocateNode::make(result, t, one, MemScope::kLocal, stmt));
    for (int i = n - 1; i >= 0; --i) {
      if (serial(i)) continue;
      stmt = inject_attached(s, i, stmt);
      stmt = make_loop(s, leaves[i], stmt, extents[i]);
    }
    return stmt;
  }

  Stmt realize(const StageNode* s, Stmt body) const {
    std::vector<RealizeNode::Align> align;
    for (size_t d = 0; d < s->storage_align.size(); ++d)
      align.push_back({s->storage_align[d].first, s->storage_align[d].second, s->storage_tile[d], 0});
    if (!align.empty()) align.back().swizzle = s->storage_swizzle;
    return RealizeNode::make(Tensor(s->op), bm_.at(s).realize, s->scope, align, body);
  }

 private:
  // Whether the stage runs in a GPU kernel: one of its loops, or one that
  // encloses it, is bound to a block or thread index.
  static bool on_gpu(const StageNode* s) {
    auto bound = [](const StageNode* st, const IterVar& iv) {
      auto it = st->iter_attrs.find(iv.get());
      return it != st->iter_attrs.end() && it->second.for_kind == ForKind::kThreadBinding;
    };
    for (auto& iv : s->leaf_iter_vars)
      if (bound(s, iv)) return true;
    for (auto& [stage, pos] : enclosing_loops(s))
      if (bound(stage, stage->leaf_iter_vars[pos])) return true;
    return false;
  }

  static bool is_root(const StageNode* s, const IterVar& iv) {
    for (auto& r : s->root_iter_vars)
      if (r == iv) return true;
    return false;
  }

  static Stmt wrap_guards(Stmt stmt, const std::vector<Guard>& guards, int level, bool data_par_only) {
    for (auto& g : guards) {
      if (g.level != level || (data_par_only && g.uses_reduce_leaf)) continue;
      stmt = IfThenElseNode::make(g.cond, stmt);
    }
    return stmt;
  }

  // The loop over leaf `iv`, over its range or [0, extent) when given.
  Stmt make_loop(const StageNode* s, const IterVar& iv, Stmt body, Expr extent = Expr()) const {
    Range r = loop_range(bm_.at(s), iv);
    if (extent.defined()) r = Range(r.min, extent);
    ForKind kind = ForKind::kSerial;
    std::string tag;
    auto it = s->iter_attrs.find(iv.get());
    if (it != s->iter_attrs.end()) {
      kind = it->second.for_kind;
      tag = it->second.thread_tag;
    }
    // An i64 axis (a fused axis of 2^31 iterations or more) loops in i64.
    Stmt loop = ForNode::make(iv->var, cast(iv->var->dtype, r.min), cast(iv->var->dtype, r.extent), kind, body, tag);
    if (it != s->iter_attrs.end() && (it->second.pipeline_stages > 1 || it->second.producer_warps > 0)) {
      if (it->second.mma_in_flight > 0)
        loop = AttrStmtNode::make(iv, attr::kMmaInFlight, Expr(it->second.mma_in_flight), loop);
      if (it->second.bulk_copies != BulkCopies::kOff)
        loop = AttrStmtNode::make(iv, attr::kBulkCopies,
                                  Expr(static_cast<int>(it->second.bulk_copies) +
                                       (it->second.bulk_copy_form == BulkCopyForm::kTensorMaps ? 4 : 0)),
                                  loop);
      if (it->second.producer_warps > 0)
        loop = AttrStmtNode::make(iv, attr::kWarpSpecialized, Expr(it->second.producer_warps), loop);
      loop = AttrStmtNode::make(iv, attr::kPipelineStages, Expr(it->second.pipeline_stages), loop);
    }
    if (it != s->iter_attrs.end())
      for (const auto& [t, distance] : it->second.prefetch)
        loop = AttrStmtNode::make(Tensor(sch_[t]->op), attr::kPrefetch, Expr(distance), loop);
    if (it != s->iter_attrs.end())
      for (auto p = it->second.pragmas.rbegin(); p != it->second.pragmas.rend(); ++p)
        loop = AttrStmtNode::make(iv, std::string(attr::kPragmaPrefix) + p->first, p->second, loop);
    return loop;
  }

  Stmt inject_attached(const StageNode* parent, int pos, Stmt body) {
    auto it = attached_.find({parent, pos});
    if (it == attached_.end()) return body;
    std::vector<Stmt> seq;
    for (const StageNode* child : it->second) seq.push_back(build(child));
    seq.push_back(body);
    Stmt stmt = SeqNode::make(seq);
    for (auto c = it->second.rbegin(); c != it->second.rend(); ++c) stmt = realize(*c, stmt);
    return stmt;
  }

  const Schedule& sch_;
  const BoundMap& bm_;
  std::map<std::pair<const StageNode*, int>, std::vector<const StageNode*>> attached_;
};

// The storage layout directive a stage has ("storage_swizzle",
// "storage_tile" or "storage_align"), or "" when it keeps the dense layout.
std::string storage_layout(const StageNode* s) {
  if (s->storage_swizzle) return "storage_swizzle";
  for (int64_t t : s->storage_tile)
    if (t) return "storage_tile";
  for (const auto& a : s->storage_align)
    if (a.first) return "storage_align";
  return "";
}

}  // namespace

Stmt schedule_ops(const Schedule& sch, const BoundMap& bm, const std::vector<std::pair<Tensor, Var>>& args) {
  // A layout is for a buffer kiln allocates: an inlined stage has none, and
  // an argument's is the caller's, dense as its shape says.
  for (auto& st : sch.stages()) {
    const StageNode* s = st.node();
    const std::string layout = storage_layout(s);
    if (layout.empty()) continue;
    user_check(s->attach_type != AttachType::kInline)
        << layout << ": stage '" << s->op->name
        << "' is computed inline and stores nothing; lay out the buffer of a stage that is stored";
    for (auto& a : args)
      user_check(sch[a.first].node() != s)
          << layout << ": stage '" << s->op->name << "' is argument '" << a.first.name()
          << "' of the function, stored in the caller's buffer, dense as its shape says; lay out a copy of it "
             "instead (cache_read or cache_write)";
  }
  for (auto& st : sch.stages()) {
    const StageNode* s = st.node();
    if (!s->stream_stores) continue;
    user_check(s->attach_type != AttachType::kInline)
        << "stream_stores: stage '" << s->op->name
        << "' is computed inline and stores nothing; stream the stores of the stage its values go into";
    user_check(s->scope == MemScope::kGlobal)
        << "stream_stores: stage '" << s->op->name << "' keeps its buffer in " << mem_scope_name(s->scope)
        << " memory; streaming stores bypass the caches, for a result in global memory";
  }
  NestBuilder builder(sch, bm);
  std::vector<Stmt> nests;
  std::vector<const StageNode*> realized;
  for (auto& st : sch.stages()) {
    const StageNode* s = st.node();
    if (s->is_placeholder || s->attach_type != AttachType::kRoot) continue;
    nests.push_back(builder.build(s));
    bool is_arg = false;
    for (auto& a : args) is_arg |= sch[a.first].node() == s;
    if (!is_arg) realized.push_back(s);
  }
  Stmt body = SeqNode::make(nests);
  for (auto it = realized.rbegin(); it != realized.rend(); ++it) body = builder.realize(*it, body);
  for (auto it = args.rbegin(); it != args.rend(); ++it)
    body = AttrStmtNode::make(Tensor(sch[it->first]->op), passes::kBufferBind, it->second, body);
  return body;
}

}  // namespace kiln
