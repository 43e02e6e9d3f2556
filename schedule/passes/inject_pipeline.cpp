#include "schedule/passes/inject_pipeline.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/hw_instructions.h"
#include "compute/ir_functor.h"
#include "compute/printer.h"
#include "compute/simplify.h"
#include "schedule/passes/pass_util.h"
#include "schedule/passes/warp_specialize.h"

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

// The compute's synchronous wgmma products become their async forms
// (compute/hw_instructions.h), which a commit-and-wait retires.
class AsyncProducts : public IRMutator {
 public:
  using IRMutator::mutate;
  int calls = 0;
  std::vector<Var> accumulators;  // the buffers they accumulate into, each once

 protected:
  Stmt mutate_TensorIntrinCall(const TensorIntrinCallNode* op, const Stmt& self) override {
    if (op->intrin.rfind(kCudaWgmmaPrefix, 0) != 0 || is_cuda_wgmma_async(op->intrin)) return self;
    ++calls;
    const Var& acc = op->operands.at(0).buffer;
    if (std::none_of(accumulators.begin(), accumulators.end(), [&](const Var& v) { return v.same_as(acc); }))
      accumulators.push_back(acc);
    return TensorIntrinCallNode::make(cuda_wgmma_async_form(op->intrin), op->operands, op->scalars);
  }
};

class Pipeliner : public IRMutator {
 public:
  explicit Pipeliner(bool gpu) : gpu_(gpu) {}
  using IRMutator::mutate;

 protected:
  Stmt mutate_Allocate(const AllocateNode* op, const Stmt& self) override {
    allocated_.insert(op->buffer.node());
    if (op->scope == MemScope::kShared) shared_.insert(op->buffer.node());
    return IRMutator::mutate_Allocate(op, self);
  }

  // A warp-specialized pipeline reshapes the loop over the block's warps
  // (threadIdx.y) around it; other loops may not lie between the two, nor
  // around the warp loop (each block sets its mbarriers up once).
  Stmt mutate_For(const ForNode* op, const Stmt& self) override {
    const bool warps = op->for_kind == ForKind::kThreadBinding && op->thread_tag == "threadIdx.y";
    if (!warps) {
      const bool counts = op->for_kind != ForKind::kThreadBinding;
      loops_ += counts;
      Stmt r = IRMutator::mutate_For(op, self);
      loops_ -= counts;
      return r;
    }
    warp_loops_.push_back({op, loops_, std::nullopt});
    Stmt body = mutate(op->body);
    WarpLoop w = std::move(warp_loops_.back());
    warp_loops_.pop_back();
    if (!w.region)
      return body.same_as(op->body)
                 ? self
                 : ForNode::make(op->loop_var, op->min, op->extent, op->for_kind, body, op->thread_tag);
    user_check(w.outer_loops == 0) << "warp specialization of loop '" << w.region->loop_name << "': the warp loop '"
                                   << op->loop_var->name << "' sits in a loop of its own; "
                                   << "each block sets the pipeline's barriers up once, so bind the loops around it "
                                      "to blocks";
    return warp_specialize(op, body, *w.region, shared_);
  }

  Stmt mutate_AttrStmt(const AttrStmtNode* op, const Stmt& self) override {
    if (op->key != attr::kPipelineStages) return IRMutator::mutate_AttrStmt(op, self);
    Stmt body = op->body;
    int64_t producers = 0;
    if (auto* ws = body.as<AttrStmtNode>(); ws && ws->key == attr::kWarpSpecialized) {
      const int64_t* p = as_const_int(ws->value);
      internal_assert(p) << "warp_specialized needs a constant number of producer warps";
      producers = *p;
      body = ws->body;
    }
    int64_t bulk = 0;
    if (auto* b = body.as<AttrStmtNode>(); b && b->key == attr::kBulkCopies) {
      const int64_t* v = as_const_int(b->value);
      internal_assert(v && (*v & 3) >= 1 && (*v & 3) <= 2 && *v <= 6)
          << "bulk_copies is 1 (where they fit) or 2 (every fill), plus 4 for tensor maps";
      bulk = *v;
      body = b->body;
    }
    int64_t in_flight = 0;
    if (auto* m = body.as<AttrStmtNode>(); m && m->key == attr::kMmaInFlight) {
      const int64_t* v = as_const_int(m->value);
      internal_assert(v && *v >= 0 && *v <= 1 && producers > 0) << "mma_in_flight is 0 or 1, with producer warps";
      in_flight = *v;
      body = m->body;
    }
    body = mutate(body);  // pipelines inside first
    const int64_t* stages = as_const_int(op->value);
    internal_assert(stages) << "pipeline_stages needs a constant number of stages";
    return pipeline(body, *stages, producers, bulk, in_flight);
  }

 private:
  struct WarpLoop {
    const ForNode* loop;
    int outer_loops;  // loops around it (not bound to threads)
    std::optional<WarpSpecializedRegion> region;
  };

  Stmt pipeline(const Stmt& body, int64_t stages, int64_t producers, int64_t bulk, int64_t in_flight) {
    auto* f = body.as<ForNode>();
    if (!f) return body;  // a loop of one iteration, simplified away: nothing to overlap
    const std::string name = f->loop_var->name;
    user_check(producers == 0 || gpu_) << "pipeline: loop '" << name << "' asks for producer warps; warp "
                                       << "specialization needs a cuda target";
    user_check(f->for_kind == ForKind::kSerial)
        << "pipeline: loop '" << name << "' is " << for_kind_name(f->for_kind)
        << "; only a serial loop can be pipelined (its iterations run one after another)";
    const int64_t* trips = as_const_int(f->extent);
    user_check(trips && is_zero(f->min)) << "pipeline: loop '" << name << "' runs over [" << to_string(f->min) << ", +"
                                         << to_string(f->extent)
                                         << "); a pipeline needs a loop from 0 with a constant extent";
    const int64_t slots = std::min(stages, *trips);
    if (slots < 2 && producers == 0) return body;  // one slot: a plain loop, unless warps specialize

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

    if (producers > 0)
      return warp_specialized(f, id, slots, producers, bulk, slots >= 2 ? in_flight : 0, allocs, stride, fills,
                              compute);

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

  // The producer and consumer sides (warp_specialize.h places them): the
  // producer fills iteration k into slot k % S once the consumers released
  // the slot's previous use, and marks it full; the consumers wait for it,
  // compute, and release it. After the loop the consumers wait until every
  // consumer warp released the last S slots (the drain): nothing reads a
  // slot any more, and what follows may reuse its bytes.
  Stmt warp_specialized(const ForNode* f, int id, int64_t slots, int64_t producers, int64_t bulk, int64_t in_flight,
                        const std::vector<const AllocateNode*>& allocs,
                        const std::unordered_map<const VarNode*, int64_t>& stride, const std::vector<Stmt>& fills,
                        const std::vector<Stmt>& compute) {
    const std::string name = f->loop_var->name;
    user_check(!warp_loops_.empty() && warp_loops_.back().outer_loops == loops_)
        << "warp specialization of loop '" << name << "': it needs the loop directly inside the loop bound to "
        << "threadIdx.y (the block's warps), with no other loop between the two";
    WarpLoop& w = warp_loops_.back();
    user_check(!w.region) << "warp specialization of loop '" << name << "': the warp loop '" << w.loop->loop_var->name
                          << "' already holds a warp-specialized pipeline; it takes one";
    check_sides(name, bufs_of(allocs), fills, compute);
    const DType t = f->loop_var.dtype();
    auto c = [&](int64_t v) { return make_const(t, v); };
    using Op = TokenNode::Op;
    using Queue = TokenNode::Queue;
    const int64_t trips = *as_const_int(f->extent);

    Var kp(name + ".produce", t);
    const Expr ps = floormod(kp, c(slots)), use = floordiv(kp, c(slots));
    std::vector<Stmt> produce{TokenNode::make_phased(Op::kPop, Queue::kFree, id, ps, use - c(1))};
    SlotAccess at(stride, ps);
    const BufferSet bufs = bufs_of(allocs);
    AsyncCopies async(bufs, allocated_);
    for (const Stmt& st : fills) produce.push_back(async.mutate(at.mutate(substitute(st, {{f->loop_var.node(), kp}}))));
    produce.push_back(TokenNode::make_phased(Op::kPush, Queue::kFull, id, ps, use));

    const Var k = f->loop_var;
    const Expr cs = floormod(k, c(slots)), cuse = floordiv(k, c(slots));
    std::vector<Stmt> consume{TokenNode::make_phased(Op::kPop, Queue::kFull, id, cs, cuse)};
    SlotAccess cat(stride, cs);
    AsyncProducts async_products;
    for (const Stmt& st : compute)
      consume.push_back(in_flight ? async_products.mutate(cat.mutate(st)) : cat.mutate(st));
    std::vector<Stmt> after_loop;
    if (in_flight) {
      // Iteration k's products stay in flight until iteration k + 1 has
      // issued its own; then slot (k - 1) % S, which the retired ones read,
      // is released. The last products retire after the loop.
      user_check(async_products.calls > 0)
          << "mma_in_flight on loop '" << name << "': its compute issues no wgmma product to keep in flight "
          << "(only Hopper's warpgroup products, tensor_core wgmma on sm_90a, run asynchronously)";
      user_check(async_products.accumulators.size() == 1)
          << "mma_in_flight on loop '" << name << "': its wgmma products accumulate into "
          << async_products.accumulators.size() << " buffers; products stay in flight into one";
      // The wait fences the whole accumulator buffer (extent 0: all of it).
      const Var& acc = async_products.accumulators[0];
      auto commit_wait = [&](int64_t n) {
        const Expr zero = make_const(DType::i32(), int64_t{0}), one = make_const(DType::i32(), int64_t{1});
        return TensorIntrinCallNode::make(kCudaWgmmaCommitWait, {{acc, zero, zero, one}},
                                          {make_const(DType::i32(), n)});
      };
      const Expr prev = k - c(1);
      consume.push_back(commit_wait(in_flight));
      consume.push_back(IfThenElseNode::make(
          k >= c(1),
          TokenNode::make_phased(Op::kPush, Queue::kFree, id, floormod(prev, c(slots)), floordiv(prev, c(slots)))));
      after_loop.push_back(commit_wait(0));
      after_loop.push_back(
          TokenNode::make_phased(Op::kPush, Queue::kFree, id, c((trips - 1) % slots), c((trips - 1) / slots)));
    } else {
      consume.push_back(TokenNode::make_phased(Op::kPush, Queue::kFree, id, cs, cuse));
    }
    Var d(name + ".drain", t);
    Stmt drain = ForNode::make(
        d, c(trips - slots), c(slots), ForKind::kSerial,
        TokenNode::make_phased(Op::kWait, Queue::kFree, id, floormod(d, c(slots)), floordiv(d, c(slots))));

    WarpSpecializedRegion r;
    r.producer_warps = producers;
    r.bulk_copies = bulk > 0;
    r.bulk_every_fill = (bulk & 3) == 2;
    r.bulk_tensor_maps = (bulk & 4) != 0;
    r.slots = slots;
    r.loop_name = name;
    r.producer = simplify(ForNode::make(kp, c(0), f->extent, ForKind::kSerial, SeqNode::make(produce)));
    std::vector<Stmt> consumer{
        ForNode::make(k, f->min, f->extent, ForKind::kSerial, SeqNode::make(consume), f->thread_tag)};
    consumer.insert(consumer.end(), after_loop.begin(), after_loop.end());
    consumer.push_back(drain);
    r.consumer = simplify(SeqNode::make(consumer));
    for (const AllocateNode* a : allocs) {
      r.slot_buffers.push_back(a);
      r.slot_buffer_sizes.push_back(make_const(a->extents.front().dtype(), stride.at(a->buffer.node()) * slots));
    }
    w.region = std::move(r);
    return AttrStmtNode::make(Ref<Object>(), kConsumerMarker, Expr(id), EvaluateNode::make(Expr(0)));
  }

  // What the two sides may do, since no block barrier orders them inside
  // the region (thread_sync and the shared-memory plan take it whole): the
  // fills touch no shared memory but their slots, the compute writes none
  // but reads what was filled before the warp loop, and neither holds a
  // block barrier, a cross-thread reduction or another pipeline (the
  // producer warps would never meet the compute warps there).
  void check_sides(const std::string& name, const BufferSet& slots, const std::vector<Stmt>& fills,
                   const std::vector<Stmt>& compute) const {
    BufferSet others;
    for (const VarNode* b : shared_)
      if (!slots.count(b)) others.insert(b);
    auto check = [&](const Stmt& st, bool fill) {
      post_order_visit(st, [&](const Ref<Object>& n) {
        const NodeKind k = n->kind();
        user_check(k != NodeKind::Barrier && k != NodeKind::ThreadAllReduce && k != NodeKind::Token)
            << "warp specialization of loop '" << name << "': its " << (fill ? "fills hold" : "compute holds") << " a "
            << (k == NodeKind::Barrier ? "block barrier"
                : k == NodeKind::Token ? "pipeline of its own"
                                       : "reduction across threads")
            << ", which the " << (fill ? "compute" : "producer") << " warps would never reach";
      });
      const BufferUse u = buffer_use(st, others);  // also those allocated inside
      user_check(!(u.writes || (fill && u.reads)))
          << "warp specialization of loop '" << name << "': its " << (fill ? "fills " : "compute ")
          << (u.writes ? (fill ? "write" : "writes") : "read")
          << " a shared buffer other than the pipeline's slots, which no "
          << "barrier orders between the producer and compute warps (only the compute may read one, filled "
             "before the warp loop)";
    };
    for (const Stmt& st : fills) check(st, true);
    for (const Stmt& st : compute) check(st, false);
  }

  static BufferSet bufs_of(const std::vector<const AllocateNode*>& allocs) {
    BufferSet b;
    for (const AllocateNode* a : allocs) b.insert(a->buffer.node());
    return b;
  }

  bool gpu_;
  int next_id_ = 0;
  int loops_ = 0;  // loops (not bound to threads) around the statement being mutated
  BufferSet allocated_, shared_;
  std::vector<WarpLoop> warp_loops_;
};

}  // namespace

Stmt inject_pipeline(const Stmt& body, bool gpu) { return Pipeliner(gpu).mutate(body); }

}  // namespace passes
}  // namespace kiln
