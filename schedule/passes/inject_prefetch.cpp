#include "schedule/passes/inject_prefetch.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "compute/analyzer.h"
#include "compute/expr_ops.h"
#include "compute/hw_instructions.h"
#include "compute/ir_functor.h"
#include "compute/simplify.h"
#include "schedule/interval.h"

namespace kiln {
namespace passes {

namespace {

constexpr int64_t kLineBytes = 64;
constexpr int64_t kMaxLines = 512;

struct LoopRange {
  const ForNode* loop;
  Interval range;
};

// The prefetches of one load of the buffer in the loop's body, for the
// iteration whose variables `ahead` gives: the loops around the load whose
// step moves the index by more than a cache line are loops of the prefetch
// nest too (rows of a tile); the others span the lines of each row. Each
// access reads `run` elements from its index on (1 for a scalar load; a
// tensor instruction's operand reads more). Null when the load's region is
// not affine enough to tell, or too large.
Stmt prefetch_load(const Var& buffer, const Expr& index, int64_t run, const std::vector<LoopRange>& loops,
                   const VarMap& ahead) {
  const int64_t elem = std::max(1, buffer->pointee.bytes());
  std::unordered_map<const VarNode*, Interval> ranging;
  for (const LoopRange& l : loops) ranging[l.loop->loop_var.node()] = l.range;
  auto interval_with = [&](const std::unordered_map<const VarNode*, Interval>& r) {
    return eval_interval(index, [&](const VarNode* v, Interval* out) {
      auto it = r.find(v);
      if (it == r.end()) return false;
      *out = it->second;
      return true;
    });
  };
  std::vector<const ForNode*> rows;
  std::unordered_map<const VarNode*, Interval> spanned;
  int64_t count = 1, span_elems = run;  // the elements the spanned loops cover so far
  // Innermost first: a loop whose step stays within a line, or within what
  // the loops inside it already cover (a contiguous run), widens the run.
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
    const LoopRange& l = *it;
    const int64_t* n = as_const_int(l.loop->extent);
    if (!n) return Stmt();
    // The index's step along this loop: its range over two iterations.
    const Var& v = l.loop->loop_var;
    const Var at(v->name + ".at", v.dtype());  // interval ends are looked up again: not v itself
    Interval two = interval_with({{v.node(), {at, at + make_const(v.dtype(), int64_t{1})}}});
    if (!two.bounded()) return Stmt();
    const int64_t* step = as_const_int(simplify(two.max - two.min));
    if (!step) return Stmt();
    if (*n > 1 && std::abs(*step) * elem > std::max(kLineBytes, span_elems * elem)) {
      rows.insert(rows.begin(), l.loop);
      count *= *n;
    } else {
      spanned[v.node()] = l.range;
      span_elems += std::abs(*step) * (*n - 1);
    }
  }
  const Interval row = interval_with(spanned);
  if (!row.bounded()) return Stmt();
  const int64_t* span = as_const_int(simplify(row.max - row.min));
  if (!span) return Stmt();
  const int64_t lines = ((*span + run) * elem + kLineBytes - 1) / kLineBytes;
  if (count * lines > kMaxLines) return Stmt();
  const Expr start = substitute(row.min, ahead);
  Var line(buffer->name + ".line", start.dtype());
  Stmt s =
      ForNode::make(line, make_const(start.dtype(), int64_t{0}), make_const(start.dtype(), lines), ForKind::kSerial,
                    PrefetchNode::make(buffer, start + line * make_const(start.dtype(), kLineBytes / elem)));
  // The rows' loops, with the variables they range over renamed (the body
  // keeps its own loops).
  for (auto r = rows.rbegin(); r != rows.rend(); ++r) {
    Var v((*r)->loop_var->name + ".ahead", (*r)->loop_var.dtype());
    s = ForNode::make(v, (*r)->min, (*r)->extent, ForKind::kSerial, substitute(s, {{(*r)->loop_var.node(), v}}));
  }
  return s;
}

// The prefetches of every load of `buffer` in `body`, and of every tensor
// instruction operand that reads it (a constant run of elements), for the
// iteration `ahead` gives (accesses at the same index are fetched once).
std::vector<Stmt> prefetches(const Stmt& body, const Var& buffer, const VarMap& ahead) {
  std::vector<Stmt> out;
  std::vector<LoopRange> loops;
  std::vector<Expr> seen;
  std::function<void(const Stmt&)> walk;
  auto access = [&](const Expr& index, int64_t run) {
    for (const Expr& s : seen)
      if (expr_deep_equal(s, index)) return;
    seen.push_back(index);
    Stmt p = prefetch_load(buffer, index, run, loops, ahead);
    if (p.defined()) out.push_back(p);
  };
  auto visit_expr = [&](const Expr& e) {
    post_order_visit(e, [&](const Ref<Object>& n) {
      if (n->kind() != NodeKind::Load) return;
      auto* l = static_cast<const LoadNode*>(n.get());
      if (l->buffer.node() == buffer.node()) access(l->index, 1);
    });
  };
  // An operand the instruction reads, of a constant extent and stride
  // (those laid out by the call's scalars, extent 0, are left out).
  auto visit_call = [&](const TensorIntrinCallNode* c) {
    const HwInstruction& h = find_hw_instruction(c->intrin);
    for (size_t k = 0; k < c->operands.size() && k < h.operands.size(); ++k) {
      const TensorIntrinCallNode::Operand& o = c->operands[k];
      const int64_t* extent = as_const_int(o.extent);
      const int64_t* stride = as_const_int(o.stride);
      if (o.buffer.node() != buffer.node() || h.operands[k].written || !extent || !stride || *extent < 1) continue;
      access(o.offset, (*extent - 1) * std::abs(*stride) + 1);
    }
  };
  walk = [&](const Stmt& s) {
    if (!s.defined()) return;
    if (auto* f = s.as<ForNode>()) {
      loops.push_back({f, {f->min, simplify(f->min + f->extent - make_const(f->extent.dtype(), int64_t{1}))}});
      walk(f->body);
      loops.pop_back();
    } else if (auto* seq = s.as<SeqNode>()) {
      for (const Stmt& c : seq->seq) walk(c);
    } else if (auto* i = s.as<IfThenElseNode>()) {
      walk(i->then_case);
      walk(i->else_case);
    } else if (auto* a = s.as<AllocateNode>()) {
      walk(a->body);
    } else if (auto* at = s.as<AttrStmtNode>()) {
      walk(at->body);
    } else if (auto* l = s.as<LetStmtNode>()) {
      walk(l->body);
    } else if (auto* st = s.as<StoreNode>()) {
      visit_expr(st->value);
    } else if (auto* c = s.as<TensorIntrinCallNode>()) {
      visit_call(c);
    }
  };
  walk(body);
  return out;
}

class Prefetcher : public IRMutator {
 public:
  explicit Prefetcher(bool gpu) : gpu_(gpu) {}
  using IRMutator::mutate;

 protected:
  Stmt mutate_AttrStmt(const AttrStmtNode* op, const Stmt& self) override {
    if (op->key != attr::kPrefetch) return IRMutator::mutate_AttrStmt(op, self);
    user_check(!gpu_) << "prefetch is a CPU primitive (prefetcht0); a cuda target has no software prefetch";
    Stmt body = mutate(op->body);
    auto* buffer = op->node.defined() ? op->node.as<VarNode>() : nullptr;
    user_check(buffer) << "prefetch: the tensor has no storage of its own (it is computed inline); prefetch the "
                          "tensor it reads instead";
    auto* f = body.as<ForNode>();
    const int64_t* distance = as_const_int(op->value);
    internal_assert(distance && *distance >= 1) << "prefetch needs a constant distance of at least 1";
    if (!f) return body;  // a loop of one iteration, simplified away
    const DType t = f->loop_var.dtype();
    const Expr ahead = f->loop_var + make_const(t, *distance);
    std::vector<Stmt> fetch = prefetches(f->body, Var(buffer), {{f->loop_var.node(), ahead}});
    if (fetch.empty()) return body;
    Stmt guarded = IfThenElseNode::make(ahead < f->min + f->extent, SeqNode::make(fetch));
    return ForNode::make(f->loop_var, f->min, f->extent, f->for_kind, SeqNode::make({guarded, f->body}), f->thread_tag);
  }

 private:
  bool gpu_;
};

}  // namespace

Stmt inject_prefetch(const Stmt& body, bool gpu) { return Prefetcher(gpu).mutate(body); }

}  // namespace passes
}  // namespace kiln
