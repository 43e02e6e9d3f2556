// The CUDA C printer of one kernel nest: set-up, expressions, vector code
// and statements (see cuda_kernel_printer.h).
#include "codegen/cuda_kernel_printer.h"

#include <sstream>
#include <string>

#include "base/error.h"
#include "codegen/alignment.h"
#include "codegen/cuda_allreduce.h"
#include "codegen/cuda_c_spelling.h"
#include "compute/analyzer.h"
#include "compute/expr_ops.h"
#include "compute/ir_functor.h"

namespace kiln {

using cuda_c::c_type;
using cuda_c::float_literal;
using cuda_c::is_narrow_float;
using cuda_c::math_name;
using cuda_c::narrow_suffix;
using cuda_c::sanitize;
using cuda_c::storage_type;

CudaKernelPrinter::CudaKernelPrinter(const GpuKernel& k, const LoweredFunc& f, const GpuLimits& limits)
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

std::string CudaKernelPrinter::print(const std::string& kernel_name, CudaKernelLaunch* launch) {
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
  // Past 48 KiB the arrays are carved, at least 16-byte aligned, out of the
  // kernel's dynamic shared memory at the offsets of the kernel's shared
  // memory plan; below it, out of one static pool where arrays share
  // bytes, else each is an array of its own.
  const SharedMemoryPlan& plan = kernel_.shared_plan;
  // Arrays aligned past 16 bytes (tensor copies' boxes) sit at the plan's offsets too.
  const bool dynamic = kernel_.dynamic_shared_bytes > 0, pooled = !dynamic && (plan.shares_bytes || plan.over_aligned);
  launch->dynamic_shared_bytes = kernel_.dynamic_shared_bytes;
  if (dynamic) line() << "KILN_DYNAMIC_SHARED_POOL(" << plan.align << ");\n";
  if (pooled) line() << "KILN_SHARED_POOL(" << kernel_.shared_bytes << ", " << plan.align << ");\n";
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

std::ostream& CudaKernelPrinter::line() {
  for (int i = 0; i < indent_; ++i) body_ << "  ";
  return body_;
}

std::string CudaKernelPrinter::name_of(const VarNode* v) {
  auto it = names_.find(v);
  if (it != names_.end()) return it->second;
  std::string base = sanitize(v->name), n = base;
  for (int i = 1; taken_.count(n); ++i) n = base + "_" + std::to_string(i);
  taken_.insert(n);
  return names_[v] = n;
}

// ---- expressions: `lane` >= 0 prints that lane of a vector expression.
std::string CudaKernelPrinter::expr(const Expr& e, int lane) {
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

std::string CudaKernelPrinter::binary(const Expr& e, const char* op, int lane) {
  auto* b = static_cast<const BinaryNode*>(e.get());
  return "(" + expr(b->a, lane) + " " + op + " " + expr(b->b, lane) + ")";
}

std::string CudaKernelPrinter::call2(const Expr& e, const std::string& fn, int lane) {
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

std::string CudaKernelPrinter::call(const CallNode* op, int lane) {
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
std::string CudaKernelPrinter::vec_type(DType t) {
  if (!t.is_float() || t.bits > 32) return "";
  return t.lanes == 4 ? "float4" : t.lanes == 2 ? "float2" : "";
}

// Whether `buffer` holds its `t` elements as 16-bit patterns: f16 and
// bf16 in global and shared memory. Local arrays hold f32 values.
bool CudaKernelPrinter::stored_narrow(const Var& buffer, DType t) const {
  return is_narrow_float(t) && !local_.count(buffer.node());
}

// Whether index is a stride-1 ramp whose base is a multiple of its lanes
// (buffers start at least 16-byte aligned: arguments, shared and local arrays).
bool CudaKernelPrinter::aligned_ramp(const Expr& index, int64_t elem_bytes, Expr* base) {
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
std::string CudaKernelPrinter::packed_type(int lanes) {
  return lanes == 8 ? "kiln_u16x8" : lanes == 4 ? "kiln_u16x4" : "kiln_u16x2";
}

std::string CudaKernelPrinter::packed_conv(DType t, bool to_f32) {
  const std::string v = narrow_suffix(t) + "x" + std::to_string(t.lanes);
  return to_f32 ? "kiln_" + v + "_to_f32" : "kiln_f32_to_" + v;
}

std::string CudaKernelPrinter::vec_expr(const Expr& e) {
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
void CudaKernelPrinter::stmt(const Stmt& s) {
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

void CudaKernelPrinter::nested(const Stmt& s) {
  ++indent_;
  stmt(s);
  --indent_;
}

void CudaKernelPrinter::for_loop(const ForNode* op) {
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
  user_check(op->for_kind != ForKind::kParallel) << "loop '" << op->loop_var->name << "' is parallel on a cuda target";
  if (op->for_kind == ForKind::kUnrolled) line() << "#pragma unroll\n";
  const std::string lo = expr(op->min);
  line() << "for (" << t << " " << v << " = " << lo << "; " << v << " < " << lo << " + " << expr(op->extent) << "; ++"
         << v << ") {\n";
  nested(op->body);
  line() << "}\n";
}

// One lane of a load from 16-bit memory as its bit pattern (0 where the
// predicate is false: +0.0 in f16 and bf16).
std::string CudaKernelPrinter::raw_load(const LoadNode* op, int lane) {
  std::string ld = name_of(op->buffer.node()) + "[" + expr(op->index, lane) + "]";
  if (op->predicate.defined() && !is_one(op->predicate))
    ld = "(" + expr(op->predicate, lane) + " ? (" + storage_type(op->dtype.element_of()) + ")" + ld + " : (" +
         storage_type(op->dtype.element_of()) + ")0)";
  return ld;
}

// The scratch array of the kernel's cross-thread reductions of one type.
const Var& CudaKernelPrinter::scratch_var(DType t) {
  for (auto& [type, v] : scratch_)
    if (type == t) return v;
  scratch_.emplace_back(t, Var::handle("kiln_reduce_scratch_" + c_type(t), t));
  return scratch_.back().second;
}

void CudaKernelPrinter::allreduce(const ThreadAllReduceNode* op) {
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
void CudaKernelPrinter::check_not_fragment(const Var& buffer, const char* how) const {
  user_check(!warp_.count(buffer.node()))
      << "'" << buffer->name << "' is in warp scope (a tensor-core fragment, spread over a warp's lanes) and a "
      << "statement " << how << " it element by element; only tensor-core instructions may access it (a tensor "
      << "intrinsic's lowering must call them, not load or store the fragment)";
}

void CudaKernelPrinter::store(const StoreNode* op) {
  check_not_fragment(op->buffer, "writes");
  const std::string buf = name_of(op->buffer.node());
  const DType t = op->value.dtype();
  const bool predicated = op->predicate.defined() && !is_one(op->predicate);
  const bool narrow = stored_narrow(op->buffer, t);
  // The stored form of an f32 value: rounded to 16 bits for f16/bf16 memory.
  auto stored = [&](const std::string& v) { return narrow ? "kiln_f32_to_" + narrow_suffix(t) + "(" + v + ")" : v; };
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

}  // namespace kiln
