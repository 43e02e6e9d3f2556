#include "codegen/cuda_codegen.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"
#include "codegen/alignment.h"
#include "codegen/build.h"
#include "codegen/cuda_allreduce.h"
#include "codegen/cuda_async_prelude.h"
#include "codegen/cuda_c_spelling.h"
#include "codegen/cuda_mbarrier_prelude.h"
#include "codegen/cuda_mma_prelude.h"
#include "codegen/cuda_prelude.h"
#include "codegen/cuda_tensor_maps.h"
#include "codegen/cuda_wgmma_prelude.h"
#include "compute/analyzer.h"
#include "compute/expr_ops.h"
#include "compute/hw_instructions.h"
#include "compute/interpreter.h"
#include "compute/ir_functor.h"
#include "compute/printer.h"
#include "compute/simplify.h"
#include "schedule/gpu_kernels.h"

namespace kiln {

namespace {

using cuda_c::c_type;
using cuda_c::float_literal;
using cuda_c::is_narrow_float;
using cuda_c::math_name;
using cuda_c::narrow_suffix;
using cuda_c::sanitize;
using cuda_c::storage_type;

// Helpers the kernels call for the semantics compute/expr.h states: floor
// division of integers, and min/max of floats that propagate NaN and keep
// the first operand on ties (CUDA's fminf/fmaxf drop a NaN operand).
const char* const kArithmeticHelpers = R"(// kiln: arithmetic as compute/expr.h defines it
template <typename T> __device__ __forceinline__ T kiln_floordiv(T a, T b) {
  T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T> __device__ __forceinline__ T kiln_floormod(T a, T b) {
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <typename T> __device__ __forceinline__ T kiln_imin(T a, T b) { return b < a ? b : a; }
template <typename T> __device__ __forceinline__ T kiln_imax(T a, T b) { return a < b ? b : a; }
template <typename T> __device__ __forceinline__ T kiln_fmin(T a, T b) { return a != a ? a : (b != b ? b : (b < a ? b : a)); }
template <typename T> __device__ __forceinline__ T kiln_fmax(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? b : a)); }
__device__ __forceinline__ float kiln_bits_f32(unsigned int u) { union { unsigned int u; float f; } v; v.u = u; return v.f; }
__device__ __forceinline__ double kiln_bits_f64(unsigned long long u) { union { unsigned long long u; double f; } v; v.u = u; return v.f; }

)";

// Prints one kernel nest.
class KernelPrinter {
 public:
  KernelPrinter(const GpuKernel& k, const LoweredFunc& f, const GpuLimits& limits)
      : kernel_(k), func_(f), limits_(limits) {
    for (auto& a : f.args) names_[a.data.node()] = sanitize(a.name);
    for (auto& [node, name] : names_) taken_.insert(name);
    post_order_visit(k.body, [&](const Ref<Object>& n) {
      if (n->kind() == NodeKind::Store) written_.insert(static_cast<const StoreNode*>(n.get())->buffer.node());
      if (n->kind() == NodeKind::Allocate) {
        auto* a = static_cast<const AllocateNode*>(n.get());
        if (a->scope == MemScope::kLocal) local_.insert(a->buffer.node());
        if (a->scope == MemScope::kWarp) warp_.insert(a->buffer.node());
        if (a->scope == MemScope::kShared) shared_vars_.insert(a->buffer.node());
      }
    });
    post_order_visit(k.body, [&](const Ref<Object>& n) {
      if (n->kind() != NodeKind::For) return;
      auto* f = static_cast<const ForNode*>(n.get());
      if (f->for_kind == ForKind::kThreadBinding && thread_index_dim(f->thread_tag) >= 0)
        thread_vars_.insert(f->loop_var.node());
    });
    post_order_visit(k.body, [&](const Ref<Object>& n) { find_warp_specialized(n); });
    tensor_maps_ = std::make_unique<CudaTensorMaps>(k.body, f, names_, &taken_);
  }

  std::string print(const std::string& kernel_name, CudaKernelLaunch* launch) {
    std::ostringstream os;
    const int64_t threads = kernel_.block[0] * kernel_.block[1] * kernel_.block[2];
    os << "extern \"C\" __global__ void __launch_bounds__(" << threads << ") " << kernel_name << "(";
    launch->kernel = kernel_name;
    launch->grid = kernel_.grid;
    launch->block = kernel_.block;
    launch->shared_bytes = kernel_.shared_bytes;
    for (size_t i = 0; i < kernel_.arg_indices.size(); ++i) {
      const BufferArg& a = func_.args[kernel_.arg_indices[i]];
      const bool ro = !written_.count(a.data.node());
      const std::string t = storage_type(a.dtype) + "*";
      os << (i ? ", " : "") << (ro ? "const " : "") << t << " __restrict__ " << names_.at(a.data.node());
      launch->params.push_back({(ro ? "const " : "") + t, kernel_.arg_indices[i]});
    }
    for (const CudaTensorMapParam& m : tensor_maps_->params()) {
      os << ", const __grid_constant__ kiln_tensor_map " << m.name;
      launch->params.push_back({"kiln_tensor_map", m.arg_index, m.spec});
    }
    os << ") {\n";
    indent_ = 1;
    // Past 48 KiB the arrays are carved, 16-byte aligned, out of the
    // kernel's dynamic shared memory at the offsets of the kernel's shared
    // memory plan; below it, out of one static pool where arrays share
    // bytes, else each is an array of its own.
    const SharedMemoryPlan& plan = kernel_.shared_plan;
    // Arrays aligned past 16 bytes (tensor copies' boxes) sit at the plan's offsets too.
    const bool dynamic = kernel_.dynamic_shared_bytes > 0,
               pooled = !dynamic && (plan.shares_bytes || plan.over_aligned);
    launch->dynamic_shared_bytes = kernel_.dynamic_shared_bytes;
    if (dynamic) line() << "KILN_DYNAMIC_SHARED_POOL();\n";
    if (pooled) line() << "KILN_SHARED_POOL(" << kernel_.shared_bytes << ");\n";
    auto declare = [&](const std::string& type, const std::string& name, int64_t elems, int64_t offset) {
      if (dynamic)
        line() << "KILN_DYNAMIC_SHARED(" << type << ", " << name << ", " << elems << ", " << offset << ");";
      else if (pooled)
        line() << "KILN_SHARED_AT(" << type << ", " << name << ", " << elems << ", " << offset << ");";
      else
        line() << "KILN_SHARED(" << type << ", " << name << ", " << elems << ");";
    };
    for (const SharedArrayPlace& p : plan.arrays) {
      const AllocateNode* a = p.alloc;
      declare(storage_type(a->dtype), name_of(a->buffer.node()), *as_const_int(a->extents[0]), p.offset);
      body_ << "\n";
    }
    int64_t offset = plan.bytes;
    for (auto& [type, elems] : kernel_.allreduce_scratch) {
      declare(c_type(type), name_of(scratch_var(type).node()), elems, offset);
      offset += shared_array_bytes(elems, type);
      body_ << "  // cross-thread reductions\n";
    }
    internal_assert(offset == kernel_.shared_bytes)
        << "the shared arrays of " << kernel_name << " take " << offset << " bytes, counted " << kernel_.shared_bytes;
    for (auto& [id, ws] : pipelines_) {
      line() << "KILN_SHARED_MBARRIER(" << ws.full << ", " << ws.slots << ");  // pipeline " << id << ": slot filled\n";
      line() << "KILN_SHARED_MBARRIER(" << ws.empty << ", " << ws.slots << ");  // pipeline " << id
             << ": slot released\n";
    }
    stmt(kernel_.body);
    os << body_.str() << "}\n";
    return os.str();
  }

 private:
  std::ostream& line() {
    for (int i = 0; i < indent_; ++i) body_ << "  ";
    return body_;
  }

  std::string name_of(const VarNode* v) {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    std::string base = sanitize(v->name), n = base;
    for (int i = 1; taken_.count(n); ++i) n = base + "_" + std::to_string(i);
    taken_.insert(n);
    return names_[v] = n;
  }

  // ---- expressions: `lane` >= 0 prints that lane of a vector expression.
  std::string expr(const Expr& e, int lane = -1) {
    switch (e->kind()) {
      case NodeKind::IntImm: {
        auto* op = e.as<IntImmNode>();
        const DType t = e.dtype().element_of();
        if (t.is_bool()) return op->value ? "true" : "false";
        std::string v = std::to_string(op->value);
        if (t.bits == 64)
          v += t.is_uint() ? "ull" : "ll";
        else if (t.is_uint())
          v += "u";
        if (t.bits < 32) v = "(" + c_type(t) + ")" + v;
        return op->value < 0 ? "(" + v + ")" : v;
      }
      case NodeKind::FloatImm:
        return float_literal(e.as<FloatImmNode>()->value, e.dtype());
      case NodeKind::Var:
        return name_of(e.as<VarNode>());
      case NodeKind::Add:
        return binary(e, "+", lane);
      case NodeKind::Sub:
        return binary(e, "-", lane);
      case NodeKind::Mul:
        return binary(e, "*", lane);
      case NodeKind::Div:
        return binary(e, "/", lane);
      case NodeKind::Mod: {
        auto* b = static_cast<const BinaryNode*>(e.get());
        if (e.dtype().is_float())
          return std::string(e.dtype().bits <= 32 ? "fmodf(" : "fmod(") + expr(b->a, lane) + ", " + expr(b->b, lane) +
                 ")";
        return binary(e, "%", lane);
      }
      case NodeKind::FloorDiv:
        return call2(e, e.dtype().is_float() ? "" : "kiln_floordiv", lane);
      case NodeKind::FloorMod:
        return call2(e, e.dtype().is_float() ? "" : "kiln_floormod", lane);
      case NodeKind::Min:
        return call2(e, e.dtype().is_float() ? "kiln_fmin" : "kiln_imin", lane);
      case NodeKind::Max:
        return call2(e, e.dtype().is_float() ? "kiln_fmax" : "kiln_imax", lane);
      case NodeKind::EQ:
        return binary(e, "==", lane);
      case NodeKind::NE:
        return binary(e, "!=", lane);
      case NodeKind::LT:
        return binary(e, "<", lane);
      case NodeKind::LE:
        return binary(e, "<=", lane);
      case NodeKind::GT:
        return binary(e, ">", lane);
      case NodeKind::GE:
        return binary(e, ">=", lane);
      case NodeKind::And:
        return binary(e, "&&", lane);
      case NodeKind::Or:
        return binary(e, "||", lane);
      case NodeKind::Not:
        return "(!" + expr(e.as<NotNode>()->a, lane) + ")";
      case NodeKind::Select: {
        auto* op = e.as<SelectNode>();
        return "(" + expr(op->condition, lane) + " ? " + expr(op->true_value, lane) + " : " +
               expr(op->false_value, lane) + ")";
      }
      case NodeKind::Cast: {
        const DType to = e.dtype().element_of();
        const std::string v = "((" + c_type(to) + ")" + expr(e.as<CastNode>()->value, lane) + ")";
        // A cast to f16/bf16 rounds to that format; the value stays in f32.
        return is_narrow_float(to) ? "kiln_round_" + narrow_suffix(to) + "(" + v + ")" : v;
      }
      case NodeKind::Call:
        return call(e.as<CallNode>(), lane);
      case NodeKind::Load: {
        auto* op = e.as<LoadNode>();
        check_not_fragment(op->buffer, "reads");
        std::string ld = name_of(op->buffer.node()) + "[" + expr(op->index, lane) + "]";
        if (stored_narrow(op->buffer, e.dtype())) ld = "kiln_" + narrow_suffix(e.dtype()) + "_to_f32(" + ld + ")";
        if (op->predicate.defined() && !is_one(op->predicate))
          ld = "(" + expr(op->predicate, lane) + " ? " + ld + " : (" + c_type(e.dtype().element_of()) + ")0)";
        return ld;
      }
      case NodeKind::Ramp: {
        auto* op = e.as<RampNode>();
        internal_assert(lane >= 0) << "a ramp outside a vector statement";
        return "(" + expr(op->base) + " + " + std::to_string(lane) + " * " + expr(op->stride) + ")";
      }
      case NodeKind::Broadcast:
        return expr(e.as<BroadcastNode>()->value);
      case NodeKind::Let: {
        auto* op = e.as<LetNode>();
        const std::string v = name_of(op->var.node());
        const std::string t = c_type(op->value.dtype().element_of());
        // Lanes of a vector let are printed one by one, each with its own value.
        return "([&]() { const " + t + " " + v + " = " + expr(op->value, lane) + "; return " + expr(op->body, lane) +
               "; }())";
      }
      default:
        break;
    }
    internal_error() << "cuda codegen: unexpected expression kind " << node_kind_name(e->kind());
  }

  std::string binary(const Expr& e, const char* op, int lane) {
    auto* b = static_cast<const BinaryNode*>(e.get());
    return "(" + expr(b->a, lane) + " " + op + " " + expr(b->b, lane) + ")";
  }

  std::string call2(const Expr& e, const std::string& fn, int lane) {
    auto* b = static_cast<const BinaryNode*>(e.get());
    if (fn.empty()) {  // float floor division / modulo
      const std::string fl = e.dtype().bits <= 32 ? "floorf" : "floor";
      const std::string a = expr(b->a, lane), d = expr(b->b, lane);
      if (e->kind() == NodeKind::FloorDiv) return fl + "(" + a + " / " + d + ")";
      return "(" + a + " - " + fl + "(" + a + " / " + d + ") * " + d + ")";
    }
    // An explicit type: under emulation a shared array's element is a
    // checked reference, which template argument deduction would not convert.
    return fn + "<" + c_type(e.dtype().element_of()) + ">(" + expr(b->a, lane) + ", " + expr(b->b, lane) + ")";
  }

  std::string call(const CallNode* op, int lane) {
    const bool f32 = op->dtype.bits <= 32;  // f16 and bf16 compute in f32
    user_check(op->dtype.is_float()) << "the cuda backend computes " << math_op_name(op->op)
                                     << " on floating-point values only, got " << op->dtype.str();
    if (op->op == MathOp::kSigmoid) {
      const std::string one = f32 ? "1.0f" : "1.0";
      return "(" + one + " / (" + one + " + " + (f32 ? "expf" : "exp") + "(-" + expr(op->args[0], lane) + ")))";
    }
    std::string s = std::string(math_name(op->op, f32)) + "(";
    for (size_t i = 0; i < op->args.size(); ++i) s += (i ? ", " : "") + expr(op->args[i], lane);
    return s + ")";
  }

  // ---- float2/float4 vector code, or "" when the expression needs lanes.
  // The value type of 2 or 4 lanes (f16 and bf16 lanes are f32 values).
  static std::string vec_type(DType t) {
    if (!t.is_float() || t.bits > 32) return "";
    return t.lanes == 4 ? "float4" : t.lanes == 2 ? "float2" : "";
  }

  // Whether `buffer` holds its `t` elements as 16-bit patterns: f16 and
  // bf16 in global and shared memory. Local arrays hold f32 values.
  bool stored_narrow(const Var& buffer, DType t) const {
    return is_narrow_float(t) && !local_.count(buffer.node());
  }

  // Whether index is a stride-1 ramp whose base is a multiple of its lanes
  // (buffers start at least 16-byte aligned: arguments, shared and local arrays).
  bool aligned_ramp(const Expr& index, int64_t elem_bytes, Expr* base) {
    auto* r = index.as<RampNode>();
    if (!r || !is_one(r->stride)) return false;
    Analyzer ana;
    const int64_t bytes = elem_bytes * r->lanes;
    if (access_alignment(ana.modular_set(r->base), elem_bytes, 16) < bytes) return false;
    *base = r->base;
    return true;
  }

  // The packed 16-bit vector type of `lanes` f16/bf16 elements, and the
  // conversion of one to or from the f32 vector.
  static std::string packed_type(int lanes) {
    return lanes == 8 ? "kiln_u16x8" : lanes == 4 ? "kiln_u16x4" : "kiln_u16x2";
  }
  static std::string packed_conv(DType t, bool to_f32) {
    const std::string v = narrow_suffix(t) + "x" + std::to_string(t.lanes);
    return to_f32 ? "kiln_" + v + "_to_f32" : "kiln_f32_to_" + v;
  }

  std::string vec_expr(const Expr& e) {
    const std::string vt = vec_type(e.dtype());
    if (vt.empty()) return "";
    switch (e->kind()) {
      case NodeKind::Add:
      case NodeKind::Sub:
      case NodeKind::Mul:
      case NodeKind::Div: {
        auto* b = static_cast<const BinaryNode*>(e.get());
        const std::string x = vec_expr(b->a), y = vec_expr(b->b);
        if (x.empty() || y.empty()) return "";
        const char* op = e->kind() == NodeKind::Add   ? "+"
                         : e->kind() == NodeKind::Sub ? "-"
                         : e->kind() == NodeKind::Mul ? "*"
                                                      : "/";
        return "(" + x + " " + op + " " + y + ")";
      }
      case NodeKind::Broadcast: {
        const std::string v = expr(e.as<BroadcastNode>()->value);
        return "make_" + vt + "(" + v + ", " + v + (e.dtype().lanes == 4 ? ", " + v + ", " + v : "") + ")";
      }
      case NodeKind::Cast: {
        // f16/bf16 values live in f32 registers: their cast to f32 changes nothing.
        const Expr& v = e.as<CastNode>()->value;
        return is_narrow_float(v.dtype()) ? vec_expr(v) : "";
      }
      case NodeKind::Load: {
        auto* op = e.as<LoadNode>();
        Expr base;
        const bool narrow = stored_narrow(op->buffer, e.dtype());
        if ((op->predicate.defined() && !is_one(op->predicate)) || !aligned_ramp(op->index, narrow ? 2 : 4, &base))
          return "";
        const std::string ld = name_of(op->buffer.node()) + ", " + expr(base) + ")";
        if (narrow) return packed_conv(e.dtype(), true) + "(kiln_ld<" + packed_type(e.dtype().lanes) + ">(" + ld + ")";
        return "kiln_ld<" + vt + ">(" + ld;
      }
      default:
        return "";
    }
  }

  // ---- statements
  void stmt(const Stmt& s) {
    switch (s->kind()) {
      case NodeKind::Seq:
        for (auto& c : s.as<SeqNode>()->seq) stmt(c);
        return;
      case NodeKind::For:
        return for_loop(s.as<ForNode>());
      case NodeKind::Allocate: {
        auto* op = s.as<AllocateNode>();
        if (op->scope == MemScope::kWarp) return warp_fragments(op);
        if (op->scope != MemScope::kLocal) {
          stmt(op->body);  // shared arrays are declared at the kernel's top
          return;
        }
        // An unrolled loop repeats its body's allocations: each repeat
        // declares the array again, in a scope of its own.
        const bool again = !declared_.insert(op->buffer.node()).second;
        if (again) {
          line() << "{\n";
          ++indent_;
        }
        line() << "__align__(16) " << c_type(op->dtype) << " " << name_of(op->buffer.node()) << "["
               << *as_const_int(op->extents[0]) << "];\n";
        stmt(op->body);
        if (again) {
          --indent_;
          line() << "}\n";
        }
        return;
      }
      case NodeKind::Store:
        return store(s.as<StoreNode>());
      case NodeKind::IfThenElse: {
        auto* op = s.as<IfThenElseNode>();
        line() << "if (" << expr(op->condition) << ") {\n";
        nested(op->then_case);
        if (op->else_case.defined()) {
          line() << "} else {\n";
          nested(op->else_case);
        }
        line() << "}\n";
        return;
      }
      case NodeKind::LetStmt: {
        auto* op = s.as<LetStmtNode>();
        line() << "const " << c_type(op->value.dtype()) << " " << name_of(op->var.node()) << " = " << expr(op->value)
               << ";\n";
        stmt(op->body);
        return;
      }
      case NodeKind::Evaluate: {
        const Expr& v = s.as<EvaluateNode>()->value;
        if (!as_const_int(v) && !v.as<FloatImmNode>()) line() << "(void)" << expr(v) << ";\n";
        return;
      }
      case NodeKind::Barrier:
        line() << "__syncthreads();\n";
        return;
      case NodeKind::ThreadAllReduce:
        return allreduce(s.as<ThreadAllReduceNode>());
      case NodeKind::AttrStmt: {
        auto* op = s.as<AttrStmtNode>();
        internal_assert(op->key != attr::kStreamStores) << "lower_gpu lets no stream_stores through";
        if (op->key == attr::kWarpSpecialized) return warp_specialized(op);
        if (op->key == attr::kBulkCopyBytes)
          line() << "// bulk copies: " << expr(op->value) << " bytes into the slot, on its full mbarrier\n";
        else
          line() << "// " << op->key << "\n";
        stmt(op->body);
        return;
      }
      case NodeKind::TensorIntrinCall:
        return intrin_call(s.as<TensorIntrinCallNode>());
      case NodeKind::Token:
        return token(s.as<TokenNode>());
      default:
        break;
    }
    internal_error() << "cuda codegen: unexpected statement kind " << node_kind_name(s->kind());
  }

  void nested(const Stmt& s) {
    ++indent_;
    stmt(s);
    --indent_;
  }

  // A warp-scope buffer: each lane holds 1/32 of its fragments, as 16-bit
  // patterns or f32 (codegen/cuda_mma_prelude.h), in registers.
  void warp_fragments(const AllocateNode* op) {
    const int64_t elems = *as_const_int(op->extents[0]);
    user_check(op->dtype == DType::f32() || is_narrow_float(op->dtype))
        << "warp-scope buffer '" << op->buffer->name << "' holds " << op->dtype.str()
        << "; tensor-core fragments hold f16, bf16 or f32";
    const bool again = !declared_.insert(op->buffer.node()).second;
    if (again) {
      line() << "{\n";
      ++indent_;
    }
    line() << "__align__(16) " << (op->dtype == DType::f32() ? "float" : "unsigned short") << " "
           << name_of(op->buffer.node()) << "[" << elems / 32 << "];\n";
    stmt(op->body);
    if (again) {
      --indent_;
      line() << "}\n";
    }
  }

  // A tensor-core instruction (compute/hw_instructions.h) as a call of the
  // mma prelude, every operand checked against the instruction's scopes.
  // A pipeline's fills are commit groups of asynchronous copies: the
  // compute waits for its slot's group (the barrier after it, in the IR,
  // shows it to the block); freeing a slot needs nothing more here, as the
  // next iteration's barrier orders the compute before the slot's refill.
  void token(const TokenNode* op) {
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

  // A warp-specialized pipeline (attr::kWarpSpecialized): its mbarriers,
  // their arrival counts, and who arrives on them.
  struct WarpSpecialized {
    int64_t slots = 0, consumer_warps = 0, producer_warps = 0;
    bool async = false, plain = false;  // the producer's fills: cp.async copies, plain stores to shared
    int64_t bulk_bytes = 0;             // and the bytes its bulk copies move per fill (sm_90)
    std::string full, empty;
  };

  // A warp-specialized region; and the warp loop around one, which must
  // span the block's warps (they all set the mbarriers up).
  void find_warp_specialized(const Ref<Object>& n) {
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
    user_check(limits_.sm_version >= 80)
        << "a warp-specialized pipeline needs mbarriers, sm_80 or later; the target is " << limits_.arch;
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
  // cp.async arrival when the copies land, and a plain one that releases
  // its stores); the compute threads arrive on `empty` once per release.
  void warp_specialized(const AttrStmtNode* op) {
    const WarpSpecialized& ws = pipelines_.at(regions_.at(op));
    const int64_t lanes = kernel_.block[0] * kernel_.block[2];
    // Bulk copies: one arrival, the first producer thread's, that expects their bytes.
    const int64_t full =
        ws.producer_warps * lanes * ((ws.async ? 1 : 0) + (ws.plain ? 1 : 0)) + (ws.bulk_bytes > 0 ? 1 : 0);
    internal_assert(full > 0) << "a warp-specialized pipeline's producer fills its slots";
    line() << "// warp specialization: warps " << ws.consumer_warps << " to "
           << ws.consumer_warps + ws.producer_warps - 1 << " fill the slots, the others compute\n";
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

  void mbarrier_token(const TokenNode* op) {
    using Op = TokenNode::Op;
    using Queue = TokenNode::Queue;
    const WarpSpecialized& ws = pipelines_.at(op->pipeline);
    const std::string slot = expr(op->slot), phase = expr(op->phase);
    const std::string& bar = op->queue == Queue::kFull ? ws.full : ws.empty;
    if (op->op == Op::kPush && op->queue == Queue::kFull) {
      if (ws.async) line() << "kiln_cp_async_mbarrier_arrive(" << bar << ", " << slot << ");\n";
      if (ws.plain) line() << "kiln_mbarrier_arrive(" << bar << ", " << slot << ");\n";
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

  void intrin_call(const TensorIntrinCallNode* op) {
    const HwInstruction& h = find_hw_instruction(op->intrin);
    user_check(h.backend == "cuda") << "instruction '" << op->intrin << "' is for the " << h.backend
                                    << " backend, not cuda";
    // An architecture-specific feature (sm_90a) exists on that arch only.
    const bool specific = h.feature.back() == 'a';
    user_check(specific ? limits_.arch == h.feature : limits_.sm_version >= gpu_limits_for_arch(h.feature).sm_version)
        << "instruction '" << op->intrin << "' needs " << h.feature << (specific ? "" : " or later")
        << "; the target is " << limits_.arch;
    const std::string problem = hw_call_problem(*op);
    user_check(problem.empty()) << problem;
    std::vector<std::string> ptr(op->operands.size()), base(op->operands.size());
    for (size_t k = 0; k < op->operands.size(); ++k) {
      const TensorIntrinCallNode::Operand& o = op->operands[k];
      const VarNode* b = o.buffer.node();
      const MemScope scope = warp_.count(b) ? MemScope::kWarp
                             : shared_vars_.count(b) ? MemScope::kShared
                             : local_.count(b)        ? MemScope::kLocal
                                                      : MemScope::kGlobal;
      const HwOperand& want = h.operands[k];
      user_check(want.scope ? scope == *want.scope : scope != MemScope::kWarp && scope != MemScope::kLocal)
          << "'" << op->intrin << "' operand " << k << " (" << want.role << ") is '" << o.buffer->name << "' in "
          << mem_scope_name(scope) << " memory; it needs "
          << (want.scope ? mem_scope_name(*want.scope) : "shared or global") << " memory";
      // A fragment is 1/32 per lane: its offset, a multiple of the fragment
      // size (storage_flatten's tiles), divided by the 32 lanes.
      ptr[k] = scope == MemScope::kWarp ? "(" + name_of(b) + " + (" + expr(o.offset) + ") / 32)" : name_of(b);
      base[k] = name_of(b) + ", " + expr(o.offset) + ", " + expr(o.stride);
    }
    const std::string& n = op->intrin;
    auto has = [&](const char* part) { return n.find(part) != std::string::npos; };
    if (n.rfind(kCudaCpAsyncPrefix, 0) == 0) {
      const std::string bytes = n.substr(n.rfind('.') + 1);
      // A scalar, when there is one: copy where it holds, zeros elsewhere.
      line() << "kiln_cp_async<" << bytes << ">(" << name_of(op->operands[0].buffer.node()) << ", "
             << expr(op->operands[0].offset) << ", " << name_of(op->operands[1].buffer.node()) << " + ("
             << expr(op->operands[1].offset) << ")"
             << (op->scalars.empty() ? std::string() : ", " + expr(op->scalars[0])) << ");\n";
    } else if (n.rfind(kCudaBulkCopyPrefix, 0) == 0) {
      internal_assert(region_) << "a bulk copy sits in a warp-specialized pipeline's producer";
      const int64_t bytes = *as_const_int(op->operands[0].extent) * op->operands[0].buffer->pointee.bytes();
      line() << "kiln_bulk_copy(" << name_of(op->operands[0].buffer.node()) << ", " << expr(op->operands[0].offset)
             << ", " << name_of(op->operands[1].buffer.node()) << " + (" << expr(op->operands[1].offset) << "), "
             << bytes << ", " << region_->full << ", " << expr(op->scalars[0]) << ");\n";
    } else if (n.rfind(kCudaTensorCopyPrefix, 0) == 0) {
      internal_assert(region_) << "a tensor copy sits in a warp-specialized pipeline's producer";
      // The box's first element, as (column, row) of the map's rows of S elements.
      const CudaTensorMapParam& m = tensor_maps_->of(*op);
      const Expr& at = op->operands[1].offset;
      const Expr row_len = make_const(at.dtype(), static_cast<int64_t>(m.spec.dims[0]));
      line() << "kiln_tensor_copy_2d(" << name_of(op->operands[0].buffer.node()) << ", " << expr(op->operands[0].offset)
             << ", " << m.name << ", (int)(" << expr(simplify(floormod(at, row_len))) << "), (int)("
             << expr(simplify(floordiv(at, row_len))) << "), " << region_->full << ", " << expr(op->scalars[0])
             << ");\n";
    } else if (n.rfind(kCudaWgmmaPrefix, 0) == 0) {
      // The prelude's function of this width and type (cuda_wgmma_prelude.h).
      const std::vector<Expr>& sc = op->scalars;
      auto constant = [&](size_t k) { return std::to_string(*as_const_int(sc[k])); };
      const auto [width, input] = cuda_wgmma_shape(n);
      line() << cuda_wgmma_function(width, input) << "<" << constant(2) << ", " << constant(5) << ">(" << ptr[0] << ", "
             << name_of(op->operands[1].buffer.node()) << ", " << expr(op->operands[1].offset) << ", " << constant(0)
             << ", " << constant(1) << ", " << name_of(op->operands[2].buffer.node()) << ", "
             << expr(op->operands[2].offset) << ", " << constant(3) << ", " << constant(4) << ", " << constant(6)
             << ");\n";
    } else if (n == kCudaMmaZero) {
      line() << "kiln_mma_zero(" << ptr[0] << ");\n";
    } else if (n == kCudaMmaStore) {
      line() << "kiln_mma_store(" << base[0] << ", " << ptr[1] << ");\n";
    } else if (has(".load_a.")) {
      line() << "kiln_mma_load_a<" << (has(".km.") ? 1 : 0) << ">(" << ptr[0] << ", " << base[1] << ");\n";
    } else if (has(".load_b.")) {
      line() << "kiln_mma_load_b<" << (has(".nk.") ? 1 : 0) << ">(" << ptr[0] << ", " << base[1] << ");\n";
    } else {
      internal_assert(has(".m16n8k16.")) << "no CUDA emission for " << n;
      line() << "kiln_mma_" << (has("bf16") ? "bf16" : "f16") << "(" << ptr[0] << ", " << ptr[1] << ", " << ptr[2]
             << ");\n";
    }
  }

  void for_loop(const ForNode* op) {
    const std::string v = name_of(op->loop_var.node());
    const std::string t = c_type(op->loop_var->dtype);
    if (op->for_kind == ForKind::kThreadBinding) {
      const int bd = block_index_dim(op->thread_tag), td = thread_index_dim(op->thread_tag);
      std::string idx = op->thread_tag;
      std::string value = "(" + t + ")" + idx + (is_zero(op->min) ? "" : " + " + expr(op->min));
      line() << "{\n";
      ++indent_;
      line() << "const " << t << " " << v << " = " << value << ";\n";
      const int64_t ext = *as_const_int(op->extent);
      const int64_t launched = bd >= 0 ? kernel_.grid[bd] : kernel_.block[td];
      if (ext < launched) {
        line() << "if (" << idx << " < " << ext << ") {\n";
        nested(op->body);
        line() << "}\n";
      } else {
        stmt(op->body);
      }
      --indent_;
      line() << "}\n";
      return;
    }
    user_check(op->for_kind != ForKind::kParallel)
        << "loop '" << op->loop_var->name << "' is parallel on a cuda target";
    if (op->for_kind == ForKind::kUnrolled) line() << "#pragma unroll\n";
    const std::string lo = expr(op->min);
    line() << "for (" << t << " " << v << " = " << lo << "; " << v << " < " << lo << " + " << expr(op->extent) << "; ++"
           << v << ") {\n";
    nested(op->body);
    line() << "}\n";
  }

  // One lane of a load from 16-bit memory as its bit pattern (0 where the
  // predicate is false: +0.0 in f16 and bf16).
  std::string raw_load(const LoadNode* op, int lane) {
    std::string ld = name_of(op->buffer.node()) + "[" + expr(op->index, lane) + "]";
    if (op->predicate.defined() && !is_one(op->predicate))
      ld = "(" + expr(op->predicate, lane) + " ? (" + storage_type(op->dtype.element_of()) + ")" + ld + " : (" +
           storage_type(op->dtype.element_of()) + ")0)";
    return ld;
  }

  // The scratch array of the kernel's cross-thread reductions of one type.
  const Var& scratch_var(DType t) {
    for (auto& [type, v] : scratch_)
      if (type == t) return v;
    scratch_.emplace_back(t, Var::handle("kiln_reduce_scratch_" + c_type(t), t));
    return scratch_.back().second;
  }

  void allreduce(const ThreadAllReduceNode* op) {
    static const char* const kOps[] = {"kiln_sum_op", "kiln_max_op", "kiln_min_op", "kiln_prod_op"};
    const int dim = thread_index_dim(op->thread_tag);
    const AllreduceStrategy strategy = allreduce_strategy(dim, kernel_.block);
    const DType t = allreduce_value_type(op->value.dtype());
    const std::string scratch =
        allreduce_scratch_elems(strategy, kernel_.block) > 0 ? name_of(scratch_var(t).node()) : "0";
    line() << name_of(op->result.node()) << "[0] = kiln_allreduce<" << kOps[static_cast<int>(op->combiner)] << ", "
           << static_cast<int>(strategy) << ", " << dim << ", " << kernel_.block[0] << ", " << kernel_.block[1] << ", "
           << kernel_.block[2] << ">(" << expr(op->value) << ", " << scratch << ");\n";
  }

  // A lane holds 1/32 of a warp-scope buffer in the instructions' layout:
  // an element index into the whole fragment has no meaning there (a
  // user intrinsic's lowering that loads or stores it element by element).
  void check_not_fragment(const Var& buffer, const char* how) const {
    user_check(!warp_.count(buffer.node()))
        << "'" << buffer->name << "' is in warp scope (a tensor-core fragment, spread over a warp's lanes) and a "
        << "statement " << how << " it element by element; only tensor-core instructions may access it (a tensor "
        << "intrinsic's lowering must call them, not load or store the fragment)";
  }

  void store(const StoreNode* op) {
    check_not_fragment(op->buffer, "writes");
    const std::string buf = name_of(op->buffer.node());
    const DType t = op->value.dtype();
    const bool predicated = op->predicate.defined() && !is_one(op->predicate);
    const bool narrow = stored_narrow(op->buffer, t);
    // The stored form of an f32 value: rounded to 16 bits for f16/bf16 memory.
    auto stored = [&](const std::string& v) {
      return narrow ? "kiln_f32_to_" + narrow_suffix(t) + "(" + v + ")" : v;
    };
    // Storing into 16-bit memory rounds: a cast to that format just before
    // (an epilogue's rounding) is the same rounding, done once.
    Expr value = op->value;
    if (auto* c = value.as<CastNode>(); narrow && c && c->value.dtype() == DType::f32().with_lanes(t.lanes))
      value = c->value;
    // A copy between 16-bit memories (a shared tile's fill) moves the bits.
    const LoadNode* copied = value.as<LoadNode>();
    if (!narrow || !copied || !stored_narrow(copied->buffer, copied->dtype)) copied = nullptr;
    if (t.lanes == 1) {
      const std::string v = copied ? raw_load(copied, -1) : stored(expr(value));
      line() << buf << "[" << expr(op->index) << "] = " << v << ";\n";
      return;
    }
    Expr base, from;
    if (!predicated && aligned_ramp(op->index, narrow ? 2 : 4, &base)) {
      if (copied && (!copied->predicate.defined() || is_one(copied->predicate)) &&
          aligned_ramp(copied->index, 2, &from)) {
        line() << "kiln_st(" << buf << ", " << expr(base) << ", kiln_ld<" << packed_type(t.lanes) << ">("
               << name_of(copied->buffer.node()) << ", " << expr(from) << "));\n";
        return;
      }
      std::string v = vec_expr(value);
      if (!v.empty()) {
        if (narrow) v = packed_conv(t, false) + "(" + v + ")";
        line() << "kiln_st(" << buf << ", " << expr(base) << ", " << v << ");\n";
        return;
      }
    }
    // Lane by lane: every lane's value is computed before any lane is stored,
    // so a store that overlaps its own loads reads the old values, as a
    // vector store would.
    line() << "{\n";
    ++indent_;
    const std::string ct = c_type(t.element_of());
    const std::string lt = copied ? storage_type(t.element_of()) : ct;
    for (int l = 0; l < t.lanes; ++l)
      line() << "const " << lt << " lane" << l << " = " << (copied ? raw_load(copied, l) : expr(value, l)) << ";\n";
    for (int l = 0; l < t.lanes; ++l) {
      const std::string v = "lane" + std::to_string(l);
      std::string st = buf + "[" + expr(op->index, l) + "] = " + (copied ? v : stored(v)) + ";";
      if (predicated) st = "if (" + expr(op->predicate, l) + ") " + st;
      line() << st << "\n";
    }
    --indent_;
    line() << "}\n";
  }

  const GpuKernel& kernel_;
  const LoweredFunc& func_;
  std::map<int, WarpSpecialized> pipelines_;  // by pipeline id
  std::unique_ptr<CudaTensorMaps> tensor_maps_;  // the kernel's tensor map parameters, after its buffers
  const WarpSpecialized* region_ = nullptr;   // the one being printed
  std::unordered_map<const AttrStmtNode*, int> regions_;
  std::unordered_set<const VarNode*> thread_vars_;  // loops bound to threadIdx
  std::unordered_map<const VarNode*, std::string> names_;
  std::unordered_set<std::string> taken_;
  std::unordered_set<const VarNode*> written_;
  std::unordered_set<const VarNode*> declared_;  // local arrays declared so far
  std::unordered_set<const VarNode*> local_;     // every local array
  std::unordered_set<const VarNode*> warp_;      // every warp-scope (fragment) array
  std::unordered_set<const VarNode*> shared_vars_;
  const GpuLimits& limits_;
  std::vector<std::pair<DType, Var>> scratch_;
  std::ostringstream body_;
  int indent_ = 0;
};

}  // namespace

CudaSource emit_cuda(const LoweredFunc& f, const GpuLimits& limits) {
  CudaSource src;
  src.function = f.name;
  std::vector<GpuKernel> kernels = gpu_kernels(f, limits);
  std::ostringstream os;
  os << "// kiln: " << f.name << " for " << limits.arch << ", " << kernels.size() << " kernel"
     << (kernels.size() == 1 ? "" : "s") << "\n";
  os << cuda_prelude() << "\n" << kArithmeticHelpers;
  bool reduces_across_threads = false, narrow = false, mma = false, async = false, mbarriers = false;
  std::set<std::pair<int64_t, std::string>> wgmma;  // (N, input type) of the wgmma calls
  for (auto& a : f.args) narrow |= is_narrow_float(a.dtype);
  for (auto& k : kernels)
    post_order_visit(k.body, [&](const Ref<Object>& n) {
      reduces_across_threads |= n->kind() == NodeKind::ThreadAllReduce;
      mma |= n->kind() == NodeKind::TensorIntrinCall;
      if (n->kind() == NodeKind::TensorIntrinCall) {
        const std::string& in = static_cast<const TensorIntrinCallNode*>(n.get())->intrin;
        if (in.rfind(kCudaWgmmaPrefix, 0) == 0) wgmma.insert(cuda_wgmma_shape(in));
      }
      async |= n->kind() == NodeKind::Token;
      if (n->kind() == NodeKind::Token) mbarriers |= static_cast<const TokenNode*>(n.get())->phase.defined();
      if (n->kind() == NodeKind::Allocate) narrow |= is_narrow_float(static_cast<const AllocateNode*>(n.get())->dtype);
      if (n->kind() == NodeKind::Cast) narrow |= is_narrow_float(static_cast<const CastNode*>(n.get())->dtype);
    });
  if (narrow || mma) os << cuda_narrow_float_prelude();
  if (mma) os << cuda_mma_prelude();
  if (!wgmma.empty()) os << cuda_wgmma_prelude(wgmma);
  if (async && limits.sm_version >= 80) os << cuda_async_prelude();
  if (mbarriers && limits.sm_version >= 80) os << cuda_mbarrier_prelude();
  if (reduces_across_threads) os << cuda_allreduce_helpers();
  for (size_t i = 0; i < kernels.size(); ++i) {
    CudaKernelLaunch launch;
    const std::string name = sanitize(f.name) + "_kernel" + std::to_string(i);
    os << "// grid " << kernels[i].grid[0] << " x " << kernels[i].grid[1] << " x " << kernels[i].grid[2] << ", block "
       << kernels[i].block[0] << " x " << kernels[i].block[1] << " x " << kernels[i].block[2] << ", "
       << kernels[i].shared_bytes << " bytes of shared memory" << (kernels[i].dynamic_shared_bytes ? " (dynamic)" : "")
       << "\n";
    os << KernelPrinter(kernels[i], f, limits).print(name, &launch) << "\n";
    src.launches.push_back(launch);
  }
  src.code = os.str();
  return src;
}

}  // namespace kiln
