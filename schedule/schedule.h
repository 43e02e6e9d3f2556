// Schedules: how each stage (operation) of a tensor-expression graph is
// computed. A Schedule is a mutable object built by create_schedule() and
// changed by primitives on its stages (TVM-style), then turned into loop IR
// by lower(). Every misuse of a primitive is a user_error that names the
// stage and the axis.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "compute/stmt.h"
#include "compute/tensor.h"
#include "compute/tensor_intrin.h"

namespace kiln {

// How a derived axis relates to the axes it comes from.
struct IterVarRelation {
  enum Kind { kSplit, kFuse } kind;
  // kSplit: parent -> (outer, inner), inner has extent `factor` (or outer has
  // extent `nparts` when split by parts).
  IterVar parent, outer, inner;
  int64_t factor = 0, nparts = 0;
  // kFuse: (outer, inner) -> fused.
  IterVar fused;
};

// Which fills of a warp-specialized pipeline move by bulk copies (sm_90).
enum class BulkCopies : uint8_t { kOff = 0, kWhereTheyFit = 1, kEveryFill = 2 };
// How they move a fill: a bulk copy per row, or one tensor copy per box
// through a tensor map of the source (TMA), rows where a fill is no box.
enum class BulkCopyForm : uint8_t { kRows = 0, kTensorMaps = 1 };

// Annotations on a leaf axis.
struct IterVarAttr {
  ForKind for_kind = ForKind::kSerial;
  std::string thread_tag;  // for ForKind::kThreadBinding
  std::vector<std::pair<std::string, Expr>> pragmas;
  // Set by tensorize: the loops from this axis inward are replaced by the
  // intrinsic (compute/tensor_intrin.h, matched in schedule/tensorize.h).
  TensorIntrin tensor_intrin;
  // Set by pipeline: software-pipeline this loop with that many stages.
  int pipeline_stages = 0;
  // Set by pipeline: that many producer warps fill the slots (GPU warp
  // specialization); 0 lets every thread both fill and compute.
  int producer_warps = 0;
  // Set by pipeline: which fills the producer warps move by bulk copies.
  BulkCopies bulk_copies = BulkCopies::kOff;
  BulkCopyForm bulk_copy_form = BulkCopyForm::kRows;
  // Set by mma_in_flight: that many iterations' wgmma products stay in flight.
  int mma_in_flight = 0;
  // Set by prefetch: tensors whose region `distance` iterations ahead each
  // iteration of this loop prefetches.
  std::vector<std::pair<Tensor, int>> prefetch;
};

// The most slots Stage::pipeline gives a loop.
constexpr int kMaxPipelineStages = 5;
// The most producer warps a warp-specialized pipeline gets.
constexpr int kMaxProducerWarps = 4;

enum class AttachType { kRoot, kInline, kScope };

class Schedule;
class StageNode;

// A handle to one stage of a schedule. Primitives return *this (or the new
// axes) so they can be chained.
class Stage {
 public:
  Stage() = default;
  explicit Stage(StageNode* n) : node_(n) {}
  StageNode* operator->() const { return node_; }
  StageNode* node() const { return node_; }
  bool defined() const { return node_ != nullptr; }
  bool operator==(const Stage& o) const { return node_ == o.node_; }
  bool operator!=(const Stage& o) const { return node_ != o.node_; }

  // Splits `parent` into (outer, inner) with inner extent `factor`. Any
  // extent works: a non-divisible tail is guarded.
  void split(const IterVar& parent, int64_t factor, IterVar* outer, IterVar* inner);
  // Splits `parent` into (outer, inner) with outer extent `nparts`.
  void split_nparts(const IterVar& parent, int64_t nparts, IterVar* outer, IterVar* inner);
  // Fuses two adjacent leaf axes (outer directly before inner) into one.
  IterVar fuse(const IterVar& outer, const IterVar& inner);
  // Fuses a run of adjacent leaf axes, outermost first.
  IterVar fuse(const std::vector<IterVar>& axes);
  // Puts the given leaf axes in this relative order (the positions they
  // occupy are kept; only their order among themselves changes).
  Stage& reorder(const std::vector<IterVar>& order);
  // split(x, xf), split(y, yf), reorder(xo, yo, xi, yi).
  void tile(const IterVar& x, const IterVar& y, int64_t x_factor, int64_t y_factor, IterVar* xo, IterVar* yo,
            IterVar* xi, IterVar* yi);
  Stage& vectorize(const IterVar& iv);
  Stage& unroll(const IterVar& iv);
  Stage& parallel(const IterVar& iv);
  // GPU: binds the axis to a thread index ("blockIdx.x", "threadIdx.y", ...).
  Stage& bind(const IterVar& iv, const std::string& thread_tag);
  Stage& pragma(const IterVar& iv, const std::string& name, Expr value = Expr(1));
  // Replaces the loop nest from `iv` inward by the tensor intrinsic, which
  // must compute what those loops compute (checked when lowering, with a
  // user error that says what differs). A reduction whose loops also run
  // outside `iv` is split into the intrinsic's reset (before them) and
  // update (the call).
  Stage& tensorize(const IterVar& iv, const TensorIntrin& intrin);
  // Software-pipelines the loop `iv` with `stages` buffer slots (1 to 5; 1
  // leaves it as it is): the stages computed at `iv` (its loads) fill slot
  // i % stages for iteration i, and the fills of iteration i + stages - 1
  // are issued before the compute of iteration i, with a prologue that
  // fills the first stages - 1 slots. Push and pop of dependency tokens
  // order the fills and the compute (schedule/passes/inject_pipeline.h);
  // on a GPU the fills become asynchronous copies where they can.
  // With `producer_warps` > 0 (GPU, sm_80 and later), the block gets that
  // many more warps along threadIdx.y, which only fill the slots while the
  // block's other warps only compute: the stages hand the slots over
  // through mbarriers instead of the block's barriers (warp
  // specialization; with 1 stage the two take turns on one slot). `iv`
  // must then sit in the loop bound to threadIdx.y.
  // With `bulk` (producer warps on sm_90), a fill that copies a box of
  // whole rows of 16-byte multiples, with no bounds guard, moves by
  // Hopper's bulk copy engine: one cp.async.bulk per row, issued by the
  // first producer warp's lanes, whose bytes the slot's full mbarrier
  // expects (schedule/passes/bulk_copy.h). kWhereTheyFit keeps cp.async for
  // the other fills (a tuning knob: every config stays valid); kEveryFill
  // makes a fill they cannot move a user error that says why. With
  // BulkCopyForm::kTensorMaps, a fill whose rows land one after another in
  // the slot, each within one row of its source, moves as a box of up to 256
  // rows by one cp.async.bulk.tensor through a tensor map of the source
  // (TMA), which the launch encodes; the other fills by rows.
  Stage& pipeline(const IterVar& iv, int stages, int producer_warps = 0, BulkCopies bulk = BulkCopies::kOff,
                  BulkCopyForm form = BulkCopyForm::kRows);
  // On a loop pipelined with producer warps and 2 or more stages, whose
  // compute is Hopper's warpgroup products (wgmma, sm_90a): the products of
  // `iterations` (0 or 1) iterations stay in flight on the tensor cores
  // while the next iteration's are issued, and each slot is released only
  // once the products that read it have retired (wgmma.wait_group 1; the
  // last ones are waited for after the loop). The slot the products in
  // flight read stays taken meanwhile, so the producer runs one slot less
  // ahead. 0 waits for each iteration's products before the next.
  Stage& mma_in_flight(const IterVar& iv, int iterations);
  // CPU: at the start of each iteration i of loop `iv`, prefetches (into L1)
  // the cache lines of tensor `t` that iteration i + distance reads
  // (distance >= 1; t is an input of this stage with storage: an argument
  // or a stage that is not inlined). Iterations with none ahead prefetch
  // nothing (schedule/passes/inject_prefetch.h).
  Stage& prefetch(const Tensor& t, const IterVar& iv, int distance);
  // CPU: this stage's contiguous vector stores into its buffer bypass the
  // caches (non-temporal stores, vmovntps on x86, wherever the store's
  // alignment allows one; masked tail stores stay plain), and the stage
  // ends with a store fence. For a large result written once and not read
  // back while it would still be cached: it then costs no read for
  // ownership and evicts nothing. The stage must keep its buffer in global
  // memory (not inlined, not local).
  Stage& stream_stores();
  // Double-buffers this stage, which must be computed at a loop of its
  // consumer: pipeline(that loop, 2).
  Stage& double_buffer();
  // Pads the row pitch of dimension `axis` of this stage's buffer so that
  // pitch % factor == offset (avoids bank/set conflicts).
  Stage& storage_align(int axis, int64_t factor, int64_t offset);
  // Stores the buffer's last two dimensions in tiles of rows x cols
  // elements, each tile one contiguous block (row-major), a column of tiles
  // one after another (so with 8 x 8 tiles of an R x C buffer, each panel
  // of 8 columns is R x 8 contiguous elements): the 8 x 8 "core
  // matrices" of 16-bit elements that Hopper's wgmma
  // reads from shared memory. The buffer's extents along them must be
  // constant multiples of the tile; no storage_align with it.
  Stage& storage_tile(int64_t rows, int64_t cols);
  // Stores the buffer's last two dimensions (R rows of C elements) in the
  // 128-byte swizzled layout of Hopper's wgmma and tensor maps
  // (row_bytes 128, the one kiln supports): the columns in strips of 128
  // bytes, each strip R rows of 128 bytes one after another, and within
  // each group of 8 rows the 16-byte chunk c of row r stored at chunk
  // c ^ (r % 8). Rows that 8 consecutive threads write or read at one
  // column then fall in different banks. R must be a constant multiple of
  // 8 and C of the strip's elements; no storage_align or storage_tile
  // with it.
  Stage& storage_swizzle(int64_t row_bytes);
  // Computes this stage inside the loop `iv` of `parent` (a consumer).
  Stage& compute_at(const Stage& parent, const IterVar& iv);
  // Substitutes this stage's expression into its consumers.
  Stage& compute_inline();
  // Computes this stage at the top level (the default).
  Stage& compute_root();
  Stage& set_scope(MemScope scope);

  // All leaf axes in loop order; the op's data-parallel and reduction axes.
  const std::vector<IterVar>& leaf_iter_vars() const;
  std::vector<IterVar> axis() const;
  std::vector<IterVar> reduce_axis() const;
  const std::string& name() const;

 private:
  StageNode* node_ = nullptr;
};

class StageNode {
 public:
  Operation op;                         // current op (rewritten by cache_read/cache_write/rfactor/inline)
  Operation origin_op;                  // the op the user created
  std::vector<IterVar> root_iter_vars;  // axis then reduce_axis of `op`
  std::vector<IterVar> all_iter_vars;   // root and derived
  std::vector<IterVar> leaf_iter_vars;
  std::vector<IterVarRelation> relations;
  std::unordered_map<const IterVarNode*, IterVarAttr> iter_attrs;
  AttachType attach_type = AttachType::kRoot;
  StageNode* attach_stage = nullptr;
  IterVar attach_ivar;
  MemScope scope = MemScope::kGlobal;
  std::vector<std::pair<int64_t, int64_t>> storage_align;  // per dim: (factor, offset), factor 0 = none
  std::vector<int64_t> storage_tile;                       // per dim: the tile's extent, 0 = not tiled
  int64_t storage_swizzle = 0;                             // bytes of a swizzled row (Stage::storage_swizzle), 0 = none
  bool is_output = false;
  bool is_placeholder = false;
  bool stream_stores = false;  // Stage::stream_stores
  Schedule* schedule = nullptr;
};

class Schedule {
 public:
  // A schedule with one stage per operation reachable from outputs.
  explicit Schedule(std::vector<Tensor> outputs);
  Schedule(const Schedule&) = delete;
  Schedule& operator=(const Schedule&) = delete;

  // The stage of a tensor (by its original or current op).
  Stage operator[](const Tensor& t) const;
  Stage operator[](const Operation& op) const;
  bool has_stage(const Operation& op) const;

  // A new stage that reads `t` into `scope` memory; `readers` read the copy.
  Tensor cache_read(const Tensor& t, MemScope scope, const std::vector<Operation>& readers);
  // A new stage computing `t`'s value in `scope` memory; `t` becomes a copy
  // from it. Returns the new (cache) tensor.
  Tensor cache_write(const Tensor& t, MemScope scope);
  // Factors the reduction of `t` along `axis` (a leaf of a split reduction
  // axis) into a new stage with that axis as an outer data-parallel
  // dimension; `t` then reduces over it. Returns the new tensor.
  Tensor rfactor(const Tensor& t, const IterVar& axis);

  const std::vector<Tensor>& outputs() const { return outputs_; }
  // Stages in dependency order (producers first).
  std::vector<Stage> stages() const;
  // The current op standing for a tensor the user holds.
  Operation current_op(const Tensor& t) const { return (*this)[t]->op; }

 private:
  friend class Stage;
  StageNode* add_stage(const Operation& op, size_t insert_at);
  size_t position_of(const StageNode* s) const;
  // Replaces, in the bodies of `readers`, reads of each key op by the value tensor.
  void rewrite_readers(const std::vector<StageNode*>& readers,
                       const std::unordered_map<const OperationNode*, Tensor>& replace);
  void set_op(StageNode* s, const Operation& op);

  std::vector<Tensor> outputs_;
  std::vector<std::unique_ptr<StageNode>> stages_;
  std::unordered_map<const OperationNode*, StageNode*> stage_map_;
  // Ops a stage no longer computes (replaced by set_op), kept alive: their
  // keys stay in stage_map_, and a freed op's address could be reused by a
  // new op (which would then map to the wrong stage).
  std::vector<Operation> replaced_ops_;
};

// Leaf axis of `iv` by name lookup helper for templates: finds the root axis
// of the stage whose var is named `name` (e.g. "C.i").
IterVar find_axis(const Stage& s, const std::string& name);

}  // namespace kiln
