// Statement nodes. Provide/Realize exist only before storage flattening;
// Store/Load/Allocate only after it. The GPU-facing pieces (thread-binding
// loops, memory scopes, barriers, tensor-intrinsic calls, double-buffer
// attributes) are part of the IR from the start even though only the LLVM CPU
// backend consumes the IR today.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compute/expr.h"

namespace kiln {

class StmtNode : public Object {
 public:
  explicit StmtNode(NodeKind k) : Object(k) {}
};

class Stmt : public Ref<StmtNode> {
 public:
  using Ref<StmtNode>::Ref;
  Stmt() = default;
  Stmt(const Ref<StmtNode>& r) : Ref<StmtNode>(r) {}  // NOLINT
};

enum class ForKind : uint8_t { kSerial, kParallel, kVectorized, kUnrolled, kThreadBinding };
const char* for_kind_name(ForKind k);

// kWarp: a tensor-core fragment. Its elements are spread over the 32 lanes
// of a warp (each lane holds 1/32 of them, in the instruction's layout), so
// only tensor intrinsics read and write it (cuda targets).
enum class MemScope : uint8_t { kGlobal, kShared, kLocal, kWarp };
const char* mem_scope_name(MemScope s);
MemScope parse_mem_scope(const std::string& s);  // user_error on unknown

class ForNode : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::For;
  ForNode(Var v, Expr mn, Expr ext, ForKind k, std::string tag, Stmt b)
      : StmtNode(kKind),
        loop_var(std::move(v)),
        min(std::move(mn)),
        extent(std::move(ext)),
        for_kind(k),
        thread_tag(std::move(tag)),
        body(std::move(b)) {}
  const Var loop_var;
  const Expr min, extent;
  const ForKind for_kind;
  const std::string thread_tag;  // "blockIdx.x", "threadIdx.y"... for kThreadBinding
  const Stmt body;
  static Stmt make(Var v, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag = "");
};

// A buffer of `dtype` elements, product(extents) of them, visible in body
// through the handle variable `buffer`.
class AllocateNode : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Allocate;
  AllocateNode(Var buf, DType t, std::vector<Expr> ext, MemScope s, Stmt b)
      : StmtNode(kKind), buffer(std::move(buf)), dtype(t), extents(std::move(ext)), scope(s), body(std::move(b)) {}
  const Var buffer;
  const DType dtype;
  const std::vector<Expr> extents;
  const MemScope scope;
  const Stmt body;
  static Stmt make(Var buf, DType t, std::vector<Expr> extents, MemScope scope, Stmt body);
};

// buffer[index] = value; vector index (Ramp) stores a vector. Optional
// predicate masks lanes off.
class StoreNode : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Store;
  StoreNode(Var buf, Expr v, Expr idx, Expr pred)
      : StmtNode(kKind),
        buffer(std::move(buf)),
        value(std::move(v)),
        index(std::move(idx)),
        predicate(std::move(pred)) {}
  const Var buffer;
  const Expr value, index, predicate;
  static Stmt make(Var buf, Expr value, Expr index, Expr pred = Expr());
};

class SeqNode : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Seq;
  explicit SeqNode(std::vector<Stmt> s) : StmtNode(kKind), seq(std::move(s)) {}
  const std::vector<Stmt> seq;
  // Flattens nested Seq and drops undefined entries; returns the single
  // statement when only one is left.
  static Stmt make(std::vector<Stmt> seq);
};

class IfThenElseNode : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::IfThenElse;
  IfThenElseNode(Expr c, Stmt t, Stmt e)
      : StmtNode(kKind), condition(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  const Expr condition;
  const Stmt then_case, else_case;  // else_case may be undefined
  static Stmt make(Expr c, Stmt then_case, Stmt else_case = Stmt());
};

class LetStmtNode : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::LetStmt;
  LetStmtNode(Var v, Expr val, Stmt b)
      : StmtNode(kKind), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  const Var var;
  const Expr value;
  const Stmt body;
  static Stmt make(Var v, Expr value, Stmt body);
};

class EvaluateNode : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Evaluate;
  explicit EvaluateNode(Expr v) : StmtNode(kKind), value(std::move(v)) {}
  const Expr value;
  static Stmt make(Expr v);
};

// Synchronizes the threads that share memory of `scope` (GPU __syncthreads).
class BarrierNode : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Barrier;
  explicit BarrierNode(MemScope s) : StmtNode(kKind), scope(s) {}
  const MemScope scope;
  static Stmt make(MemScope scope);
};

// GPU: combines `value` across the threads of a block that differ only in
// the thread index `thread_tag` (one reduction group each) with `combiner`,
// and writes the result into element 0 of the local buffer `result` of every
// thread of the group. Every thread of the block must reach it: it may
// contain barriers. The group is the block's whole extent along the tag.
class ThreadAllReduceNode : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::ThreadAllReduce;
  ThreadAllReduceNode(Combiner c, Expr v, Var r, std::string tag)
      : StmtNode(kKind), combiner(c), value(std::move(v)), result(std::move(r)), thread_tag(std::move(tag)) {}
  const Combiner combiner;
  const Expr value;
  const Var result;
  const std::string thread_tag;
  static Stmt make(Combiner c, Expr value, Var result, std::string thread_tag);
};

// A dependency token of a software pipeline (schedule/passes/inject_pipeline.h):
// the access stage of pipeline `pipeline` pushes a kFull token for buffer
// slot `slot` once it has filled the slot, and the execute stage pops it
// before it reads the slot; the execute stage pushes kFree when it is done
// with the slot, and the access stage pops it before it fills the slot
// again. Every slot starts with one kFree token. Each target lowers them its
// own way: in program order on a CPU nothing is left to do; a GPU waits for
// its asynchronous copies (`in_flight`, on pops of kFull: how many fills
// pushed after this slot's may still be in flight) and a barrier makes them
// visible to the block. schedule/verify.h's verify_pipeline_tokens checks
// that every push is popped and no slot is filled before it is released.
//
// In a warp-specialized pipeline (attr::kWarpSpecialized) the two stages run
// on different warps at once, and each token also carries its `phase`: the
// use of the slot it belongs to (0 for the slot's first fill and read, 1 for
// the next...; a fill's pop of kFree waits for the release of the slot's
// previous use, -1 for the token every slot starts with). The GPU lowers
// them to mbarrier arrivals and parity waits. kWait (of kFree, by the
// execute stage) waits for a release without taking the token: the
// execute warps' drain, after which no warp reads a slot any more.
class TokenNode : public StmtNode {
 public:
  enum class Op : uint8_t { kPush, kPop, kWait };
  enum class Queue : uint8_t { kFull, kFree };
  static constexpr NodeKind kKind = NodeKind::Token;
  TokenNode(Op o, Queue q, int p, Expr s, Expr f, Expr ph)
      : StmtNode(kKind),
        op(o),
        queue(q),
        pipeline(p),
        slot(std::move(s)),
        in_flight(std::move(f)),
        phase(std::move(ph)) {}
  const Op op;
  const Queue queue;
  const int pipeline;
  const Expr slot;
  const Expr in_flight;  // pops of kFull only; undefined otherwise
  const Expr phase;      // warp-specialized pipelines only; undefined otherwise
  static Stmt make(Op op, Queue queue, int pipeline, Expr slot, Expr in_flight = Expr());
  // A warp-specialized pipeline's token (no in_flight).
  static Stmt make_phased(Op op, Queue queue, int pipeline, Expr slot, Expr phase);
};

// A hint that buffer[index] will be read soon: the CPU fetches its cache
// line into L1 (prefetcht0) without waiting. No effect on the result.
class PrefetchNode : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Prefetch;
  PrefetchNode(Var b, Expr i) : StmtNode(kKind), buffer(std::move(b)), index(std::move(i)) {}
  const Var buffer;
  const Expr index;
  static Stmt make(Var buffer, Expr index);
};

// Annotation around a body: key "pragma_<name>", "thread_extent",
// "double_buffer", "storage_scope"... `node` names what it annotates (an
// IterVar, a buffer Var) and may be undefined.
namespace attr {
constexpr const char* kPragmaPrefix = "pragma_";
constexpr const char* kThreadExtent = "thread_extent";
constexpr const char* kDoubleBuffer = "double_buffer";
// On a loop: software-pipeline it with `value` stages (Stage::pipeline).
constexpr const char* kPipelineStages = "pipeline_stages";
// On a pipelined loop, inside kPipelineStages (Stage::pipeline): `value`
// producer warps fill its slots while the block's other warps compute
// (warp specialization). After inject_pipeline, around the warp-specialized
// region: value = the number of slots, node = the number W of consumer
// warps (an integer constant), and the body is
// if (warp >= W) { producer } else { consumer }.
constexpr const char* kWarpSpecialized = "warp_specialized";
// Directly inside kWarpSpecialized (Stage::pipeline with bulk copies): the
// producer moves the fills that are box copies by bulk copies (sm_90);
// value 1: where they fit, 2: every fill (the others are user errors),
// plus 4 when boxes move by tensor copies (BulkCopyForm::kTensorMaps).
constexpr const char* kBulkCopies = "bulk_copies";
// Directly around a warp-specialized pipeline's loop, inside kBulkCopies
// when there is one (Stage::mma_in_flight): the compute's asynchronous
// tensor-core products of `value` (1) iterations stay in flight while the
// next iteration's are issued; a slot is released once they retire.
constexpr const char* kMmaInFlight = "mma_in_flight";
// Around one fill of a warp-specialized producer, after bulk copies replace
// its cp.async copies: `value` bytes land per fill, which the full
// mbarrier's phase expects (passes/bulk_copy.h).
constexpr const char* kBulkCopyBytes = "bulk_copy_bytes";
// On a loop: prefetch the region of buffer `node` that iteration i + value
// reads, at the start of iteration i (Stage::prefetch).
constexpr const char* kPrefetch = "prefetch";
// On the steady-state fills of a pipeline (inject_pipeline): writes into
// slots that the pipeline's tokens order, not the block's barriers. The
// value is the pipeline's number of slots (the cost model reads it).
constexpr const char* kPipelineFill = "pipeline_fill";
// Around a stage's loop nest (Stage::stream_stores): the stores into
// buffer `node` inside it are streaming (non-temporal) stores.
constexpr const char* kStreamStores = "stream_stores";
}  // namespace attr

class AttrStmtNode : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::AttrStmt;
  AttrStmtNode(Ref<Object> n, std::string k, Expr v, Stmt b)
      : StmtNode(kKind), node(std::move(n)), key(std::move(k)), value(std::move(v)), body(std::move(b)) {}
  const Ref<Object> node;
  const std::string key;
  const Expr value;
  const Stmt body;
  static Stmt make(Ref<Object> node, std::string key, Expr value, Stmt body);
};

// A call to a hardware instruction (compute/hw_instructions.h lists them,
// with what each operand holds): `intrin` names it, and each operand is a
// buffer access pointer, the `extent` elements from `offset` on, with a row
// stride for operands of several rows. Tensor intrinsics' lowerings emit
// them (after flattening).
class TensorIntrinCallNode : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::TensorIntrinCall;
  struct Operand {
    Var buffer;
    Expr offset;
    Expr extent;
    Expr stride;
  };
  TensorIntrinCallNode(std::string name, std::vector<Operand> ops, std::vector<Expr> sc)
      : StmtNode(kKind), intrin(std::move(name)), operands(std::move(ops)), scalars(std::move(sc)) {}
  const std::string intrin;
  const std::vector<Operand> operands;
  const std::vector<Expr> scalars;
  static Stmt make(std::string intrin, std::vector<Operand> operands, std::vector<Expr> scalars);
};

struct TensorIntrinDecl;
using TensorIntrin = std::shared_ptr<const TensorIntrinDecl>;
enum class IntrinPhase : uint8_t;

// A tensorized loop nest (before flattening): one phase of the tensor
// intrinsic (compute/tensor_intrin.h) on regions of tensors. Each region is
// the element `base` (one index per tensor dimension) and, per dimension of
// the declared operand, the tensor dimension it runs along. storage_flatten
// replaces it by the intrinsic's lowering of that phase.
class TensorizeNode : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Tensorize;
  struct Region {
    Ref<TensorNode> tensor;
    std::vector<Expr> base;
    std::vector<int> dims;
  };
  TensorizeNode(TensorIntrin in, IntrinPhase p, std::vector<Region> r)
      : StmtNode(kKind), intrin(std::move(in)), phase(p), regions(std::move(r)) {}
  const TensorIntrin intrin;
  const IntrinPhase phase;
  // The operands in the lowering's order: the inputs then the output (the
  // output alone for a reset).
  const std::vector<Region> regions;
  static Stmt make(TensorIntrin intrin, IntrinPhase phase, std::vector<Region> regions);
};

// tensor[indices] = value (multi-dimensional, before flattening).
class ProvideNode : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Provide;
  ProvideNode(Ref<TensorNode> t, Expr v, std::vector<Expr> idx)
      : StmtNode(kKind), tensor(std::move(t)), value(std::move(v)), indices(std::move(idx)) {}
  const Ref<TensorNode> tensor;
  const Expr value;
  const std::vector<Expr> indices;
  static Stmt make(Ref<TensorNode> t, Expr value, std::vector<Expr> indices);
};

// Storage for the region `bounds` of `tensor` (one Range per dimension),
// valid inside body (before flattening). `align` gives, per dimension, a
// (factor, offset) pair from storage_align, or factor 0, and the extent of
// the storage tiles along it (Stage::storage_tile), or 0 for none; the last
// dimension's also the bytes of a swizzled row (Stage::storage_swizzle), or
// 0 for none.
class RealizeNode : public StmtNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Realize;
  struct Align {
    int64_t factor = 0, offset = 0;
    int64_t tile = 0;
    int64_t swizzle = 0;
  };
  RealizeNode(Ref<TensorNode> t, std::vector<Range> bnd, MemScope s, std::vector<Align> al, Stmt b)
      : StmtNode(kKind),
        tensor(std::move(t)),
        bounds(std::move(bnd)),
        scope(s),
        align(std::move(al)),
        body(std::move(b)) {}
  const Ref<TensorNode> tensor;
  const std::vector<Range> bounds;
  const MemScope scope;
  const std::vector<Align> align;
  const Stmt body;
  static Stmt make(Ref<TensorNode> t, std::vector<Range> bounds, MemScope scope, std::vector<Align> align, Stmt body);
};

}  // namespace kiln
