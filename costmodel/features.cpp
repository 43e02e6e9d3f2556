// Feature extraction: one walk over the statement tree records, for every
// Store, the loop path above it; the hottest store's accesses are then
// analysed as affine functions of its loop variables (features.h gives the
// layout).
#include "costmodel/features.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "compute/analyzer.h"
#include "base/error.h"
#include "compute/ir_functor.h"
#include "compute/hw_instructions.h"
#include "schedule/gpu_kernels.h"

namespace kiln {

float feature_log(double x) { return static_cast<float>(std::log2(1.0 + std::fabs(x))); }

namespace {

using namespace features;

constexpr double kCacheLine = 64;
constexpr double kL1Bytes = 32 * 1024;
constexpr double kL2Bytes = 1024 * 1024;

struct Loop {
  const VarNode* var;
  int64_t extent;
  ForKind kind;
  int thread_dim = -1;  // 0..2 for threadIdx.x/y/z, -1 otherwise
  bool block = false;   // bound to a blockIdx
};

// GPU figures of the whole function (features.h, the GPU block).
struct GpuStats {
  bool gpu = false;
  double shared_bytes = 0;
  int allreduces = 0;
  // Over every global (shared) access, weighted by how often it runs: the
  // 32-byte sectors a warp's request touches (the bank conflict degree).
  double sector_sum = 0, sector_weight = 0;
  double conflict_sum = 0, conflict_weight = 0;
  // Vector lanes per thread and access (float4: 4), global and shared.
  double global_lanes_sum = 0, shared_lanes_sum = 0;
};

// One buffer access: its flat index as sum(coef[level] * loop var) + rest.
struct Access {
  const VarNode* buffer;
  int bytes;
  std::vector<double> coef;  // per loop level of the path (outermost first)
};

struct StoreRecord {
  std::vector<Loop> path;
  double executions = 1;
  std::vector<Access> accesses;  // [0] the store itself, then the loads in order of appearance
  std::vector<bool> guarded;     // per loop level: an enclosing if-condition uses its variable
  int guards = 0;                // enclosing if-conditions
  int arith_ops = 0;
  int loads = 0;
};

int kind_slot(ForKind k) {
  switch (k) {
    case ForKind::kSerial:
      return 0;
    case ForKind::kParallel:
    case ForKind::kThreadBinding:
      return 1;
    case ForKind::kVectorized:
      return 2;
    case ForKind::kUnrolled:
      return 3;
  }
  return 0;
}

class Collector {
 public:
  explicit Collector(const LoweredFunc& f) {
    for (auto& a : f.args) elem_bytes_[a.data.node()] = a.dtype.bytes();
    stmt(f.body);
  }

  bool found = false;
  StoreRecord hottest;
  double all_executions = 0;
  int num_stores = 0;
  int loop_kinds[4] = {0, 0, 0, 0};
  double local_bytes = 0, global_bytes = 0;
  // Latency hiding: the most slots of a pipelined loop, still marked on
  // the loop (the GPU passes pipeline after the depth features are taken
  // at) or on a lowered pipeline's fill (the CPU's), and the prefetches run.
  int pipeline_slots = 0;
  int producer_warps = 0;  // of a warp-specialized pipeline
  int bulk_copies = 0;     // 1 when its producer moves fills by bulk copies, 2 by tensor copies
  int mma_in_flight = 0;   // iterations of wgmma products it keeps in flight
  int swizzled_operands = 0;  // of a wgmma call, the most read 128-byte swizzled
  double prefetches = 0;
  double streamed_bytes = 0;  // stored by streaming stores (Stage::stream_stores)
  GpuStats gpu;

 private:
  void stmt(const Stmt& s) {
    if (!s.defined()) return;
    switch (s->kind()) {
      case NodeKind::For: {
        auto* op = s.as<ForNode>();
        int64_t ext = extent_of(op->extent);
        analyzer_.bind(op->loop_var, Range(op->min, op->extent));
        ++loop_kinds[kind_slot(op->for_kind)];
        depth_[op->loop_var.node()] = static_cast<int>(path_.size());
        Loop loop{op->loop_var.node(), ext, op->for_kind};
        if (op->for_kind == ForKind::kThreadBinding) {
          gpu.gpu = true;
          loop.thread_dim = thread_index_dim(op->thread_tag);
          loop.block = block_index_dim(op->thread_tag) >= 0;
          // A loop bound to a thread index already bound on the path (a
          // shared fill inside the output's thread loops) shares the
          // hardware index: each thread runs its body once, not `ext` times.
          for (const Loop& outer : path_)
            if (loop.thread_dim >= 0 && outer.thread_dim == loop.thread_dim) loop.extent = 1;
        }
        path_.push_back(loop);
        stmt(op->body);
        path_.pop_back();
        depth_.erase(op->loop_var.node());
        return;
      }
      case NodeKind::Prefetch: {
        double executions = 1;
        for (const Loop& l : path_) executions *= static_cast<double>(l.extent);
        prefetches += executions;
        return;
      }
      case NodeKind::Allocate: {
        auto* op = s.as<AllocateNode>();
        // A CUDA kernel holds f16/bf16 registers as f32 (codegen/cuda_codegen.h).
        const bool f32_registers = gpu.gpu && op->scope == MemScope::kLocal && op->dtype.is_float() && op->dtype.bits == 16;
        double n = (f32_registers ? 4 : op->dtype.bytes()) * op->dtype.lanes;
        for (auto& e : op->extents) n *= static_cast<double>(extent_of(e));
        if (op->scope == MemScope::kWarp) n /= 32;  // a fragment: each lane holds 1/32 of it
        (op->scope == MemScope::kGlobal ? global_bytes : local_bytes) += n;
        if (op->scope == MemScope::kShared) {
          gpu.shared_bytes += n;
          shared_.insert(op->buffer.node());
        }
        if (op->scope != MemScope::kGlobal) on_chip_.insert(op->buffer.node());
        elem_bytes_[op->buffer.node()] = op->dtype.bytes();
        stmt(op->body);
        return;
      }
      case NodeKind::Store:
        store(s.as<StoreNode>());
        return;
      case NodeKind::Seq:
        for (auto& c : s.as<SeqNode>()->seq) stmt(c);
        return;
      case NodeKind::IfThenElse: {
        auto* op = s.as<IfThenElseNode>();
        guards_.push_back(op->condition);
        stmt(op->then_case);
        stmt(op->else_case);
        guards_.pop_back();
        return;
      }
      case NodeKind::LetStmt: {
        auto* op = s.as<LetStmtNode>();
        lets_[op->var.node()] = op->value;
        if (op->var.dtype().is_int()) analyzer_.bind(op->var, op->value);
        stmt(op->body);
        lets_.erase(op->var.node());
        return;
      }
      case NodeKind::AttrStmt: {
        auto* a = s.as<AttrStmtNode>();
        const int64_t* v = as_const_int(a->value);
        if (v && (a->key == attr::kPipelineStages || a->key == attr::kPipelineFill))
          pipeline_slots = std::max<int>(pipeline_slots, static_cast<int>(*v));
        if (v && a->key == attr::kWarpSpecialized && a->node.defined() && a->node.as<IterVarNode>())
          producer_warps = std::max<int>(producer_warps, static_cast<int>(*v));  // the schedule's mark
        if (v && a->key == attr::kBulkCopies && *v > 0) bulk_copies = (*v & 4) ? 2 : 1;
        if (v && a->key == attr::kMmaInFlight) mma_in_flight = std::max<int>(mma_in_flight, static_cast<int>(*v));
        auto* streamed = a->key == attr::kStreamStores && a->node.defined() ? a->node.as<VarNode>() : nullptr;
        if (streamed) ++streamed_[streamed];
        stmt(a->body);
        if (streamed && --streamed_[streamed] == 0) streamed_.erase(streamed);
        return;
      }
      case NodeKind::Realize:
        stmt(s.as<RealizeNode>()->body);
        return;
      case NodeKind::ThreadAllReduce:
        ++gpu.allreduces;
        return;
      case NodeKind::TensorIntrinCall:
        intrinsic_call(s.as<TensorIntrinCallNode>());
        return;
      default:  // Evaluate, Barrier, Provide: nothing to count
        return;
    }
  }

  // A symbolic extent (a tail loop) counts as its upper bound; one that is
  // not bounded by the enclosing loops counts as 1.
  int64_t extent_of(const Expr& e) {
    int64_t v;
    if (as_const_int(e, &v)) return std::max<int64_t>(v, 1);
    ConstIntBound b = analyzer_.const_int_bound(e);
    if (b.max_value >= std::numeric_limits<int32_t>::max() || b.max_value < 1) return 1;
    return b.max_value;
  }

  int bytes_of(const Var& buffer, DType fallback) const {
    auto it = elem_bytes_.find(buffer.node());
    return it != elem_bytes_.end() ? it->second : fallback.bytes();
  }

  // A hardware instruction (a tensorized nest) counts as a vector store of
  // its written operand (its accumulator, one execution per element)
  // reading the others: its multiply-adds per element as its arithmetic.
  void intrinsic_call(const TensorIntrinCallNode* op) {
    const HwInstruction* h = nullptr;
    for (const HwInstruction& i : hw_instructions())
      if (i.name == op->intrin) h = &i;
    if (!h || op->operands.empty()) return;
    StoreRecord r;
    int64_t acc_extent = 1, read_extent = 1;
    // A bulk copy's run is its call's extent (its entry has none).
    const bool run = op->intrin.rfind(kCudaBulkCopyPrefix, 0) == 0;
    for (size_t k = 0; k < op->operands.size() && k < h->operands.size(); ++k) {
      const auto& o = op->operands[k];
      int64_t extent = h->operands[k].extent;
      if (run) as_const_int(o.extent, &extent);
      if (h->operands[k].written) {
        r.accesses.insert(r.accesses.begin(), access(o.buffer, bytes_of(o.buffer, h->operands[k].dtype), o.offset));
        acc_extent = extent;
      } else {
        ++r.loads;
        r.accesses.push_back(access(o.buffer, bytes_of(o.buffer, h->operands[k].dtype), o.offset));
        read_extent = std::max(read_extent, extent);
      }
    }
    // A wgmma call makes `steps` (its last scalar) k steps of 16 per
    // accumulator, each what one mma.m16n8k16 is to its 16 x 8 (a's 256
    // elements per 128 accumulators), though its operands have no extent.
    int64_t steps = 0;
    if (op->intrin.rfind(kCudaWgmmaPrefix, 0) == 0 && !op->scalars.empty() && as_const_int(op->scalars.back(), &steps))
      read_extent = acc_extent * 2 * steps;
    // Its operands read in the 128-byte swizzle (scalars a_swizzle, b_swizzle).
    swizzled_operands = std::max(swizzled_operands, static_cast<int>(cuda_wgmma_reads_swizzled(*op, 1)) +
                                                        static_cast<int>(cuda_wgmma_reads_swizzled(*op, 2)));
    r.arith_ops = static_cast<int>(2 * std::max<int64_t>(1, read_extent / std::max<int64_t>(1, acc_extent)));
    // Counted per accumulator element, as a vectorized store counts lanes.
    const double executions = count_store(static_cast<double>(acc_extent));
    r.executions = executions;
    consider(std::move(r), executions);
  }

  // Counts a store executed `per_path` times per iteration of the current
  // path; its executions.
  double count_store(double per_path) {
    ++num_stores;
    double executions = per_path;
    for (auto& l : path_) executions *= static_cast<double>(l.extent);
    all_executions += executions;
    return executions;
  }

  void store(const StoreNode* op) {
    StoreRecord r;
    const double executions = count_store(1);
    r.executions = executions;
    r.accesses.push_back(access(op->buffer, bytes_of(op->buffer, op->value.dtype()), op->index));
    if (streamed_.count(op->buffer.node()))
      streamed_bytes += executions * bytes_of(op->buffer, op->value.dtype()) * op->value.dtype().lanes;
    scan(op->value, &r);
    consider(std::move(r), executions);
  }

  // A store (or instruction call) on the current path: GPU access figures,
  // and the hottest so far (most executions, then most loads).
  void consider(StoreRecord r, double executions) {
    if (gpu.gpu) warp_access_stats(r, executions);
    bool better =
        !found || executions > hottest.executions || (executions == hottest.executions && r.loads > hottest.loads);
    if (!better) return;
    r.path = path_;
    r.guards = static_cast<int>(guards_.size());
    r.guarded.assign(path_.size(), false);
    for (auto& cond : guards_)
      for (size_t l = 0; l < path_.size(); ++l) r.guarded[l] = r.guarded[l] || uses_var(cond, path_[l].var);
    hottest = std::move(r);
    found = true;
  }

  // How a warp's 32 threads (adjacent threadIdx.x) access each buffer of a
  // store: global accesses by the 32-byte sectors one request touches,
  // shared ones by their bank conflict degree (4-byte banks, 32 of them).
  void warp_access_stats(const StoreRecord& r, double executions) {
    int tx = -1;
    for (size_t l = 0; l < path_.size(); ++l)
      if (path_[l].thread_dim == 0) tx = static_cast<int>(l);
    const bool vec = !path_.empty() && path_.back().kind == ForKind::kVectorized;
    for (const Access& a : r.accesses) {
      const double stride = tx >= 0 ? std::fabs(a.coef[tx]) * a.bytes : 0;  // bytes between adjacent threads
      const double lanes = vec && a.coef.back() == 1 ? static_cast<double>(path_.back().extent) : 1;
      const double bytes = lanes * a.bytes;  // per thread and request
      if (shared_.count(a.buffer)) {
        // Threads whose words fall in one bank at different addresses
        // serialize: gcd(stride in words, 32) of them; a broadcast is free.
        const int words = static_cast<int>(stride / 4);
        const double degree = words == 0 ? 1 : static_cast<double>(std::gcd(words, 32));
        gpu.conflict_sum += degree * executions;
        gpu.conflict_weight += executions;
        gpu.shared_lanes_sum += lanes * executions;
      } else if (!on_chip_.count(a.buffer)) {
        const double span = 31 * stride + bytes;
        const double sectors = std::min(std::ceil(span / 32), 32 * std::ceil(bytes / 32));
        gpu.sector_sum += sectors * executions;
        gpu.sector_weight += executions;
        gpu.global_lanes_sum += lanes * executions;
      }
    }
  }

  Access access(const Var& buffer, int bytes, const Expr& index) {
    Access a{buffer.node(), bytes, std::vector<double>(path_.size(), 0.0)};
    linear(index, 1.0, &a.coef, 0);
    return a;
  }

  // Loads and arithmetic of a stored value (not of load indices).
  void scan(const Expr& e, StoreRecord* r) {
    if (!e.defined()) return;
    NodeKind k = e->kind();
    if (k == NodeKind::Load) {
      auto* op = e.as<LoadNode>();
      ++r->loads;
      r->accesses.push_back(access(op->buffer, bytes_of(op->buffer, op->dtype), op->index));
      return;
    }
    if (is_binary_kind(k)) {
      auto* op = static_cast<const BinaryNode*>(e.get());
      ++r->arith_ops;
      scan(op->a, r);
      scan(op->b, r);
      return;
    }
    switch (k) {
      case NodeKind::Not:
        scan(e.as<NotNode>()->a, r);
        return;
      case NodeKind::Select: {
        auto* op = e.as<SelectNode>();
        scan(op->condition, r);
        scan(op->true_value, r);
        scan(op->false_value, r);
        return;
      }
      case NodeKind::Cast:
        scan(e.as<CastNode>()->value, r);
        return;
      case NodeKind::Call:
        ++r->arith_ops;
        for (auto& a : e.as<CallNode>()->args) scan(a, r);
        return;
      case NodeKind::Broadcast:
        scan(e.as<BroadcastNode>()->value, r);
        return;
      case NodeKind::Let: {
        auto* op = e.as<LetNode>();
        scan(op->value, r);
        lets_[op->var.node()] = op->value;
        scan(op->body, r);
        lets_.erase(op->var.node());
        return;
      }
      default:
        return;
    }
  }

  // Adds scale * (the linear part of e in the path's loop variables) to
  // coef. Non-affine parts are approximated: floordiv by c scales by 1/c,
  // floormod by c drops coefficients that are multiples of c, min/max and
  // select follow their non-constant / true operand.
  void linear(const Expr& e, double scale, std::vector<double>* coef, int let_depth) {
    if (!e.defined() || let_depth > 16) return;
    switch (e->kind()) {
      case NodeKind::Var: {
        auto* v = e.as<VarNode>();
        auto d = depth_.find(v);
        if (d != depth_.end()) {
          (*coef)[d->second] += scale;
          return;
        }
        auto l = lets_.find(v);
        if (l != lets_.end()) linear(l->second, scale, coef, let_depth + 1);
        return;
      }
      case NodeKind::Add: {
        auto* op = e.as<AddNode>();
        linear(op->a, scale, coef, let_depth);
        linear(op->b, scale, coef, let_depth);
        return;
      }
      case NodeKind::Sub: {
        auto* op = e.as<SubNode>();
        linear(op->a, scale, coef, let_depth);
        linear(op->b, -scale, coef, let_depth);
        return;
      }
      case NodeKind::Mul: {
        auto* op = e.as<MulNode>();
        int64_t c;
        if (as_const_int(op->b, &c)) {
          linear(op->a, scale * static_cast<double>(c), coef, let_depth);
        } else if (as_const_int(op->a, &c)) {
          linear(op->b, scale * static_cast<double>(c), coef, let_depth);
        }
        return;
      }
      case NodeKind::Div:
      case NodeKind::FloorDiv: {
        auto* op = static_cast<const BinaryNode*>(e.get());
        int64_t c;
        if (as_const_int(op->b, &c) && c != 0) linear(op->a, scale / static_cast<double>(c), coef, let_depth);
        return;
      }
      case NodeKind::Mod:
      case NodeKind::FloorMod: {
        auto* op = static_cast<const BinaryNode*>(e.get());
        int64_t c;
        if (!as_const_int(op->b, &c) || c == 0) return;
        std::vector<double> inner(coef->size(), 0.0);
        linear(op->a, 1.0, &inner, let_depth);
        for (size_t i = 0; i < inner.size(); ++i) {
          double q = inner[i] / static_cast<double>(c);
          if (q != std::floor(q)) (*coef)[i] += scale * inner[i];
        }
        return;
      }
      case NodeKind::Min:
      case NodeKind::Max: {
        auto* op = static_cast<const BinaryNode*>(e.get());
        linear(as_const_int(op->a) ? op->b : op->a, scale, coef, let_depth);
        return;
      }
      case NodeKind::Select:
        linear(e.as<SelectNode>()->true_value, scale, coef, let_depth);
        return;
      case NodeKind::Cast:
        linear(e.as<CastNode>()->value, scale, coef, let_depth);
        return;
      case NodeKind::Ramp:
        linear(e.as<RampNode>()->base, scale, coef, let_depth);
        return;
      case NodeKind::Broadcast:
        linear(e.as<BroadcastNode>()->value, scale, coef, let_depth);
        return;
      case NodeKind::Let: {
        auto* op = e.as<LetNode>();
        lets_[op->var.node()] = op->value;
        linear(op->body, scale, coef, let_depth);
        lets_.erase(op->var.node());
        return;
      }
      default:  // constants, loads (indirect indices), anything non-affine
        return;
    }
  }

  std::vector<Loop> path_;
  std::vector<Expr> guards_;
  std::unordered_map<const VarNode*, int> depth_;
  std::unordered_map<const VarNode*, Expr> lets_;
  std::unordered_map<const VarNode*, int> elem_bytes_;
  std::unordered_map<const VarNode*, int> streamed_;     // buffers in an enclosing stream_stores region
  std::unordered_set<const VarNode*> shared_, on_chip_;  // shared; shared or local
  Analyzer analyzer_;
};

// The buffers of the hottest store in slot order (features.h).
struct BufferSlot {
  const Access* first;  // defines the index
  int accesses;         // per innermost iteration
};

std::vector<BufferSlot> buffer_slots(const StoreRecord& r) {
  std::vector<BufferSlot> slots;
  for (auto& a : r.accesses) {
    auto it =
        std::find_if(slots.begin(), slots.end(), [&](const BufferSlot& s) { return s.first->buffer == a.buffer; });
    if (it != slots.end()) {
      ++it->accesses;
    } else if (static_cast<int>(slots.size()) < kBuffers) {
      slots.push_back(BufferSlot{&a, 1});
    }
  }
  return slots;
}

struct Footprint {
  double elements = 1;  // distinct elements
  double lines = 1;     // distinct cache lines
};

// Distinct elements and cache lines an access touches while the loops at
// levels >= from vary. Loops with equal strides overlap (i + r in a
// convolution); a smaller stride inside a larger span interleaves.
Footprint footprint(const Access& a, const std::vector<Loop>& path, size_t from) {
  std::vector<std::pair<double, double>> groups;  // (stride, extent)
  for (size_t l = from; l < path.size(); ++l) {
    double c = std::fabs(a.coef[l]), e = static_cast<double>(path[l].extent);
    if (c == 0 || e <= 1) continue;
    if (c < 1) {  // floordiv: the index moves every 1/c iterations
      e = std::floor(c * (e - 1)) + 1;
      c = 1;
    }
    groups.emplace_back(c, e);
  }
  std::sort(groups.begin(), groups.end());
  Footprint f;
  double span = 1, run = 1;
  bool dense = true;
  for (size_t i = 0; i < groups.size();) {
    double c = groups[i].first, e = groups[i].second;
    for (++i; i < groups.size() && groups[i].first == c; ++i) e += groups[i].second - 1;
    double new_span = span + c * (e - 1);
    if (dense && c <= span) {
      f.elements = new_span;
      run = new_span;
    } else {
      f.elements = c >= span ? f.elements * e : std::min(f.elements * e, new_span);
      dense = false;
    }
    span = new_span;
  }
  double per_line = std::max(1.0, kCacheLine / a.bytes);
  double blocks = f.elements / run;
  f.lines = std::min(blocks * std::ceil(run / per_line), std::ceil(span / per_line) + 1);
  f.lines = std::max(1.0, std::min(f.lines, f.elements));
  return f;
}

// What the feature groups share about the hottest store's loop path.
struct PathSummary {
  const StoreRecord* r;
  const std::vector<Loop>* path;
  int n;                            // loops on the path
  std::vector<BufferSlot> bufs;     // buffer slots
  std::vector<double> inner;        // [l]: iterations of one run of loop l (inner[n] = 1)
  std::vector<double> working_set;  // [l]: bytes all buffers touch in one run of loop l
  int fit_l1 = 0, fit_l2 = 0;       // innermost loops whose working set fits
  int run = 0;                      // first level of the innermost vectorized/unrolled run
  double lanes = 1;                 // vector lanes of the innermost loop

  explicit PathSummary(const StoreRecord& rec)
      : r(&rec), path(&rec.path), n(static_cast<int>(rec.path.size())), bufs(buffer_slots(rec)) {
    const std::vector<Loop>& p = *path;
    inner.assign(n + 1, 1.0);
    for (int l = n - 1; l >= 0; --l) inner[l] = inner[l + 1] * static_cast<double>(p[l].extent);
    working_set.assign(n, 0.0);
    bool in_l1 = true, in_l2 = true;
    for (int l = n - 1; l >= 0; --l) {
      for (auto& b : bufs) working_set[l] += footprint(*b.first, p, l).elements * b.first->bytes;
      in_l1 = in_l1 && working_set[l] <= kL1Bytes;
      in_l2 = in_l2 && working_set[l] <= kL2Bytes;
      fit_l1 += in_l1;
      fit_l2 += in_l2;
    }
    run = n;
    while (run > 0 && (p[run - 1].kind == ForKind::kVectorized || p[run - 1].kind == ForKind::kUnrolled)) --run;
    // Only explicit vectorization counts: whether LLVM vectorizes a serial
    // loop depends on the code generator's settings (measured: counting
    // unit-stride serial loops as vectors did not rank better).
    if (n > 0 && p[n - 1].kind == ForKind::kVectorized) lanes = static_cast<double>(p[n - 1].extent);
  }

  // Bytes brought into a cache that holds the `fit` innermost loops' data:
  // the lines those loops touch, once per entry of the outermost of them;
  // every access's bytes when not even the innermost loop fits.
  double traffic(int fit) const {
    double total = 0;
    int level = n - fit;
    for (auto& b : bufs) {
      if (fit == 0) {
        total += b.accesses * inner[0] * b.first->bytes;
      } else {
        total += r->executions / inner[level] * footprint(*b.first, *path, level).lines * kCacheLine;
      }
    }
    return total;
  }
};

void fill_loop_slots(const PathSummary& s, float* out) {
  const std::vector<Loop>& path = *s.path;
  double outer = 1;
  for (int l = 0; l < s.n; ++l) {
    outer *= static_cast<double>(path[l].extent);
    int slot = s.n - 1 - l;
    if (slot >= kLoopSlots) continue;
    float* p = out + loop_offset(slot);
    p[0] = 1;
    p[1] = feature_log(static_cast<double>(path[l].extent));
    p[2] = static_cast<float>(l);
    p[3 + kind_slot(path[l].kind)] = 1;
    p[7] = feature_log(s.inner[l]);
    p[8] = feature_log(outer);
    p[9] = feature_log(s.working_set[l]);
    p[10] = s.r->guarded[l] ? 1.0f : 0.0f;
    for (size_t b = 0; b < s.bufs.size(); ++b) {
      float* q = out + buffer_offset(slot, static_cast<int>(b));
      const Access& a = *s.bufs[b].first;
      Footprint fp = footprint(a, path, l);
      double count = s.bufs[b].accesses * s.inner[l];
      q[0] = feature_log(a.coef[l]);
      q[1] = feature_log(fp.elements * a.bytes);
      q[2] = feature_log(fp.lines);
      q[3] = feature_log(count);
      q[4] = feature_log(count / fp.elements);
    }
  }
}

void fill_globals(const PathSummary& s, const Collector& c, float* g) {
  const std::vector<Loop>& path = *s.path;
  const StoreRecord& r = *s.r;
  const int n = s.n;
  double parallel = 0, unrolled = 0;  // products; 0 when there is no such loop
  int vec_level = -1;
  for (int l = n - 1; l >= 0; --l) {
    ForKind k = path[l].kind;
    double e = static_cast<double>(path[l].extent);
    if (k == ForKind::kParallel || k == ForKind::kThreadBinding) parallel = parallel == 0 ? e : parallel * e;
    if (k == ForKind::kUnrolled) unrolled = unrolled == 0 ? e : unrolled * e;
    if (k == ForKind::kVectorized && vec_level < 0) vec_level = l;
  }
  g[0] = feature_log(r.executions);
  g[1] = static_cast<float>(n);
  g[2] = feature_log(c.all_executions);
  g[3] = feature_log(c.all_executions - r.executions);
  g[4] = static_cast<float>(c.num_stores);
  for (int k = 0; k < 4; ++k) g[5 + k] = static_cast<float>(c.loop_kinds[k]);
  g[9] = feature_log(parallel);
  g[10] = n > 0 && kind_slot(path[0].kind) == 1 ? 1.0f : 0.0f;
  g[11] = vec_level >= 0 ? feature_log(static_cast<double>(path[vec_level].extent)) : 0.0f;
  g[12] = n > 0 && path[n - 1].kind == ForKind::kVectorized ? 1.0f : 0.0f;
  g[13] = feature_log(unrolled);
  g[14] = s.run < n ? feature_log(s.inner[s.run]) : 0.0f;
  g[15] = feature_log(c.local_bytes);
  g[16] = feature_log(c.global_bytes);
  g[17] = static_cast<float>(r.arith_ops);
  g[18] = static_cast<float>(r.loads);
  g[19] = static_cast<float>(s.fit_l1);
  g[20] = static_cast<float>(s.fit_l2);
  g[21] = feature_log(std::max(0, n - kLoopSlots));
  g[22] = feature_log(s.traffic(s.fit_l1));
  g[23] = feature_log(s.traffic(s.fit_l2));
  g[24] = feature_log(r.executions / s.lanes);
  if (!s.bufs.empty()) {
    const Access& st = *s.bufs[0].first;
    double acc = footprint(st, path, s.run).elements;
    double run_elements = 0;
    for (auto& b : s.bufs) run_elements += footprint(*b.first, path, s.run).elements;
    g[25] = feature_log(acc);
    g[26] = feature_log(std::ceil(acc * st.bytes / kCacheLine));
    g[27] = feature_log(s.inner[s.run] * static_cast<double>(s.bufs.size()) / run_elements);
    double per_vector = std::max(1.0, kCacheLine / st.bytes);
    g[31] = static_cast<float>(s.lanes / (std::ceil(s.lanes / per_vector) * per_vector));
  }
  g[28] = static_cast<float>(r.guards);
  g[29] = n > 0 && r.guarded[n - 1] ? 1.0f : 0.0f;
  g[30] = feature_log(r.executions / s.lanes / std::max(1.0, parallel));

  for (size_t b = 0; b < s.bufs.size(); ++b) {
    float* q = g + kGlobalBufferOffset + b * kGlobalBufferStride;
    const Access& a = *s.bufs[b].first;
    q[0] = feature_log(footprint(a, path, 0).elements * a.bytes);
    q[1] = feature_log(s.bufs[b].accesses * s.inner[0]);
    if (vec_level >= 0) {
      double stride = std::fabs(a.coef[vec_level]);
      q[stride == 0 ? 2 : stride == 1 ? 3 : 4] = 1;
    }
    // Reuse carried by the innermost loop the access does not depend on.
    for (int l = n - 1; l >= 0; --l) {
      if (a.coef[l] != 0 || path[l].extent <= 1) continue;
      q[5] = feature_log(s.inner[l + 1]);
      q[6] = feature_log(l + 1 < n ? s.working_set[l + 1] : 0.0);
      q[7] = feature_log(static_cast<double>(path[l].extent));
      break;
    }
    q[8] = feature_log(footprint(a, path, s.run).elements);
  }
}

}  // namespace

// The GPU block, with an H100's SM limits for the occupancy estimate (2048
// threads, 64 warps, 32 blocks, 228 KiB of shared memory and 64 Ki
// registers per SM, 132 SMs): what ranks configs on other GPUs as well.
void fill_gpu(const PathSummary& s, const Collector& c, float* g) {
  if (!c.gpu.gpu) return;
  double threads = 1, blocks = 1;
  for (const Loop& l : *s.path) {
    if (l.thread_dim >= 0) threads *= static_cast<double>(l.extent);
    if (l.block) blocks *= static_cast<double>(l.extent);
  }
  // Registers: the thread's local arrays plus a base for indices and addresses.
  const double registers = std::min(255.0, 24 + c.local_bytes / 4);
  const double warps = std::ceil(threads / 32);
  double per_sm = std::min({32.0, std::floor(64 / warps), std::floor(65536 / (registers * warps * 32))});
  if (c.gpu.shared_bytes > 0) per_sm = std::min(per_sm, std::floor(233472 / c.gpu.shared_bytes));
  per_sm = std::max(per_sm, 0.0);
  g[0] = 1;
  g[1] = feature_log(threads);
  g[2] = feature_log(blocks);
  g[3] = feature_log(c.gpu.shared_bytes);
  g[4] = static_cast<float>(std::min(1.0, per_sm * warps / 64));
  g[5] = feature_log(per_sm > 0 ? blocks / (132 * per_sm) : blocks);
  g[6] = feature_log(registers);
  g[7] = static_cast<float>(c.gpu.allreduces);
  g[8] = c.gpu.sector_weight > 0 ? feature_log(c.gpu.sector_sum / c.gpu.sector_weight) : 0.0f;
  g[9] = c.gpu.conflict_weight > 0 ? feature_log(c.gpu.conflict_sum / c.gpu.conflict_weight) : 0.0f;
  g[10] = c.gpu.sector_weight > 0 ? feature_log(c.gpu.global_lanes_sum / c.gpu.sector_weight) : 0.0f;
  g[11] = c.gpu.conflict_weight > 0 ? feature_log(c.gpu.shared_lanes_sum / c.gpu.conflict_weight) : 0.0f;
}

FeatureVector extract_features(const LoweredFunc& f) {
  FeatureVector out(kFeatureLength, 0.0f);
  Collector c(f);
  if (!c.found) return out;
  PathSummary s(c.hottest);
  fill_loop_slots(s, out.data());
  fill_globals(s, c, out.data() + kGlobalOffset);
  fill_gpu(s, c, out.data() + kGpuOffset);
  out[kLatencyOffset] = static_cast<float>(c.pipeline_slots);
  out[kLatencyOffset + 1] = feature_log(c.prefetches);
  out[kLatencyOffset + 2] = feature_log(c.streamed_bytes);
  out[kLatencyOffset + 3] = static_cast<float>(c.producer_warps);
  out[kLatencyOffset + 4] = static_cast<float>(c.bulk_copies);
  out[kLatencyOffset + 5] = static_cast<float>(c.mma_in_flight);
  out[kLatencyOffset + 6] = static_cast<float>(c.swizzled_operands);
  return out;
}

}  // namespace kiln
