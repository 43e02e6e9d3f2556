#include "schedule/passes/thread_sync.h"

#include <array>
#include <set>
#include <string>
#include <unordered_set>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/ir_functor.h"
#include "schedule/gpu_kernels.h"

namespace kiln {
namespace passes {

namespace {

// Shared-buffer accesses since the last barrier, by buffer variable.
struct Pending {
  std::set<const VarNode*> reads, writes;
  void add(const Pending& o) {
    reads.insert(o.reads.begin(), o.reads.end());
    writes.insert(o.writes.begin(), o.writes.end());
  }
};

// The shared buffers a later access set conflicts with, given what happened
// since the last barrier: read-after-write, write-after-read, write-after-write.
std::set<const VarNode*> conflicts(const Pending& before, const Pending& next) {
  std::set<const VarNode*> out;
  for (auto* b : next.reads)
    if (before.writes.count(b)) out.insert(b);
  for (auto* b : next.writes)
    if (before.reads.count(b) || before.writes.count(b)) out.insert(b);
  return out;
}

std::string names(const std::set<const VarNode*>& bufs) {
  std::string s;
  for (auto* b : bufs) s += (s.empty() ? "'" : ", '") + b->name + "'";
  return s;
}

class SyncPlanner {
 public:
  SyncPlanner(bool insert, std::array<int64_t, 3> block) : insert_(insert), block_(block) {}

  Stmt run(const Stmt& kernel) {
    collect_shared(kernel);
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

  Pending accesses(const Stmt& s) const {
    Pending p;
    post_order_visit(s, [&](const Ref<Object>& n) {
      if (n->kind() == NodeKind::Load) {
        auto* l = static_cast<const LoadNode*>(n.get());
        if (shared_.count(l->buffer.node())) p.reads.insert(l->buffer.node());
      } else if (n->kind() == NodeKind::Store) {
        auto* st = static_cast<const StoreNode*>(n.get());
        if (shared_.count(st->buffer.node())) p.writes.insert(st->buffer.node());
      }
    });
    return p;
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
    if (!uniform(s)) return unit(s, p);
    if (auto* seq = s.as<SeqNode>()) {
      std::vector<Stmt> out;
      for (auto& c : seq->seq) out.push_back(visit(c, p));
      return SeqNode::make(out);
    }
    if (auto* f = s.as<ForNode>()) {
      if (f->for_kind == ForKind::kThreadBinding) {
        varying_.insert(f->loop_var.node());
        Stmt b = visit(f->body, p);
        return ForNode::make(f->loop_var, f->min, f->extent, f->for_kind, b, f->thread_tag);
      }
      // The body's end meets its next iteration's beginning: plan twice, the
      // second time with what the first left pending.
      const Pending entry = *p;
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
      Pending again = entry;
      again.add(first);
      Stmt b = visit(f->body, &again);
      *p = entry;  // the loop may run no iteration
      p->add(again);
      return ForNode::make(f->loop_var, f->min, f->extent, f->for_kind, b, f->thread_tag);
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
    return AttrStmtNode::make(at->node, at->key, at->value, visit(at->body, p));
  }

  // A statement the block's threads do not all run alike (or a leaf).
  Stmt unit(const Stmt& s, Pending* p) {
    Pending acc = accesses(s);
    // A cross-thread reduction is itself uniform code (every thread of the
    // block runs it); anything else here is not, and must hold no barrier.
    if (check_ && !s.as<ThreadAllReduceNode>()) {
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
        if (acc.writes.count(b)) both.insert(b);
      const bool leaf = s.as<StoreNode>() || s.as<EvaluateNode>();
      user_check(leaf || both.empty())
          << "shared buffer " << names(both) << " is both written and read under thread-dependent control flow "
          << "(a condition on a thread index, or a thread loop shorter than the block), where no barrier can "
             "order the threads: compute the shared stage at a loop outside it";
    }
    std::set<const VarNode*> c = conflicts(*p, acc);
    if (c.empty()) {
      p->add(acc);
      return s;
    }
    if (check_ && !insert_)
      user_error() << "missing barrier: shared buffer " << names(c) << " is accessed by a statement after other "
                   << "threads accessed it (one of them writing) with no barrier in between";
    *p = acc;
    return insert_ ? SeqNode::make({BarrierNode::make(MemScope::kShared), s}) : s;
  }

  bool insert_;
  bool check_ = true;
  std::array<int64_t, 3> block_;
  std::unordered_set<const VarNode*> shared_, varying_;
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
