#include "schedule/passes/warp_specialize.h"

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/ir_functor.h"
#include "compute/printer.h"
#include "schedule/passes/bulk_copy.h"
#include "schedule/passes/pass_util.h"

namespace kiln {
namespace passes {

namespace {

bool is_marker(const Stmt& s) {
  auto* a = s.as<AttrStmtNode>();
  return a && a->key == kConsumerMarker;
}

bool contains_marker(const Stmt& s) {
  bool found = false;
  post_order_visit(s, [&](const Ref<Object>& n) {
    if (n->kind() != NodeKind::AttrStmt) return;
    found |= static_cast<const AttrStmtNode*>(n.get())->key == kConsumerMarker;
  });
  return found;
}

// Replaces the marker by the consumer, checking the path to it and the
// consumer warps' statements around it.
class ConsumerSide {
 public:
  ConsumerSide(const WarpSpecializedRegion& r, const std::unordered_set<const VarNode*>& shared,
               const std::string& warp)
      : r_(r), shared_(shared), warp_(warp) {}

  Stmt place(const Stmt& s) {
    if (is_marker(s)) {
      seen_ = true;
      return r_.consumer;
    }
    if (auto* seq = s.as<SeqNode>()) {
      std::vector<Stmt> out;
      for (const Stmt& c : seq->seq) {
        if (contains_marker(c)) {
          out.push_back(place(c));
          continue;
        }
        const BufferUse u = buffer_use(c, shared_);
        user_check(seen_ || (!u.reads && !u.writes))
            << "warp specialization of loop '" << r_.loop_name << "': the compute warps access shared memory before "
            << "the pipeline, while the producer warps already fill its slots; compute that stage elsewhere";
        user_check(!seen_ || !u.reads)
            << "warp specialization of loop '" << r_.loop_name << "': the compute warps read shared memory after "
            << "the pipeline, inside the warp loop, where no block barrier can order them (the producer warps "
               "never reach one there); they may write it, and read it after the warp loop";
        out.push_back(c);
      }
      return SeqNode::make(out);
    }
    if (auto* a = s.as<AllocateNode>())
      return AllocateNode::make(a->buffer, a->dtype, a->extents, a->scope, place(a->body));
    if (auto* at = s.as<AttrStmtNode>()) return AttrStmtNode::make(at->node, at->key, at->value, place(at->body));
    const NodeKind k = s->kind();
    user_error() << "warp specialization of loop '" << r_.loop_name << "': the pipeline is nested in "
                 << (k == NodeKind::For          ? "a loop"
                     : k == NodeKind::IfThenElse ? "a condition"
                     : k == NodeKind::LetStmt    ? "a let"
                                                 : std::string("a ") + node_kind_name(k) + " statement")
                 << " inside the warp loop '" << warp_
                 << "'; the producer warps run the pipeline's iterations on their own, so only sequences and "
                    "allocations may lie between the two";
    return s;
  }

 private:
  const WarpSpecializedRegion& r_;
  const std::unordered_set<const VarNode*>& shared_;
  const std::string& warp_;
  bool seen_ = false;
};

// The fills' loops over threadIdx.y (the block's W compute warps) become
// serial loops shared by the P producer warps: producer warp p takes rows
// p, p + P, ...
class ProducerWarps : public IRMutator {
 public:
  ProducerWarps(const Var& warp, int64_t consumers, int64_t producers)
      : warp_(warp), consumers_(consumers), producers_(producers) {}
  using IRMutator::mutate;

 protected:
  Stmt mutate_For(const ForNode* op, const Stmt& self) override {
    if (op->for_kind != ForKind::kThreadBinding || op->thread_tag != "threadIdx.y")
      return IRMutator::mutate_For(op, self);
    const int64_t* e = as_const_int(op->extent);
    internal_assert(e && is_zero(op->min)) << "a loop bound to threadIdx.y runs from 0 over a constant extent";
    Stmt body = mutate(op->body);
    const DType t = op->loop_var.dtype();
    if (producers_ == 1) return ForNode::make(op->loop_var, op->min, op->extent, ForKind::kSerial, body);
    Var round(op->loop_var->name + ".round", t);
    const Expr row = round * make_const(t, producers_) + (cast(t, warp_) - make_const(t, consumers_));
    body = substitute(body, {{op->loop_var.node(), row}});
    if (*e % producers_ != 0) body = IfThenElseNode::make(row < make_const(t, *e), body);
    return ForNode::make(round, make_const(t, int64_t{0}), make_const(t, (*e + producers_ - 1) / producers_),
                         ForKind::kSerial, body);
  }

 private:
  Var warp_;
  int64_t consumers_, producers_;
};

// With several producer warps, a fill that has no loop over threadIdx.y
// (nothing to share among them) runs on the first producer warp only,
// instead of on each of them, copying the same elements again.
class FirstProducerFills : public IRMutator {
 public:
  FirstProducerFills(const Var& warp, int64_t consumers) : warp_(warp), consumers_(consumers) {}
  using IRMutator::mutate;

 protected:
  Stmt mutate_Seq(const SeqNode* op, const Stmt& self) override {
    const TokenNode* push = producer_full_push(op);
    if (!push) return IRMutator::mutate_Seq(op, self);
    std::vector<Stmt> out;
    for (const Stmt& s : op->seq)
      out.push_back(s.as<TokenNode>() || uses_var(s, warp_.node())
                        ? s
                        : IfThenElseNode::make(warp_ == make_const(warp_.dtype(), consumers_), s));
    return SeqNode::make(out);
  }

 private:
  Var warp_;
  int64_t consumers_;
};

}  // namespace

Stmt warp_specialize(const ForNode* warp_loop, const Stmt& body, const WarpSpecializedRegion& region,
                     const std::unordered_set<const VarNode*>& shared_buffers) {
  const std::string& warp = warp_loop->loop_var->name;
  const int64_t* consumers = as_const_int(warp_loop->extent);
  user_check(consumers && is_zero(warp_loop->min))
      << "warp specialization of loop '" << region.loop_name << "': the warp loop '" << warp
      << "' needs a constant number of warps from 0";
  bool uses_warp = false;
  post_order_visit(region.producer, [&](const Ref<Object>& n) { uses_warp |= n.get() == warp_loop->loop_var.get(); });
  user_check(!uses_warp) << "warp specialization of loop '" << region.loop_name << "': its fills depend on the warp "
                         << "index '" << warp << "' of the compute warps; the producer warps fill the slots for all "
                         << "of them";
  // The producer runs outside the compute side's scopes: what is bound
  // there (buffers allocated around the pipeline, lets) is not its to use.
  std::unordered_set<const Object*> bound;
  post_order_visit(body, [&](const Ref<Object>& n) {
    if (n->kind() == NodeKind::Allocate) bound.insert(static_cast<const AllocateNode*>(n.get())->buffer.get());
    if (n->kind() == NodeKind::LetStmt) bound.insert(static_cast<const LetStmtNode*>(n.get())->var.get());
  });
  std::string inner;
  post_order_visit(region.producer, [&](const Ref<Object>& n) {
    if (n->kind() == NodeKind::Var && bound.count(n.get())) inner = static_cast<const VarNode*>(n.get())->name;
  });
  user_check(inner.empty()) << "warp specialization of loop '" << region.loop_name << "': its fills use '" << inner
                            << "', bound inside the warp loop '" << warp << "' around the pipeline, where only the "
                            << "compute warps run; compute what the fills read outside the warp loop";
  Stmt consumer = ConsumerSide(region, shared_buffers, warp).place(body);
  Stmt producer = ProducerWarps(warp_loop->loop_var, *consumers, region.producer_warps).mutate(region.producer);
  if (region.producer_warps > 1) producer = FirstProducerFills(warp_loop->loop_var, *consumers).mutate(producer);
  if (region.bulk_copies)
    producer = bulk_copy_fills(producer, warp_loop->loop_var, *consumers, region.producer_warps, region.bulk_every_fill,
                               region.bulk_tensor_maps, region.loop_name);
  const DType t = warp_loop->loop_var.dtype();
  Stmt out = AttrStmtNode::make(
      make_const(DType::i32(), *consumers), attr::kWarpSpecialized, make_const(DType::i32(), region.slots),
      IfThenElseNode::make(warp_loop->loop_var >= make_const(t, *consumers), producer, consumer));
  for (size_t i = region.slot_buffers.size(); i-- > 0;) {
    const AllocateNode* a = region.slot_buffers[i];
    out = AllocateNode::make(a->buffer, a->dtype, {region.slot_buffer_sizes[i]}, a->scope, out);
  }
  return ForNode::make(warp_loop->loop_var, warp_loop->min, make_const(t, *consumers + region.producer_warps),
                       ForKind::kThreadBinding, out, warp_loop->thread_tag);
}

}  // namespace passes
}  // namespace kiln
