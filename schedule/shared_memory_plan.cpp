#include "schedule/shared_memory_plan.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/hw_instructions.h"
#include "compute/ir_functor.h"
#include "schedule/gpu_kernels.h"

namespace kiln {

namespace {

// Numbers the kernel's statements in the order a thread runs them and
// records, per shared array, the first and last that touch it. A statement
// under thread-dependent control (a thread loop shorter than the block, a
// condition or a loop bound on a thread index) is one step: no barrier can
// go inside it (thread_sync), so the arrays it touches are live together.
class Lifetimes {
 public:
  Lifetimes(std::unordered_map<const VarNode*, SharedArrayPlace*> arrays, std::array<int64_t, 3> block)
      : arrays_(std::move(arrays)), block_(block) {}

  void walk(const Stmt& s) {
    if (!s.defined()) return;
    if (auto* seq = s.as<SeqNode>()) {
      for (const Stmt& c : seq->seq) walk(c);
    } else if (auto* f = s.as<ForNode>()) {
      if (f->for_kind == ForKind::kThreadBinding) {
        const int d = thread_index_dim(f->thread_tag);
        const int64_t* e = as_const_int(f->extent);
        if (d >= 0 && !(e && *e == block_[static_cast<size_t>(d)] && is_zero(f->min))) return touch(s);
        if (d >= 0) varying_.insert(f->loop_var.node());
        return walk(f->body);
      }
      if (thread_dependent(f->min) || thread_dependent(f->extent)) return touch(s);
      touch(f->min);
      touch(f->extent);
      const int64_t start = clock_;
      walk(f->body);
      const int64_t* trips = as_const_int(f->extent);
      if (!(trips && *trips <= 1)) stretch(start, clock_);
    } else if (auto* i = s.as<IfThenElseNode>()) {
      if (thread_dependent(i->condition)) return touch(s);
      touch(i->condition);
      walk(i->then_case);
      walk(i->else_case);
    } else if (auto* l = s.as<LetStmtNode>()) {
      if (thread_dependent(l->value)) varying_.insert(l->var.node());
      touch(l->value);
      walk(l->body);
    } else if (auto* a = s.as<AllocateNode>()) {
      for (const Expr& e : a->extents) touch(e);
      walk(a->body);
    } else if (auto* ws = s.as<AttrStmtNode>(); ws && ws->key == attr::kWarpSpecialized) {
      // A warp-specialized pipeline: the producer's fills, then the compute
      // warps' reads, drain and what follows. The mbarriers order them so
      // (inject_pipeline): the compute warps touch what follows the drain
      // only after every fill landed and every warp released every slot.
      auto* sides = ws->body.as<IfThenElseNode>();
      internal_assert(sides) << "a warp-specialized region is if (producer warp) ... else ...";
      walk(sides->then_case);
      walk(sides->else_case);
    } else if (auto* at = s.as<AttrStmtNode>()) {
      touch(at->value);
      walk(at->body);
    } else {
      touch(s);  // a statement of no statements: a store, a call, a barrier, ...
    }
  }

 private:
  // One step of the clock: every shared array `node` mentions is live there.
  template <typename Node>
  void touch(const Node& node) {
    if (!node.defined()) return;
    const int64_t now = clock_++;
    post_order_visit(node, [&](const Ref<Object>& n) {
      if (n->kind() != NodeKind::Var) return;
      auto it = arrays_.find(static_cast<const VarNode*>(n.get()));
      if (it == arrays_.end()) return;
      SharedArrayPlace& p = *it->second;
      if (p.last < p.first) p.first = now;
      p.last = now;
    });
  }
  // A loop over [start, end): what it touches is live over all of it.
  void stretch(int64_t start, int64_t end) {
    for (auto& [v, p] : arrays_) {
      if (p->last < p->first || p->last < start || p->first >= end) continue;
      p->first = std::min(p->first, start);
      p->last = std::max(p->last, end - 1);
    }
  }

  bool thread_dependent(const Expr& e) const {
    bool dep = false;
    post_order_visit(e, [&](const Ref<Object>& n) {
      if (n->kind() == NodeKind::Var && varying_.count(static_cast<const VarNode*>(n.get()))) dep = true;
    });
    return dep;
  }

  std::unordered_map<const VarNode*, SharedArrayPlace*> arrays_;
  std::array<int64_t, 3> block_;
  std::unordered_set<const VarNode*> varying_;  // thread indices, and values derived from them
  int64_t clock_ = 0;
};

bool live_together(const SharedArrayPlace& a, const SharedArrayPlace& b) {
  const bool a_empty = a.last < a.first, b_empty = b.last < b.first;
  if (a_empty || b_empty) return false;
  return a.first <= b.last && b.first <= a.last;
}

int64_t round_up(int64_t x, int64_t align) { return (x + align - 1) / align * align; }

// The lowest offset, a multiple of p.align, where `p` meets no placed array
// that lives at the same time.
int64_t lowest_free_offset(const SharedArrayPlace& p, const std::vector<const SharedArrayPlace*>& placed) {
  std::vector<int64_t> candidates{0};
  for (const SharedArrayPlace* q : placed)
    if (live_together(p, *q)) candidates.push_back(round_up(q->offset + q->bytes, p.align));
  std::sort(candidates.begin(), candidates.end());
  for (int64_t c : candidates) {
    bool clear = true;
    for (const SharedArrayPlace* q : placed)
      if (live_together(p, *q) && c < q->offset + q->bytes && q->offset < c + p.bytes) clear = false;
    if (clear) return c;
  }
  internal_assert(false) << "no free offset for a shared array";
  return 0;
}

}  // namespace

bool SharedMemoryPlan::overlap(const VarNode* a, const VarNode* b) const {
  if (!shares_bytes || a == b) return false;
  const SharedArrayPlace* pa = find(a);
  const SharedArrayPlace* pb = find(b);
  return pa && pb && pa->offset < pb->offset + pb->bytes && pb->offset < pa->offset + pa->bytes;
}

const SharedArrayPlace* SharedMemoryPlan::find(const VarNode* buffer) const {
  for (const SharedArrayPlace& p : arrays)
    if (p.alloc->buffer.node() == buffer) return &p;
  return nullptr;
}

SharedMemoryPlan plan_shared_memory(const Stmt& kernel) {
  SharedMemoryPlan plan;
  // Tensor copies write 128-byte aligned boxes; wgmma reads, and a
  // swizzled tensor copy writes, a swizzled buffer with the swizzle's
  // pattern starting at 1024-byte boundaries.
  std::unordered_map<const VarNode*, int64_t> over_aligned;
  post_order_visit(kernel, [&](const Ref<Object>& n) {
    if (n->kind() != NodeKind::TensorIntrinCall) return;
    auto* c = static_cast<const TensorIntrinCallNode*>(n.get());
    auto at_least = [&](const Var& buffer, int64_t align) {
      int64_t& a = over_aligned[buffer.node()];
      a = std::max(a, align);
    };
    if (c->intrin.rfind(kCudaTensorCopyPrefix, 0) == 0)
      at_least(c->operands[0].buffer, cuda_tensor_copy_swizzled(*c) ? 1024 : 128);
    for (size_t k : {size_t{1}, size_t{2}})
      if (cuda_wgmma_reads_swizzled(*c, k)) at_least(c->operands[k].buffer, 1024);
  });
  post_order_visit(kernel, [&](const Ref<Object>& n) {
    if (n->kind() != NodeKind::Allocate) return;
    auto* a = static_cast<const AllocateNode*>(n.get());
    if (a->scope != MemScope::kShared) return;
    int64_t elems = 1;
    for (const Expr& e : a->extents) {
      const int64_t* c = as_const_int(e);
      internal_assert(c) << "shared array '" << a->buffer->name << "' has a size that is not a constant";
      elems *= *c;
    }
    SharedArrayPlace p;
    p.alloc = a;
    p.bytes = shared_array_bytes(elems, a->dtype);
    auto aligned = over_aligned.find(a->buffer.node());
    if (aligned != over_aligned.end()) {
      p.align = aligned->second;
      plan.over_aligned = true;
      plan.align = std::max(plan.align, p.align);
    }
    plan.arrays.push_back(p);
  });

  // One after another: the layout when nothing shares.
  std::vector<int64_t> plain;
  for (SharedArrayPlace& p : plan.arrays) {
    p.offset = round_up(plan.bytes, p.align);
    plain.push_back(p.offset);
    plan.bytes = p.offset + p.bytes;
  }
  if (plan.arrays.size() < 2) return plan;

  std::unordered_map<const VarNode*, SharedArrayPlace*> by_var;
  for (SharedArrayPlace& p : plan.arrays) by_var[p.alloc->buffer.node()] = &p;
  Lifetimes(by_var, block_extents(kernel)).walk(kernel);

  // Largest first, each at the lowest offset clear of the arrays live with it.
  std::vector<size_t> order(plan.arrays.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return plan.arrays[a].bytes > plan.arrays[b].bytes; });
  std::vector<const SharedArrayPlace*> placed;
  int64_t end = 0;
  for (size_t i : order) {
    SharedArrayPlace& p = plan.arrays[i];
    p.offset = lowest_free_offset(p, placed);
    end = std::max(end, p.offset + p.bytes);
    placed.push_back(&p);
  }
  if (end >= plan.bytes) {  // sharing saves nothing: keep the plain layout (lifetimes recorded)
    for (size_t i = 0; i < plain.size(); ++i) plan.arrays[i].offset = plain[i];
    return plan;
  }
  plan.bytes = end;
  plan.shares_bytes = true;
  return plan;
}

}  // namespace kiln
