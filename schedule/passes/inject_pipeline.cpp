#include "schedule/passes/inject_pipeline.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/hw_instructions.h"
#include "compute/ir_functor.h"
#include "compute/printer.h"
#include "compute/simplify.h"

namespace kiln {
namespace passes {

namespace {

using BufferSet = std::unordered_set<const VarNode*>;

void flatten_seq(const Stmt& s, std::vector<Stmt>* out) {
  if (auto* seq = s.as<SeqNode>()) {
    for (const Stmt& c : seq->seq) flatten_seq(c, out);
  } else if (s.defined()) {
    out->push_back(s);
  }
}

// What a statement does to the pipeline's buffers.
struct Use {
  bool reads = false;         // reads one of them
  bool writes = false;        // writes one of them
  bool writes_other = false;  // writes a buffer that is neither one of them nor its own
};

Use use_of(const Stmt& s, const BufferSet& bufs) {
  Use u;
  BufferSet own;
  post_order_visit(s, [&](const Ref<Object>& n) {
    if (n->kind() == NodeKind::Allocate) own.insert(static_cast<const AllocateNode*>(n.get())->buffer.node());
  });
  auto written = [&](const VarNode* b) { (bufs.count(b) ? u.writes : u.writes_other) |= !own.count(b); };
  post_order_visit(s, [&](const Ref<Object>& n) {
    if (n->kind() == NodeKind::Load) {
      u.reads |= bufs.count(static_cast<const LoadNode*>(n.get())->buffer.node()) > 0;
    } else if (n->kind() == NodeKind::Store) {
      written(static_cast<const StoreNode*>(n.get())->buffer.node());
    } else if (n->kind() == NodeKind::TensorIntrinCall) {
      auto* c = static_cast<const TensorIntrinCallNode*>(n.get());
      const HwInstruction& h = find_hw_instruction(c->intrin);
      for (size_t k = 0; k < c->operands.size() && k < h.operands.size(); ++k) {
        const VarNode* b = c->operands[k].buffer.node();
        if (h.operands[k].written)
          written(b);
        else
          u.reads |= bufs.count(b) > 0;
      }
    }
  });
  return u;
}

// `index` moved by `off` elements (a vector index: every lane).
Expr shift_index(const Expr& index, const Expr& off) {
  const Expr o = cast(index.dtype().element_of(), off);
  if (auto* r = index.as<RampNode>()) return RampNode::make(r->base + o, r->stride, r->lanes);
  if (index.dtype().lanes > 1) return index + BroadcastNode::make(o, index.dtype().lanes);
  return index + o;
}

// Every access to a pipeline buffer goes to the slot `slot` (elements
// `stride` apart per buffer).
class SlotAccess : public IRMutator {
 public:
  SlotAccess(const std::unordered_map<const VarNode*, int64_t>& stride, Expr slot) : stride_(stride), slot_(slot) {}
  using IRMutator::mutate;

 protected:
  Expr offset(const VarNode* b) const { return slot_ * make_const(slot_.dtype(), stride_.at(b)); }

  Expr mutate_Load(const LoadNode* op, const Expr& self) override {
    Expr e = IRMutator::mutate_Load(op, self);
    auto* l = e.as<LoadNode>();
    if (!stride_.count(l->buffer.node())) return e;
    return LoadNode::make(l->dtype, l->buffer, shift_index(l->index, offset(l->buffer.node())), l->predicate);
  }
  Stmt mutate_Store(const StoreNode* op, const Stmt& self) override {
    Stmt s = IRMutator::mutate_Store(op, self);
    auto* st = s.as<StoreNode>();
    if (!stride_.count(st->buffer.node())) return s;
    return StoreNode::make(st->buffer, st->value, shift_index(st->index, offset(st->buffer.node())), st->predicate);
  }
  Stmt mutate_TensorIntrinCall(const TensorIntrinCallNode* op, const Stmt& self) override {
    std::vector<TensorIntrinCallNode::Operand> ops = op->operands;
    bool changed = false;
    for (auto& o : ops) {
      if (!stride_.count(o.buffer.node())) continue;
      o.offset = o.offset + cast(o.offset.dtype(), offset(o.buffer.node()));
      changed = true;
    }
    Stmt s = changed ? TensorIntrinCallNode::make(op->intrin, ops, op->scalars) : self;
    return IRMutator::mutate_TensorIntrinCall(s.as<TensorIntrinCallNode>(), s);
  }

 private:
  const std::unordered_map<const VarNode*, int64_t>& stride_;
  Expr slot_;
};

// A contiguous run of `lanes` elements from `index`, or null.
const Expr* contiguous_base(const Expr& index, int lanes) {
  if (lanes == 1) return index.dtype().lanes == 1 ? &index : nullptr;
  auto* r = index.as<RampNode>();
  return r && is_one(r->stride) && r->lanes == lanes ? &r->base : nullptr;
}

// The scalar every lane of `e` has (e itself, or a broadcast's value), or null.
const Expr* uniform_scalar(const Expr& e) {
  const Expr* s = &e;
  if (auto* b = e.as<BroadcastNode>()) s = &b->value;
  return s->dtype().lanes == 1 ? s : nullptr;
}

// A fill's plain copies from global memory into a slot become cp.async
// calls where the instruction covers them (see the header).
class AsyncCopies : public IRMutator {
 public:
  AsyncCopies(const BufferSet& bufs, const BufferSet& allocated) : bufs_(bufs), allocated_(allocated) {}
  using IRMutator::mutate;

 protected:
  Stmt mutate_Store(const StoreNode* op, const Stmt& self) override {
    // select(cond, load, 0), and a load masked by a condition (whose masked
    // lanes read 0), where the condition is the same for all lanes (a
    // gather's zero padding): a copy of src-size 0 where it is false, which
    // fills the slot with zeros and reads nothing.
    Expr zero_unless;
    const Expr* value = &op->value;
    if (auto* sel = op->value.as<SelectNode>()) {
      const Expr* cond = uniform_scalar(sel->condition);
      if (!cond || !is_zero_bits(sel->false_value)) return self;
      zero_unless = *cond;
      value = &sel->true_value;
    }
    auto* l = value->as<LoadNode>();
    if (!bufs_.count(op->buffer.node()) || op->predicate.defined() || !l || allocated_.count(l->buffer.node()) ||
        bufs_.count(l->buffer.node()))
      return self;
    if (l->predicate.defined()) {
      const Expr* p = uniform_scalar(l->predicate);
      if (!p) return self;
      zero_unless = zero_unless.defined() ? (zero_unless && *p) : *p;
    }
    const DType t = l->dtype.element_of();
    const int lanes = l->dtype.lanes;
    const int64_t bytes = int64_t{lanes} * t.bytes();
    const auto& types = cuda_cp_async_types();
    if (op->buffer->pointee != t || l->buffer->pointee != t || (bytes != 4 && bytes != 8 && bytes != 16) ||
        std::find(types.begin(), types.end(), t) == types.end())
      return self;
    const Expr* dst = contiguous_base(op->index, lanes);
    const Expr* src = contiguous_base(l->index, lanes);
    if (!dst || !src) return self;
    const Expr n = make_const(dst->dtype(), int64_t{lanes});
    const Expr one = make_const(dst->dtype(), int64_t{1});
    std::vector<Expr> scalars;
    if (zero_unless.defined()) scalars.push_back(zero_unless);
    return TensorIntrinCallNode::make(
        cuda_cp_async_instruction(t, bytes),
        {{op->buffer, *dst, n, one}, {l->buffer, *src, cast(src->dtype(), n), cast(src->dtype(), one)}}, scalars);
  }

 private:
  const BufferSet& bufs_;
  const BufferSet& allocated_;
};

class Pipeliner : public IRMutator {
 public:
  explicit Pipeliner(bool gpu) : gpu_(gpu) {}
  using IRMutator::mutate;

 protected:
  Stmt mutate_Allocate(const AllocateNode* op, const Stmt& self) override {
    allocated_.insert(op->buffer.node());
    return IRMutator::mutate_Allocate(op, self);
  }

  Stmt mutate_AttrStmt(const AttrStmtNode* op, const Stmt& self) override {
    if (op->key != attr::kPipelineStages) return IRMutator::mutate_AttrStmt(op, self);
    Stmt body = mutate(op->body);  // pipelines inside first
    const int64_t* stages = as_const_int(op->value);
    internal_assert(stages) << "pipeline_stages needs a constant number of stages";
    return pipeline(body, *stages);
  }

 private:
  Stmt pipeline(const Stmt& body, int64_t stages) {
    auto* f = body.as<ForNode>();
    if (!f) return body;  // a loop of one iteration, simplified away: nothing to overlap
    const std::string name = f->loop_var->name;
    user_check(f->for_kind == ForKind::kSerial)
        << "pipeline: loop '" << name << "' is " << for_kind_name(f->for_kind)
        << "; only a serial loop can be pipelined (its iterations run one after another)";
    const int64_t* trips = as_const_int(f->extent);
    user_check(trips && is_zero(f->min)) << "pipeline: loop '" << name << "' runs over [" << to_string(f->min) << ", +"
                                         << to_string(f->extent)
                                         << "); a pipeline needs a loop from 0 with a constant extent";
    const int64_t slots = std::min(stages, *trips);
    if (slots < 2) return body;

    std::vector<const AllocateNode*> allocs;
    Stmt inner = f->body;
    while (auto* a = inner.as<AllocateNode>()) {
      allocs.push_back(a);
      inner = a->body;
    }
    user_check(!allocs.empty()) << "pipeline: no stage is computed at loop '" << name
                                << "'; compute the stages that load its tiles there (compute_at), so that they can "
                                   "be filled ahead of the compute";
    BufferSet bufs;
    std::unordered_map<const VarNode*, int64_t> stride;
    for (const AllocateNode* a : allocs) {
      int64_t size = 1;
      for (const Expr& e : a->extents) {
        const int64_t* c = as_const_int(e);
        user_check(c) << "pipeline: buffer '" << a->buffer->name << "' at loop '" << name
                      << "' has a size that is not constant; its slots need one";
        size *= *c;
      }
      const int64_t per16 = std::max<int64_t>(1, 16 / a->dtype.bytes());  // slots start 16-byte aligned
      bufs.insert(a->buffer.node());
      stride[a->buffer.node()] = (size + per16 - 1) / per16 * per16;
    }

    std::vector<Stmt> stmts, fills, compute;
    flatten_seq(inner, &stmts);
    size_t i = 0;
    for (; i < stmts.size(); ++i) {
      const Use u = use_of(stmts[i], bufs);
      if (!u.writes || u.reads || u.writes_other) break;
      fills.push_back(stmts[i]);
    }
    user_check(!fills.empty()) << "pipeline: loop '" << name << "' does not begin by filling the buffers of the "
                               << "stages computed at it (statements that write only those and read none of them)";
    for (; i < stmts.size(); ++i) {
      const Use u = use_of(stmts[i], bufs);
      user_check(!u.writes) << "pipeline: the compute of loop '" << name
                            << "' writes a buffer of a stage computed at it; only that stage's fill may";
      compute.push_back(stmts[i]);
    }
    user_check(!compute.empty()) << "pipeline: loop '" << name << "' fills its stages' buffers but computes nothing";

    const int id = next_id_++;
    const DType t = f->loop_var.dtype();
    auto c = [&](int64_t v) { return make_const(t, v); };
    using Op = TokenNode::Op;
    using Queue = TokenNode::Queue;
    auto fill = [&](const Expr& iteration, const Expr& slot) {
      std::vector<Stmt> s{TokenNode::make(Op::kPop, Queue::kFree, id, slot)};
      SlotAccess at(stride, slot);
      AsyncCopies async(bufs, allocated_);
      for (const Stmt& st : fills) {
        Stmt moved = at.mutate(substitute(st, {{f->loop_var.node(), iteration}}));
        s.push_back(gpu_ ? async.mutate(moved) : moved);
      }
      s.push_back(TokenNode::make(Op::kPush, Queue::kFull, id, slot));
      return SeqNode::make(s);
    };

    Var p(name + ".prologue", t);
    Stmt prologue = ForNode::make(p, c(0), c(slots - 1), ForKind::kSerial, fill(p, p));
    const Var k = f->loop_var;
    const Expr slot = floormod(k, c(slots)), ahead = k + c(slots - 1);
    std::vector<Stmt> steady{TokenNode::make(Op::kPop, Queue::kFull, id, slot, min(c(slots - 2), c(*trips - 1) - k))};
    if (gpu_) steady.push_back(BarrierNode::make(MemScope::kShared));
    steady.push_back(IfThenElseNode::make(
        ahead < c(*trips),
        AttrStmtNode::make(Ref<Object>(), attr::kPipelineFill, c(slots), fill(ahead, floormod(ahead, c(slots))))));
    SlotAccess at(stride, slot);
    for (const Stmt& st : compute) steady.push_back(at.mutate(st));
    steady.push_back(TokenNode::make(Op::kPush, Queue::kFree, id, slot));
    Stmt out = SeqNode::make(
        {prologue, ForNode::make(k, f->min, f->extent, ForKind::kSerial, SeqNode::make(steady), f->thread_tag)});
    for (auto a = allocs.rbegin(); a != allocs.rend(); ++a) {
      const Expr& e0 = (*a)->extents.front();
      out = AllocateNode::make((*a)->buffer, (*a)->dtype,
                               {make_const(e0.dtype(), stride.at((*a)->buffer.node()) * slots)}, (*a)->scope, out);
    }
    return simplify(out);
  }

  bool gpu_;
  int next_id_ = 0;
  BufferSet allocated_;
};

}  // namespace

Stmt inject_pipeline(const Stmt& body, bool gpu) { return Pipeliner(gpu).mutate(body); }

}  // namespace passes
}  // namespace kiln
