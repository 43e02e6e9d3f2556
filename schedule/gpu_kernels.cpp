#include "schedule/gpu_kernels.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <unordered_set>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/hw_instructions.h"
#include "compute/ir_functor.h"
#include "compute/printer.h"

namespace kiln {

namespace {

const char* const kDims = "xyz";

int tag_dim(const std::string& tag, const std::string& prefix) {
  if (tag.size() != prefix.size() + 1 || tag.compare(0, prefix.size(), prefix) != 0) return -1;
  const char c = tag.back();
  return c >= 'x' && c <= 'z' ? c - 'x' : -1;
}

std::string dims_text(const std::array<int64_t, 3>& d) {
  std::ostringstream os;
  os << d[0] << " x " << d[1] << " x " << d[2];
  return os.str();
}

// Walks one kernel nest: launch extents, shared memory, buffers, and every
// structural rule of a kernel.
class KernelScanner : public IRVisitor {
 public:
  KernelScanner(const GpuLimits& limits, const std::vector<BufferArg>& args) : limits_(limits), args_(args) {}

  void scan(const Stmt& s, GpuKernel* k) {
    visit(s);
    user_check(bound_any_)
        << "a stage computed at the root has no loop bound to blockIdx or threadIdx (first loop '" << first_loop_
        << "'): on a cuda target every root stage is a kernel, so bind its outer axes with bind(axis, "
           "\"blockIdx.x\") and bind(axis, \"threadIdx.x\")";
    for (int d = 0; d < 3; ++d) {
      k->grid[d] = grid_[d];
      k->block[d] = block_[d];
    }
    for (auto& [type, dim] : allreduces_) {
      const int64_t elems = allreduce_scratch_elems(allreduce_strategy(dim, k->block), k->block);
      if (elems == 0) continue;
      bool found = false;
      for (auto& [t, e] : k->allreduce_scratch)
        if (t == type) {
          e = std::max(e, elems);
          found = true;
        }
      if (!found) k->allreduce_scratch.emplace_back(type, elems);
    }
    // Tensor-core calls run per warp: the lanes of one threadIdx.y row must
    // be exactly one warp, so that a warp's fragments are one row's.
    user_check(first_warp_buffer_.empty() || (k->block[0] == 32 && k->block[2] == 1))
        << "buffer '" << first_warp_buffer_ << "' is in warp scope (a tensor-core fragment), which needs blocks of "
        << "32 x Y threads (threadIdx.x the lane of a warp, threadIdx.y the warp); this block has "
        << dims_text(k->block);
    // Arrays whose lifetimes do not overlap share bytes (shared_memory_plan.h).
    k->shared_plan = plan_shared_memory(s);
    k->shared_bytes = k->shared_plan.bytes;
    if (k->shared_plan.shares_bytes)
      shared_list_ +=
          "; arrays whose lifetimes do not overlap share bytes: " + std::to_string(k->shared_plan.bytes) + " in all";
    for (auto& [t, e] : k->allreduce_scratch) {
      const int64_t bytes = shared_array_bytes(e, t);
      k->shared_bytes += bytes;
      shared_list_ += (shared_list_.empty() ? "" : ", ") + std::string("reduction scratch ") + std::to_string(bytes);
    }
    post_order_visit(s, [&](const Ref<Object>& n) {
      if (n->kind() != NodeKind::AttrStmt) return;
      auto* a = static_cast<const AttrStmtNode*>(n.get());
      if (a->key == attr::kWarpSpecialized) k->mbarrier_bytes += 2 * 8 * *as_const_int(a->value);
    });
    if (k->mbarrier_bytes)
      shared_list_ +=
          (shared_list_.empty() ? "" : ", ") + std::string("mbarriers ") + std::to_string(k->mbarrier_bytes);
    for (size_t i = 0; i < args_.size(); ++i)
      if (used_.count(args_[i].data.node())) k->arg_indices.push_back(static_cast<int>(i));
    check_limits(*k);
    if (k->shared_bytes + k->mbarrier_bytes > limits_.max_shared_static_per_block)
      k->dynamic_shared_bytes = k->shared_bytes;
  }

 protected:
  using IRVisitor::visit;

  void visit_For(const ForNode* op) override {
    if (first_loop_.empty()) first_loop_ = op->loop_var->name;
    user_check(op->for_kind != ForKind::kParallel)
        << "loop '" << op->loop_var->name << "' is parallel, a CPU annotation: on a cuda target bind the axis to "
        << "blockIdx or threadIdx instead";
    if (op->for_kind != ForKind::kThreadBinding) {
      ++plain_depth_;
      IRVisitor::visit_For(op);
      --plain_depth_;
      return;
    }
    bound_any_ = true;
    const std::string& tag = op->thread_tag;
    const int64_t* ext = as_const_int(op->extent);
    user_check(ext) << "loop '" << op->loop_var->name << "' is bound to " << tag << " but its extent " << op->extent
                    << " is not a constant; split it by a constant factor first";
    if (int d = block_index_dim(tag); d >= 0) {
      user_check(plain_depth_ == 0 && thread_depth_ == 0)
          << "loop '" << op->loop_var->name << "' is bound to " << tag << " inside another loop; loops bound to "
          << "blockIdx must be the outermost loops of a kernel";
      user_check(!on_path_.count(tag)) << "loops '" << on_path_[tag] << "' and '" << op->loop_var->name
                                       << "' are both bound to " << tag << " in one kernel";
      grid_[d] = std::max(grid_[d], *ext);
      grid_names_[d] = op->loop_var->name;
      on_path_[tag] = op->loop_var->name;
      IRVisitor::visit_For(op);
      on_path_.erase(tag);
      return;
    }
    const int d = thread_index_dim(tag);
    internal_assert(d >= 0) << "unknown thread tag " << tag;
    if (*ext > block_[d]) {
      block_[d] = *ext;
      block_names_[d] = op->loop_var->name;
    }
    ++thread_depth_;
    if (d == 0) ++lane_depth_;
    IRVisitor::visit_For(op);
    if (d == 0) --lane_depth_;
    --thread_depth_;
  }

  void visit_Allocate(const AllocateNode* op) override {
    int64_t elems = 1;
    for (auto& e : op->extents) {
      const int64_t* c = as_const_int(e);
      user_check(c) << "buffer '" << op->buffer->name << "' (" << mem_scope_name(op->scope)
                    << " scope) has a size that is not a constant, which a GPU kernel cannot allocate";
      elems *= *c;
    }
    user_check(op->scope != MemScope::kGlobal)
        << "stage '" << op->buffer->name << "' is stored in global memory inside a kernel; give it shared or "
        << "local scope (set_scope, cache_read/cache_write) or compute it inline";
    if (op->scope == MemScope::kWarp) {
      user_check(lane_depth_ == 0) << "buffer '" << op->buffer->name << "' is in warp scope (a tensor-core fragment "
                                   << "that the 32 lanes of a warp share) but is allocated inside a loop bound to "
                                   << "threadIdx.x, the lanes: compute it at a loop outside the lanes";
      if (first_warp_buffer_.empty()) first_warp_buffer_ = op->buffer->name;
    }
    if (op->scope == MemScope::kShared) {
      const int64_t bytes = shared_array_bytes(elems, op->dtype);
      shared_list_ += (shared_list_.empty() ? "" : ", ") + op->buffer->name + " " + std::to_string(bytes);
    }
    IRVisitor::visit_Allocate(op);
  }

  void visit_TensorIntrinCall(const TensorIntrinCallNode* op) override {
    const HwInstruction& h = find_hw_instruction(op->intrin);
    bool warp = false;
    for (const HwOperand& o : h.operands) warp |= o.scope == MemScope::kWarp;
    user_check(!warp || lane_depth_ == 0)
        << "'" << op->intrin << "' is a warp-wide instruction (all 32 lanes take part) but runs inside a loop bound "
        << "to threadIdx.x, the lanes: tensorize a stage computed at a loop outside the lanes";
    for (const auto& o : op->operands) used_.insert(o.buffer.node());  // cp.async reads global arguments
    IRVisitor::visit_TensorIntrinCall(op);
  }

  void visit_ThreadAllReduce(const ThreadAllReduceNode* op) override {
    const int d = thread_index_dim(op->thread_tag);
    internal_assert(d >= 0) << "a cross-thread reduction along " << op->thread_tag;
    allreduces_.emplace_back(allreduce_value_type(op->value.dtype()), d);
    IRVisitor::visit_ThreadAllReduce(op);
  }

  void visit_Load(const LoadNode* op) override {
    used_.insert(op->buffer.node());
    IRVisitor::visit_Load(op);
  }
  void visit_Store(const StoreNode* op) override {
    used_.insert(op->buffer.node());
    IRVisitor::visit_Store(op);
  }

 private:
  void check_limits(const GpuKernel& k) const {
    const int64_t threads = k.block[0] * k.block[1] * k.block[2];
    std::ostringstream names;
    for (int d = 0; d < 3; ++d)
      if (!block_names_[d].empty())
        names << (names.tellp() > 0 ? ", " : "") << "threadIdx." << kDims[d] << ": '" << block_names_[d] << "'";
    user_check(threads <= limits_.max_threads_per_block)
        << "the block has " << dims_text(k.block) << " = " << threads << " threads (" << names.str() << "); "
        << limits_.arch << " allows at most " << limits_.max_threads_per_block << " threads per block";
    for (int d = 0; d < 3; ++d) {
      user_check(k.block[d] <= limits_.max_block_dim[d])
          << "loop '" << block_names_[d] << "' bound to threadIdx." << kDims[d] << " has " << k.block[d]
          << " iterations; " << limits_.arch << " allows at most " << limits_.max_block_dim[d];
      user_check(k.grid[d] <= limits_.max_grid_dim[d])
          << "loop '" << grid_names_[d] << "' bound to blockIdx." << kDims[d] << " has " << k.grid[d] << " iterations; "
          << limits_.arch << " allows at most " << limits_.max_grid_dim[d] << " blocks along " << kDims[d];
    }
    user_check(k.shared_bytes + k.mbarrier_bytes <= limits_.max_shared_optin_per_block)
        << "the block needs " << k.shared_bytes + k.mbarrier_bytes << " bytes of shared memory (" << shared_list_
        << "); " << limits_.arch << " allows at most " << limits_.max_shared_optin_per_block
        << " bytes per block (dynamic shared memory, opted in): use smaller tiles";
  }

  const GpuLimits& limits_;
  const std::vector<BufferArg>& args_;
  std::array<int64_t, 3> grid_{{1, 1, 1}}, block_{{1, 1, 1}};
  std::array<std::string, 3> grid_names_, block_names_;
  std::map<std::string, std::string> on_path_;
  std::unordered_set<const VarNode*> used_;
  std::vector<std::pair<DType, int>> allreduces_;  // element type, block dimension
  std::string shared_list_, first_loop_;
  int plain_depth_ = 0, thread_depth_ = 0, lane_depth_ = 0;
  std::string first_warp_buffer_;
  bool bound_any_ = false;
};

}  // namespace

AllreduceStrategy allreduce_strategy(int dim, const std::array<int64_t, 3>& block) {
  const int64_t group = block[dim];
  if (dim == 0 && group <= 32 && (group & (group - 1)) == 0) return AllreduceStrategy::kWarpShuffle;
  if (dim == 0 && group % 32 == 0) return AllreduceStrategy::kWarpsThenShared;
  return AllreduceStrategy::kSharedTree;
}

DType allreduce_value_type(DType t) { return t.is_float() && t.bits == 16 ? DType::f32() : t; }

int64_t allreduce_scratch_elems(AllreduceStrategy s, const std::array<int64_t, 3>& block) {
  const int64_t threads = block[0] * block[1] * block[2];
  switch (s) {
    case AllreduceStrategy::kWarpShuffle:
      return 0;
    case AllreduceStrategy::kWarpsThenShared:
      return threads / 32;
    case AllreduceStrategy::kSharedTree:
      return threads;
  }
  return threads;
}

int thread_index_dim(const std::string& tag) { return tag_dim(tag, "threadIdx."); }
int block_index_dim(const std::string& tag) { return tag_dim(tag, "blockIdx."); }

std::vector<Stmt> kernel_nests(const Stmt& body) {
  if (auto* seq = body.as<SeqNode>()) return seq->seq;
  return {body};
}

std::array<int64_t, 3> block_extents(const Stmt& kernel) {
  std::array<int64_t, 3> block{{1, 1, 1}};
  post_order_visit(kernel, [&](const Ref<Object>& n) {
    if (n->kind() != NodeKind::For) return;
    auto* f = static_cast<const ForNode*>(n.get());
    const int d = f->for_kind == ForKind::kThreadBinding ? thread_index_dim(f->thread_tag) : -1;
    const int64_t* e = as_const_int(f->extent);
    if (d >= 0 && e) block[d] = std::max(block[d], *e);
  });
  return block;
}

std::vector<GpuKernel> gpu_kernels(const LoweredFunc& f, const GpuLimits& limits) {
  Stmt body = f.body;
  user_check(!body.as<AllocateNode>())
      << "function '" << f.name << "' keeps an intermediate ('" << body.as<AllocateNode>()->buffer->name
      << "') in global memory between kernels, which kiln's cuda backend does not allocate yet: compute it inline "
      << "or at a loop of its consumer";
  std::vector<GpuKernel> kernels;
  for (const Stmt& nest : kernel_nests(body)) {
    GpuKernel k;
    k.body = nest;
    KernelScanner(limits, f.args).scan(nest, &k);
    kernels.push_back(k);
  }
  return kernels;
}

}  // namespace kiln
