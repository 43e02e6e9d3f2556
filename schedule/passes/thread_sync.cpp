#include "schedule/passes/thread_sync.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/hw_instructions.h"
#include "compute/ir_functor.h"
#include "compute/simplify.h"
#include "compute/simplify_linear.h"
#include "schedule/gpu_kernels.h"
#include "schedule/shared_memory_plan.h"

namespace kiln {
namespace passes {

namespace {

// Shared-buffer accesses since the last barrier, by buffer variable.
// Tensor-instruction writes are kept apart: a tensorized stage's calls each
// write their own tile of the stage (every element once), so two of them
// never meet on an element and need no barrier between them; they still
// order against reads and plain stores.
struct Pending {
  std::set<const VarNode*> reads, writes, intrin_writes;
  void add(const Pending& o) {
    reads.insert(o.reads.begin(), o.reads.end());
    writes.insert(o.writes.begin(), o.writes.end());
    intrin_writes.insert(o.intrin_writes.begin(), o.intrin_writes.end());
  }
};

// The shared buffers a later access set conflicts with, given what happened
// since the last barrier: read-after-write, write-after-read, write-after-write.
std::set<const VarNode*> conflicts(const Pending& before, const Pending& next) {
  std::set<const VarNode*> out;
  for (auto* b : next.reads)
    if (before.writes.count(b) || before.intrin_writes.count(b)) out.insert(b);
  for (auto* b : next.writes)
    if (before.reads.count(b) || before.writes.count(b) || before.intrin_writes.count(b)) out.insert(b);
  for (auto* b : next.intrin_writes)
    if (before.reads.count(b) || before.writes.count(b)) out.insert(b);
  return out;
}

// Pairs of different shared arrays that share bytes (the kernel's shared
// memory plan) and are both accessed, one before and one in `next`: the
// bytes change hands, so every access conflicts, whatever its kind.
std::set<std::pair<const VarNode*, const VarNode*>> reuse_conflicts(const SharedMemoryPlan& plan, const Pending& before,
                                                                    const Pending& next) {
  std::set<std::pair<const VarNode*, const VarNode*>> out;
  if (!plan.shares_bytes) return out;
  auto all = [](const Pending& p) {
    std::set<const VarNode*> s = p.reads;
    s.insert(p.writes.begin(), p.writes.end());
    s.insert(p.intrin_writes.begin(), p.intrin_writes.end());
    return s;
  };
  const std::set<const VarNode*> earlier = all(before), later = all(next);
  for (auto* b : later)
    for (auto* a : earlier)
      if (plan.overlap(a, b)) out.emplace(a, b);
  return out;
}

std::string names(const std::set<const VarNode*>& bufs) {
  std::string s;
  for (auto* b : bufs) s += (s.empty() ? "'" : ", '") + b->name + "'";
  return s;
}

class SyncPlanner {
 public:
  SyncPlanner(bool insert, std::array<int64_t, 3> block) : insert_(insert), placing_(insert), block_(block) {}

  Stmt run(const Stmt& kernel) {
    collect_shared(kernel);
    plan_ = plan_shared_memory(kernel);
    Pending p;
    return visit(kernel, &p);
  }

 private:
  void collect_shared(const Stmt& s) {
    post_order_visit(s, [&](const Ref<Object>& n) {
      if (n->kind() != NodeKind::Allocate) return;
      auto* a = static_cast<const AllocateNode*>(n.get());
      if (a->scope == MemScope::kShared) shared_.insert(a->buffer.node());
    });
  }

  // The shared accesses of `s`, but for a pipeline's steady-state fills:
  // they write slots the compute of the same iteration does not read, and
  // the barrier after each iteration's pop of a full token orders them
  // (inject_pipeline), so they are nobody's conflict.
  Pending accesses(const Stmt& s) const {
    Pending p;
    std::vector<Stmt> parts;
    without_pipeline_fills(s, &parts);
    for (const Stmt& part : parts) add_accesses(part, &p);
    return p;
  }

  static void without_pipeline_fills(const Stmt& s, std::vector<Stmt>* parts) {
    if (!s.defined()) return;
    bool has_fill = false;
    post_order_visit(s, [&](const Ref<Object>& n) {
      if (n->kind() == NodeKind::AttrStmt && static_cast<const AttrStmtNode*>(n.get())->key == attr::kPipelineFill)
        has_fill = true;
    });
    if (!has_fill) return parts->push_back(s);
    if (auto* a = s.as<AttrStmtNode>(); a && a->key == attr::kPipelineFill) return;
    // Split around the fills: keep every other child (and the expressions
    // of the node itself, which read no shared buffer in a fill's place).
    if (auto* seq = s.as<SeqNode>()) {
      for (const Stmt& c : seq->seq) without_pipeline_fills(c, parts);
    } else if (auto* f = s.as<ForNode>()) {
      without_pipeline_fills(f->body, parts);
    } else if (auto* i = s.as<IfThenElseNode>()) {
      parts->push_back(EvaluateNode::make(i->condition));
      without_pipeline_fills(i->then_case, parts);
      without_pipeline_fills(i->else_case, parts);
    } else if (auto* l = s.as<LetStmtNode>()) {
      parts->push_back(EvaluateNode::make(l->value));
      without_pipeline_fills(l->body, parts);
    } else if (auto* al = s.as<AllocateNode>()) {
      without_pipeline_fills(al->body, parts);
    } else if (auto* at = s.as<AttrStmtNode>()) {
      without_pipeline_fills(at->body, parts);
    } else {
      parts->push_back(s);
    }
  }

  void add_accesses(const Stmt& s, Pending* out) const {
    Pending& p = *out;
    post_order_visit(s, [&](const Ref<Object>& n) {
      if (n->kind() == NodeKind::Load) {
        auto* l = static_cast<const LoadNode*>(n.get());
        if (shared_.count(l->buffer.node())) p.reads.insert(l->buffer.node());
      } else if (n->kind() == NodeKind::Store) {
        auto* st = static_cast<const StoreNode*>(n.get());
        if (shared_.count(st->buffer.node())) p.writes.insert(st->buffer.node());
      } else if (n->kind() == NodeKind::TensorIntrinCall) {
        // An instruction reads its operands and writes those it updates.
        auto* c = static_cast<const TensorIntrinCallNode*>(n.get());
        const HwInstruction& h = find_hw_instruction(c->intrin);
        for (size_t k = 0; k < c->operands.size() && k < h.operands.size(); ++k) {
          const VarNode* b = c->operands[k].buffer.node();
          if (!shared_.count(b)) continue;
          (h.operands[k].written ? p.intrin_writes : p.reads).insert(b);
        }
      }
    });
  }

  bool thread_dependent(const Expr& e) const {
    bool dep = false;
    post_order_visit(e, [&](const Ref<Object>& n) {
      if (n->kind() == NodeKind::Var && varying_.count(static_cast<const VarNode*>(n.get()))) dep = true;
    });
    return dep;
  }

  // A thread loop over the whole block's extent of its tag: every thread
  // runs its body exactly once, so the body is uniform code.
  bool uniform_thread_loop(const ForNode* f) const {
    const int d = thread_index_dim(f->thread_tag);
    const int64_t* e = as_const_int(f->extent);
    return d >= 0 && e && *e == block_[d] && is_zero(f->min);
  }

  bool uniform(const Stmt& s) const {
    if (auto* f = s.as<ForNode>()) {
      if (f->for_kind == ForKind::kThreadBinding) return block_index_dim(f->thread_tag) >= 0 || uniform_thread_loop(f);
      return !thread_dependent(f->min) && !thread_dependent(f->extent);
    }
    if (auto* i = s.as<IfThenElseNode>()) return !thread_dependent(i->condition);
    return s.as<SeqNode>() || s.as<LetStmtNode>() || s.as<AllocateNode>() || s.as<AttrStmtNode>();
  }

  Stmt visit(const Stmt& s, Pending* p) {
    if (s.as<BarrierNode>()) {
      *p = Pending();
      return s;
    }
    // A warp-specialized pipeline's region: its producer and compute warps
    // hand the slots over through the pipeline's mbarriers, which order
    // every shared access inside it (inject_pipeline); to the rest of the
    // kernel it is one unit.
    if (auto* ws = s.as<AttrStmtNode>(); ws && ws->key == attr::kWarpSpecialized) return unit(s, p, true);
    if (!uniform(s)) return unit(s, p);
    if (auto* seq = s.as<SeqNode>()) {
      std::vector<Stmt> out;
      for (auto& c : seq->seq) out.push_back(visit(c, p));
      return SeqNode::make(out);
    }
    if (auto* f = s.as<ForNode>()) {
      if (f->for_kind == ForKind::kThreadBinding) {
        varying_.insert(f->loop_var.node());
        const int d = thread_index_dim(f->thread_tag);
        if (const int64_t* e = as_const_int(f->extent); e && d >= 0) {
          thread_extent_[f->loop_var.node()] = *e;
          thread_dim_[f->loop_var.node()] = d;
        }
        Stmt b = visit(f->body, p);
        return ForNode::make(f->loop_var, f->min, f->extent, f->for_kind, b, f->thread_tag);
      }
      // When placing barriers, one before the loop orders what came before
      // it against the whole body, instead of one in every iteration.
      Pending entry = *p;
      const bool barrier_before = placing_ && conflict(entry, accesses(f->body));
      if (barrier_before) entry = Pending();
      // The body's end meets its next iteration's beginning: plan twice, the
      // second time with what the first left pending.
      Pending first = entry;
      {
        const bool saved = insert_;
        insert_ = false;
        const bool saved_check = check_;
        check_ = false;
        visit(f->body, &first);
        insert_ = saved;
        check_ = saved_check;
      }
      // Writes that no two iterations or threads make to the same element
      // (a shared tile filled in rounds) do not conflict across iterations.
      const Pending body = accesses(f->body);
      for (auto it = first.writes.begin(); it != first.writes.end();)
        it = !body.reads.count(*it) && distinct_writes(f, *it) ? first.writes.erase(it) : std::next(it);
      Pending again = entry;
      again.add(first);
      Stmt b = visit(f->body, &again);
      *p = entry;  // the loop may run no iteration
      p->add(again);
      Stmt loop = ForNode::make(f->loop_var, f->min, f->extent, f->for_kind, b, f->thread_tag);
      return barrier_before && insert_ ? SeqNode::make({BarrierNode::make(MemScope::kShared), loop}) : loop;
    }
    if (auto* i = s.as<IfThenElseNode>()) {
      Pending pe = *p;
      Stmt t = visit(i->then_case, p);
      Stmt e = i->else_case.defined() ? visit(i->else_case, &pe) : Stmt();
      p->add(pe);
      return IfThenElseNode::make(i->condition, t, e);
    }
    if (auto* l = s.as<LetStmtNode>()) {
      if (thread_dependent(l->value)) varying_.insert(l->var.node());
      return LetStmtNode::make(l->var, l->value, visit(l->body, p));
    }
    if (auto* a = s.as<AllocateNode>())
      return AllocateNode::make(a->buffer, a->dtype, a->extents, a->scope, visit(a->body, p));
    auto* at = s.as<AttrStmtNode>();
    internal_assert(at) << "thread_sync: unexpected statement kind";
    if (at->key == attr::kPipelineFill) {  // ordered by the pipeline's barrier, not in what is pending (accesses())
      Pending own;
      return AttrStmtNode::make(at->node, at->key, at->value, visit(at->body, &own));
    }
    return AttrStmtNode::make(at->node, at->key, at->value, visit(at->body, p));
  }

  bool conflict(const Pending& before, const Pending& next) const {
    return !conflicts(before, next).empty() || !reuse_conflicts(plan_, before, next).empty();
  }

  // A statement the block's threads do not all run alike (or a leaf), or
  // one whose accesses are `ordered_inside` by other means.
  Stmt unit(const Stmt& s, Pending* p, bool ordered_inside = false) {
    Pending acc = accesses(s);
    // A cross-thread reduction is itself uniform code (every thread of the
    // block runs it); anything else here is not, and must hold no barrier.
    if (check_ && !ordered_inside && !s.as<ThreadAllReduceNode>()) {
      bool has_barrier = false, has_allreduce = false;
      post_order_visit(s, [&](const Ref<Object>& n) {
        has_barrier |= n->kind() == NodeKind::Barrier;
        has_allreduce |= n->kind() == NodeKind::ThreadAllReduce;
      });
      user_check(!has_barrier) << "a barrier sits under thread-dependent control flow (a condition on a thread "
                                  "index, or a thread loop shorter than the block): threads that skip it would "
                                  "never meet the others there";
      user_check(!has_allreduce)
          << "a reduction across threads sits under thread-dependent control flow (a condition on a thread index, "
             "or a thread loop shorter than the block): every thread of the block must take part in it, so bind "
             "the loops around it to the block's full extent";
      std::set<const VarNode*> both;
      for (auto* b : acc.reads)
        if (acc.writes.count(b) || acc.intrin_writes.count(b)) both.insert(b);
      const bool leaf = s.as<StoreNode>() || s.as<EvaluateNode>() || s.as<TensorIntrinCallNode>();
      user_check(leaf || both.empty())
          << "shared buffer " << names(both) << " is both written and read under thread-dependent control flow "
          << "(a condition on a thread index, or a thread loop shorter than the block), where no barrier can "
             "order the threads: compute the shared stage at a loop outside it";
    }
    std::set<const VarNode*> c = conflicts(*p, acc);
    const auto reuse = reuse_conflicts(plan_, *p, acc);
    if (c.empty() && reuse.empty()) {
      p->add(acc);
      return s;
    }
    if (check_ && !insert_ && !c.empty())
      user_error() << "missing barrier: shared buffer " << names(c) << " is accessed by a statement after other "
                   << "threads accessed it (one of them writing) with no barrier in between";
    if (check_ && !insert_)
      user_error() << "missing barrier: shared buffers '" << reuse.begin()->first->name << "' and '"
                   << reuse.begin()->second->name << "' share bytes of the block's shared memory (their lifetimes "
                   << "do not overlap), but a statement accesses the second after other threads accessed the first "
                   << "with no barrier in between";
    *p = acc;
    return insert_ ? SeqNode::make({BarrierNode::make(MemScope::kShared), s}) : s;
  }

  // Whether every iteration of `loop` and every thread of the block write
  // different elements of `buf`: one store to it in the body, its index an
  // affine function of the loop variables inside, the thread indices and
  // the vector lanes (anything else invariant in the loop) whose
  // coefficients form a mixed radix (each beyond all that the smaller ones
  // reach), and every block dimension of more than one thread in it.
  bool distinct_writes(const ForNode* loop, const VarNode* buf) const {
    std::unordered_map<const VarNode*, int64_t> extent = thread_extent_;
    std::vector<const StoreNode*> stores;
    std::unordered_set<const VarNode*> opaque;  // defined inside with values we do not follow
    std::array<bool, 3> thread_dims{{false, false, false}};
    auto add_loop = [&](const ForNode* f) {
      const int64_t* e = as_const_int(f->extent);
      if (!e || !is_zero(f->min)) {
        opaque.insert(f->loop_var.node());
        return;
      }
      extent[f->loop_var.node()] = *e;
    };
    add_loop(loop);
    post_order_visit(loop->body, [&](const Ref<Object>& n) {
      if (n->kind() == NodeKind::Store && static_cast<const StoreNode*>(n.get())->buffer.node() == buf)
        stores.push_back(static_cast<const StoreNode*>(n.get()));
      if (n->kind() == NodeKind::For) add_loop(static_cast<const ForNode*>(n.get()));
      if (n->kind() == NodeKind::LetStmt) opaque.insert(static_cast<const LetStmtNode*>(n.get())->var.node());
      if (n->kind() == NodeKind::Let) opaque.insert(static_cast<const LetNode*>(n.get())->var.node());
    });
    if (stores.size() != 1) return false;
    Expr index = simplify(stores[0]->index);
    std::vector<std::pair<int64_t, int64_t>> radix;  // |coefficient|, extent
    if (auto* r = index.as<RampNode>()) {
      int64_t stride = 0;
      if (!as_const_int(simplify(r->stride), &stride)) return false;
      radix.emplace_back(std::llabs(stride), r->lanes);
      index = simplify(r->base);
    }
    const LinearForm lf = LinearForm::of(index);
    if (!lf.exact()) return false;
    std::unordered_set<const VarNode*> used;
    for (const LinearTerm& t : lf.terms()) {
      auto* v = t.atom.as<VarNode>();
      if (!v || opaque.count(v)) return false;
      auto e = extent.find(v);
      if (e == extent.end()) {
        if (varying_.count(v)) return false;  // derived from a thread index
        continue;                             // invariant in the loop
      }
      used.insert(v);
      radix.emplace_back(std::llabs(t.coeff), e->second);
    }
    // Every variable that varies in the loop or across threads is used, and
    // each block dimension of more than one thread has its index there.
    const std::unordered_set<const VarNode*> inner_threads = thread_vars_in(loop);
    for (auto& [v, e] : extent) {
      const bool thread = thread_extent_.count(v) || inner_threads.count(v);
      if (!thread && e > 1 && !used.count(v)) return false;  // two iterations write one element
      if (!thread || !used.count(v)) continue;
      const int d = thread_dim_of(v, loop);
      if (d >= 0) thread_dims[static_cast<size_t>(d)] = true;
    }
    for (int d = 0; d < 3; ++d)
      if (block_[static_cast<size_t>(d)] > 1 && !thread_dims[static_cast<size_t>(d)]) return false;
    std::sort(radix.begin(), radix.end());
    int64_t reach = 0;  // the largest offset the smaller terms reach
    for (auto& [c, e] : radix) {
      if (e <= 1) continue;
      if (c <= reach) return false;
      reach += c * (e - 1);
    }
    return true;
  }

  // The thread-bound loop variables declared inside `loop`.
  std::unordered_set<const VarNode*> thread_vars_in(const ForNode* loop) const {
    std::unordered_set<const VarNode*> out;
    post_order_visit(loop->body, [&](const Ref<Object>& n) {
      if (n->kind() != NodeKind::For) return;
      auto* f = static_cast<const ForNode*>(n.get());
      if (f->for_kind == ForKind::kThreadBinding) out.insert(f->loop_var.node());
    });
    return out;
  }

  // The threadIdx dimension `v` is bound to (a loop enclosing or inside
  // `loop`), or -1.
  int thread_dim_of(const VarNode* v, const ForNode* loop) const {
    auto it = thread_dim_.find(v);
    if (it != thread_dim_.end()) return it->second;
    int d = -1;
    post_order_visit(loop->body, [&](const Ref<Object>& n) {
      if (n->kind() != NodeKind::For) return;
      auto* f = static_cast<const ForNode*>(n.get());
      if (f->loop_var.node() == v && f->for_kind == ForKind::kThreadBinding) d = thread_index_dim(f->thread_tag);
    });
    return d;
  }

  bool insert_;
  const bool placing_;  // the pass inserts barriers (not only verifies), also while it simulates a loop body
  bool check_ = true;
  std::array<int64_t, 3> block_;
  std::unordered_set<const VarNode*> shared_, varying_;
  SharedMemoryPlan plan_;  // which shared arrays share bytes
  // Thread-bound loops entered so far: their extents and threadIdx dimension.
  std::unordered_map<const VarNode*, int64_t> thread_extent_;
  std::unordered_map<const VarNode*, int> thread_dim_;
};

Stmt for_each_kernel(const Stmt& body, bool insert) {
  std::vector<Stmt> out;
  for (const Stmt& k : kernel_nests(body)) out.push_back(SyncPlanner(insert, block_extents(k)).run(k));
  return out.size() == 1 ? out[0] : SeqNode::make(out);
}

}  // namespace

Stmt insert_thread_syncs(const Stmt& body) { return for_each_kernel(body, true); }

void verify_thread_syncs(const Stmt& body) { for_each_kernel(body, false); }

}  // namespace passes
}  // namespace kiln
