// The CUDA C printer: pipelines' tokens, as cp.async groups or mbarriers,
// and warp-specialized regions (see cuda_kernel_printer.h).
#include <string>

#include "base/error.h"
#include "codegen/cuda_kernel_printer.h"
#include "compute/expr_ops.h"
#include "compute/hw_instructions.h"
#include "compute/ir_functor.h"
#include "compute/printer.h"

namespace kiln {

// A pipeline's fills are commit groups of asynchronous copies: the
// compute waits for its slot's group (the barrier after it, in the IR,
// shows it to the block); freeing a slot needs nothing more here, as the
// next iteration's barrier orders the compute before the slot's refill.
void CudaKernelPrinter::token(const TokenNode* op) {
  using Op = TokenNode::Op;
  using Queue = TokenNode::Queue;
  if (op->phase.defined()) return mbarrier_token(op);
  if (limits_.sm_version < 80) {  // no asynchronous copies: the fills were plain stores
    line() << "// pipeline " << op->pipeline << " token\n";
  } else if (op->queue == Queue::kFull && op->op == Op::kPush) {
    line() << "kiln_cp_async_commit();\n";
  } else if (op->queue == Queue::kFull) {
    line() << "kiln_cp_async_wait(" << expr(op->in_flight) << ");\n";
  } else {
    line() << "// " << (op->op == Op::kPush ? "release" : "refill") << " slot " << expr(op->slot) << " of pipeline "
           << op->pipeline << "\n";
  }
}

// A warp-specialized region; and the warp loop around one, which must
// span the block's warps (they all set the mbarriers up).
void CudaKernelPrinter::find_warp_specialized(const Ref<Object>& n) {
  auto holds = [](const Stmt& s) {
    bool found = false;
    post_order_visit(s, [&](const Ref<Object>& m) {
      found |=
          m->kind() == NodeKind::AttrStmt && static_cast<const AttrStmtNode*>(m.get())->key == attr::kWarpSpecialized;
    });
    return found;
  };
  if (n->kind() == NodeKind::For) {
    auto* f = static_cast<const ForNode*>(n.get());
    const int d = f->for_kind == ForKind::kThreadBinding ? thread_index_dim(f->thread_tag) : -1;
    if (d < 0 || !holds(f->body)) return;
    user_check(*as_const_int(f->extent) == kernel_.block[static_cast<size_t>(d)])
        << "the warp-specialized pipeline sits in loop '" << f->loop_var->name << "' over " << to_string(f->extent)
        << " of the block's " << kernel_.block[static_cast<size_t>(d)] << " threads along " << f->thread_tag
        << "; every thread of the block sets its mbarriers up and arrives on them, so the loops "
        << "bound to threads around it must span the block (bind the other loops to no more threads)";
    return;
  }
  if (n->kind() == NodeKind::IfThenElse) {
    auto* i = static_cast<const IfThenElseNode*>(n.get());
    bool on_thread = false;
    post_order_visit(i->condition, [&](const Ref<Object>& m) {
      on_thread |= m->kind() == NodeKind::Var && thread_vars_.count(static_cast<const VarNode*>(m.get()));
    });
    user_check(!on_thread || (!holds(i->then_case) && !holds(i->else_case)))
        << "the warp-specialized pipeline sits under a condition on a thread index; every thread of the block "
        << "sets its mbarriers up and arrives on them";
    return;
  }
  if (n->kind() != NodeKind::AttrStmt) return;
  auto* at = static_cast<const AttrStmtNode*>(n.get());
  if (at->key != attr::kWarpSpecialized) return;
  user_check(limits_.sm_version >= 80) << "a warp-specialized pipeline needs mbarriers, sm_80 or later; the target is "
                                       << limits_.arch;
  auto* sides = at->body.as<IfThenElseNode>();
  auto* w = at->node.defined() ? at->node.as<IntImmNode>() : nullptr;
  internal_assert(w && sides && sides->else_case.defined())
      << "a warp-specialized region is if (warp >= W) ... else ..., with W its node";
  WarpSpecialized ws;
  ws.slots = *as_const_int(at->value);
  user_check(kernel_.block[0] * kernel_.block[2] % 32 == 0)
      << "a warp-specialized pipeline needs whole warps per threadIdx.y row (threadIdx.x x threadIdx.z a multiple "
      << "of 32); this block has " << kernel_.block[0] << " x " << kernel_.block[1] << " x " << kernel_.block[2];
  ws.consumer_warps = w->value;
  ws.producer_warps = kernel_.block[1] - w->value;
  int id = -1;
  post_order_visit(sides->then_case, [&](const Ref<Object>& n) {
    if (n->kind() == NodeKind::Token) id = static_cast<const TokenNode*>(n.get())->pipeline;
    if (n->kind() == NodeKind::Store && shared_vars_.count(static_cast<const StoreNode*>(n.get())->buffer.node()))
      ws.plain = true;
    if (n->kind() == NodeKind::TensorIntrinCall &&
        static_cast<const TensorIntrinCallNode*>(n.get())->intrin.rfind(kCudaCpAsyncPrefix, 0) == 0)
      ws.async = true;
    if (n->kind() == NodeKind::AttrStmt) {
      auto* b = static_cast<const AttrStmtNode*>(n.get());
      if (b->key == attr::kBulkCopyBytes) ws.bulk_bytes += *as_const_int(b->value);
    }
  });
  internal_assert(id >= 0) << "a warp-specialized region holds its pipeline's tokens";
  // Each block row's first lanes issue the bulk copies once; more rows along z would repeat them.
  user_check(ws.bulk_bytes == 0 || kernel_.block[2] == 1)
      << "a warp-specialized pipeline with bulk copies needs a block of one thread along threadIdx.z (the "
      << "producer's lanes issue each row once); this block has " << kernel_.block[0] << " x " << kernel_.block[1]
      << " x " << kernel_.block[2];
  ws.full = "kiln_full_" + std::to_string(id);
  ws.empty = "kiln_empty_" + std::to_string(id);
  taken_.insert(ws.full);
  taken_.insert(ws.empty);
  regions_[at] = id;
  pipelines_[id] = ws;
}

// Thread 0 sets the barriers up and the block's barrier shows them to
// every thread. The producer's threads arrive on `full` once per fill (a
// cp.async arrival when the copies land, else a plain one, see
// WarpSpecialized::plain_arrival); the compute threads arrive on `empty`
// once per release.
void CudaKernelPrinter::warp_specialized(const AttrStmtNode* op) {
  const WarpSpecialized& ws = pipelines_.at(regions_.at(op));
  const int64_t lanes = kernel_.block[0] * kernel_.block[2];
  // Bulk copies: one arrival, the first producer thread's, that expects their bytes.
  const int64_t full =
      ws.producer_warps * lanes * ((ws.async ? 1 : 0) + (ws.plain_arrival() ? 1 : 0)) + (ws.bulk_bytes > 0 ? 1 : 0);
  internal_assert(ws.async || ws.plain || ws.bulk_bytes > 0)
      << "a warp-specialized pipeline's producer fills its slots";
  line() << "// warp specialization: warps " << ws.consumer_warps << " to " << ws.consumer_warps + ws.producer_warps - 1
         << " fill the slots, the others compute\n";
  line() << "if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {\n";
  ++indent_;
  line() << "for (int s = 0; s < " << ws.slots << "; ++s) {\n";
  ++indent_;
  line() << "kiln_mbarrier_init(" << ws.full << ", s, " << full << ");\n";
  line() << "kiln_mbarrier_init(" << ws.empty << ", s, " << ws.consumer_warps * lanes << ");\n";
  --indent_;
  line() << "}\n";
  if (ws.bulk_bytes > 0) line() << "kiln_fence_mbarrier_init();  // for the bulk copy engine\n";
  --indent_;
  line() << "}\n";
  line() << "__syncthreads();\n";
  region_ = &ws;
  stmt(op->body);
  region_ = nullptr;
}

void CudaKernelPrinter::mbarrier_token(const TokenNode* op) {
  using Op = TokenNode::Op;
  using Queue = TokenNode::Queue;
  const WarpSpecialized& ws = pipelines_.at(op->pipeline);
  const std::string slot = expr(op->slot), phase = expr(op->phase);
  const std::string& bar = op->queue == Queue::kFull ? ws.full : ws.empty;
  if (op->op == Op::kPush && op->queue == Queue::kFull) {
    if (ws.async) line() << "kiln_cp_async_mbarrier_arrive(" << bar << ", " << slot << ");\n";
    if (ws.plain_arrival()) line() << "kiln_mbarrier_arrive(" << bar << ", " << slot << ");\n";
  } else if (op->op == Op::kPush) {
    line() << "kiln_mbarrier_arrive(" << bar << ", " << slot << ");\n";
  } else if (op->op == Op::kPop && op->queue == Queue::kFree) {
    // Phase -1: the slot's first fill, which waits for nothing.
    line() << "if (" << phase << " >= 0) kiln_mbarrier_wait(" << bar << ", " << slot << ", (unsigned)((" << phase
           << ") & 1));\n";
    // The slot is free: its next fill's bulk bytes are expected before any lands.
    if (ws.bulk_bytes > 0)
      line() << "if (threadIdx.x == 0 && threadIdx.y == " << ws.consumer_warps
             << " && threadIdx.z == 0) kiln_mbarrier_arrive_expect_tx(" << ws.full << ", " << slot << ", "
             << ws.bulk_bytes << ");\n";
  } else {
    line() << "kiln_mbarrier_wait(" << bar << ", " << slot << ", (unsigned)((" << phase << ") & 1));\n";
  }
}

}  // namespace kiln
