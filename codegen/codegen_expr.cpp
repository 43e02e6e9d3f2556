// Expressions -> LLVM values: arithmetic with kiln's semantics (compute/expr.h),
// comparisons, casts, math calls, vectors (ramp, broadcast) and let.
#include <llvm/IR/Intrinsics.h>

#include "codegen/llvm_codegen.h"
#include "compute/ir_functor.h"
#include "base/error.h"

namespace kiln {

llvm::Value* CodeGenLLVM::emit(const Expr& e) {
  internal_assert(e.defined()) << "codegen of an undefined expression";
  switch (e->kind()) {
    case NodeKind::IntImm: {
      const DType t = e.dtype();
      if (t.is_bool()) return builder_.getInt1(e.as<IntImmNode>()->value != 0);
      return make_int(llvm_type(t), e.as<IntImmNode>()->value);
    }
    case NodeKind::FloatImm: {
      const DType t = e.dtype();
      const double v = e.as<FloatImmNode>()->value;
      if (t.code == DType::kBFloat) {
        llvm::APFloat f(v);
        bool lost = false;
        f.convert(llvm::APFloat::BFloat(), llvm::APFloat::rmNearestTiesToEven, &lost);
        return builder_.getInt(f.bitcastToAPInt());
      }
      return llvm::ConstantFP::get(llvm_type(t), v);
    }
    case NodeKind::Var:
      return lookup(e.as<VarNode>());
    case NodeKind::Add:
    case NodeKind::Sub:
    case NodeKind::Mul:
    case NodeKind::Div:
    case NodeKind::Mod:
    case NodeKind::FloorDiv:
    case NodeKind::FloorMod:
    case NodeKind::Min:
    case NodeKind::Max:
    case NodeKind::EQ:
    case NodeKind::NE:
    case NodeKind::LT:
    case NodeKind::LE:
    case NodeKind::GT:
    case NodeKind::GE:
    case NodeKind::And:
    case NodeKind::Or:
      return emit_binary(static_cast<const BinaryNode*>(e.get()));
    case NodeKind::Not:
      return builder_.CreateNot(emit(e.as<NotNode>()->a));
    case NodeKind::Select:
      return emit_select(e.as<SelectNode>());
    case NodeKind::Cast: {
      auto* op = e.as<CastNode>();
      return cast_value(emit(op->value), op->value.dtype(), e.dtype());
    }
    case NodeKind::Call:
      return emit_call(e.as<CallNode>());
    case NodeKind::Load:
      return emit_load(e.as<LoadNode>());
    case NodeKind::Ramp:
      return emit_ramp(e.as<RampNode>());
    case NodeKind::Broadcast: {
      auto* op = e.as<BroadcastNode>();
      return builder_.CreateVectorSplat(op->lanes, emit(op->value));
    }
    case NodeKind::Let:
      return emit_let(e.as<LetNode>());
    case NodeKind::TensorRead:
    case NodeKind::Reduce:
      internal_error() << node_kind_name(e->kind()) << " must be lowered away before codegen";
    default:
      internal_error() << "codegen: unexpected expression " << node_kind_name(e->kind());
  }
}

llvm::Value* CodeGenLLVM::emit_binary(const BinaryNode* op) {
  const NodeKind k = op->kind();
  const DType t = op->a.dtype();
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  if (k == NodeKind::And) return builder_.CreateAnd(a, b);
  if (k == NodeKind::Or) return builder_.CreateOr(a, b);
  if (t.code == DType::kBFloat) {
    a = bf16_to_f32(a);
    b = bf16_to_f32(b);
    if (is_comparison_kind(k)) return emit_compare(k, DType::f32().with_lanes(t.lanes), a, b);
    return f32_to_bf16(emit_float_arith(k, a, b));
  }
  if (is_comparison_kind(k)) return emit_compare(k, t, a, b);
  if (t.is_float()) return emit_float_arith(k, a, b);
  return emit_int_arith(k, t, op->a, op->b, a, b);
}

namespace {

// A float constant (scalar, or a vector of them) none of whose lanes is NaN.
bool never_nan_constant(llvm::Value* v) {
  auto* c = llvm::dyn_cast<llvm::Constant>(v);
  if (!c) return false;
  if (auto* f = llvm::dyn_cast<llvm::ConstantFP>(c)) return !f->isNaN();
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(c->getType());
  if (!vt) return false;
  for (unsigned i = 0; i < vt->getNumElements(); ++i) {
    auto* f = llvm::dyn_cast_or_null<llvm::ConstantFP>(c->getAggregateElement(i));
    if (!f || f->isNaN()) return false;
  }
  return true;
}

}  // namespace

llvm::Value* CodeGenLLVM::emit_float_arith(NodeKind k, llvm::Value* a, llvm::Value* b) {
  switch (k) {
    case NodeKind::Add:
      return builder_.CreateFAdd(a, b);
    case NodeKind::Sub:
      return builder_.CreateFSub(a, b);
    case NodeKind::Mul:
      return builder_.CreateFMul(a, b);
    case NodeKind::Div:
      return builder_.CreateFDiv(a, b);
    case NodeKind::Mod:
      return builder_.CreateFRem(a, b);  // fmod
    case NodeKind::FloorDiv:
      return builder_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, builder_.CreateFDiv(a, b));
    case NodeKind::FloorMod: {
      llvm::Value* q = builder_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, builder_.CreateFDiv(a, b));
      return builder_.CreateFSub(a, builder_.CreateFMul(q, b));
    }
    case NodeKind::Min:
    case NodeKind::Max: {
      // compute/expr.h: NaN if either operand is NaN, else the smaller
      // (larger) one, the first on ties. Against a constant that is not
      // NaN (a clamp's bound, relu's 0), one select whose unordered case
      // picks the other operand says all of it: x86's min/max alone.
      const bool min = k == NodeKind::Min;
      if (never_nan_constant(b))
        return min ? builder_.CreateSelect(builder_.CreateFCmpOLT(b, a), b, a)
                   : builder_.CreateSelect(builder_.CreateFCmpOLT(a, b), b, a);
      if (never_nan_constant(a))
        return min ? builder_.CreateSelect(builder_.CreateFCmpOGE(b, a), a, b)
                   : builder_.CreateSelect(builder_.CreateFCmpOLE(b, a), a, b);
      // a + b is NaN exactly when either is.
      llvm::Value* r = min ? builder_.CreateSelect(builder_.CreateFCmpOLT(b, a), b, a)
                           : builder_.CreateSelect(builder_.CreateFCmpOLT(a, b), b, a);
      return builder_.CreateSelect(builder_.CreateFCmpUNO(a, b), builder_.CreateFAdd(a, b), r);
    }
    default:
      internal_error() << "not a float arithmetic op: " << node_kind_name(k);
  }
}

llvm::Value* CodeGenLLVM::emit_int_arith(NodeKind k, DType t, const Expr& lhs, const Expr& rhs, llvm::Value* a,
                                         llvm::Value* b) {
  const bool is_signed = t.is_int();
  const bool nsw = is_signed && t.bits >= 32 && !is_data(rhs) && !is_data(lhs);  // see is_data
  switch (k) {
    case NodeKind::Add:
      return builder_.CreateAdd(a, b, "", false, nsw);
    case NodeKind::Sub:
      return builder_.CreateSub(a, b, "", false, nsw);
    case NodeKind::Mul:
      return builder_.CreateMul(a, b, "", false, nsw);
    case NodeKind::Div:
      return is_signed ? builder_.CreateSDiv(a, b) : builder_.CreateUDiv(a, b);
    case NodeKind::Mod:
      return is_signed ? builder_.CreateSRem(a, b) : builder_.CreateURem(a, b);
    case NodeKind::FloorDiv:
      return is_signed ? emit_floor_div_mod(true, rhs, a, b) : builder_.CreateUDiv(a, b);
    case NodeKind::FloorMod:
      return is_signed ? emit_floor_div_mod(false, rhs, a, b) : builder_.CreateURem(a, b);
    case NodeKind::Min:
      return builder_.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, a, b);
    case NodeKind::Max:
      return builder_.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, a, b);
    default:
      internal_error() << "not an integer arithmetic op: " << node_kind_name(k);
  }
}

// Signed floor division / modulo. A positive constant divisor (the common
// case: split and fuse produce them) needs one fix-up compare, a power of two
// none at all; the general case corrects when remainder and divisor differ in sign.
llvm::Value* CodeGenLLVM::emit_floor_div_mod(bool is_div, const Expr& rhs, llvm::Value* a, llvm::Value* b) {
  llvm::Type* ty = a->getType();
  int64_t c = 0;
  if (as_const_int(rhs, &c) && c > 0) {
    if ((c & (c - 1)) == 0) {
      int shift = 0;
      while ((int64_t{1} << shift) < c) ++shift;
      return is_div ? builder_.CreateAShr(a, make_int(ty, shift)) : builder_.CreateAnd(a, make_int(ty, c - 1));
    }
    llvm::Value* q = builder_.CreateSDiv(a, b);
    llvm::Value* r = builder_.CreateSRem(a, b);
    llvm::Value* neg = builder_.CreateICmpSLT(r, llvm::Constant::getNullValue(ty));
    return is_div ? builder_.CreateSub(q, builder_.CreateZExt(neg, ty))
                  : builder_.CreateSelect(neg, builder_.CreateAdd(r, b), r);
  }
  llvm::Value* q = builder_.CreateSDiv(a, b);
  llvm::Value* r = builder_.CreateSRem(a, b);
  llvm::Value* zero = llvm::Constant::getNullValue(ty);
  llvm::Value* adjust =
      builder_.CreateAnd(builder_.CreateICmpNE(r, zero), builder_.CreateICmpSLT(builder_.CreateXor(r, b), zero));
  return is_div ? builder_.CreateSub(q, builder_.CreateZExt(adjust, ty))
                : builder_.CreateSelect(adjust, builder_.CreateAdd(r, b), r);
}

llvm::Value* CodeGenLLVM::emit_compare(NodeKind k, DType t, llvm::Value* a, llvm::Value* b) {
  if (t.is_float()) {
    switch (k) {
      case NodeKind::EQ:
        return builder_.CreateFCmpOEQ(a, b);
      case NodeKind::NE:
        return builder_.CreateFCmpUNE(a, b);
      case NodeKind::LT:
        return builder_.CreateFCmpOLT(a, b);
      case NodeKind::LE:
        return builder_.CreateFCmpOLE(a, b);
      case NodeKind::GT:
        return builder_.CreateFCmpOGT(a, b);
      case NodeKind::GE:
        return builder_.CreateFCmpOGE(a, b);
      default:
        break;
    }
  } else {
    const bool s = t.is_int();
    switch (k) {
      case NodeKind::EQ:
        return builder_.CreateICmpEQ(a, b);
      case NodeKind::NE:
        return builder_.CreateICmpNE(a, b);
      case NodeKind::LT:
        return s ? builder_.CreateICmpSLT(a, b) : builder_.CreateICmpULT(a, b);
      case NodeKind::LE:
        return s ? builder_.CreateICmpSLE(a, b) : builder_.CreateICmpULE(a, b);
      case NodeKind::GT:
        return s ? builder_.CreateICmpSGT(a, b) : builder_.CreateICmpUGT(a, b);
      case NodeKind::GE:
        return s ? builder_.CreateICmpSGE(a, b) : builder_.CreateICmpUGE(a, b);
      default:
        break;
    }
  }
  internal_error() << "not a comparison: " << node_kind_name(k);
}

llvm::Value* CodeGenLLVM::emit_call(const CallNode* op) {
  const DType t = op->dtype;
  std::vector<llvm::Value*> args;
  for (const Expr& a : op->args) args.push_back(emit(a));
  const DType f32 = DType::f32().with_lanes(t.lanes);
  if (t.code == DType::kBFloat) {
    for (auto& a : args) a = bf16_to_f32(a);
    return f32_to_bf16(emit_math(op->op, f32, args));
  }
  if (t.code == DType::kFloat && t.bits == 16) {
    // Through f32, like bf16: on CPUs with native f16 arithmetic
    // (AVX512-FP16) LLVM 14 cannot select f16 exp, log, pow... and aborts.
    for (auto& a : args) a = builder_.CreateFPExt(a, llvm_type(f32));
    return builder_.CreateFPTrunc(emit_math(op->op, f32, args), llvm_type(t));
  }
  return emit_math(op->op, t, args);
}

llvm::Value* CodeGenLLVM::emit_math(MathOp op, DType t, const std::vector<llvm::Value*>& args) {
  llvm::Value* x = args[0];
  auto unary = [&](llvm::Intrinsic::ID id) { return builder_.CreateUnaryIntrinsic(id, x); };
  switch (op) {
    case MathOp::kExp:
      return emit_exp(t, x);
    case MathOp::kLog:
      return unary(llvm::Intrinsic::log);
    case MathOp::kSqrt:
      return unary(llvm::Intrinsic::sqrt);
    case MathOp::kFabs:
      return unary(llvm::Intrinsic::fabs);
    case MathOp::kFloor:
      return unary(llvm::Intrinsic::floor);
    case MathOp::kCeil:
      return unary(llvm::Intrinsic::ceil);
    case MathOp::kRound:
      return unary(llvm::Intrinsic::round);  // halfway cases away from zero, like C round()
    case MathOp::kRoundEven:
      return unary(llvm::Intrinsic::roundeven);
    case MathOp::kPow:
      return builder_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, args[1]);
    case MathOp::kTanh:
      return emit_libm_per_lane("tanh", t, x);
    case MathOp::kErf:
      return emit_erf(t, x);
    case MathOp::kSigmoid: {
      llvm::Value* one = llvm::ConstantFP::get(x->getType(), 1.0);
      llvm::Value* e = emit_exp(t, builder_.CreateFNeg(x));
      return builder_.CreateFDiv(one, builder_.CreateFAdd(one, e));
    }
  }
  internal_error() << "unknown math op";
}

// A libm function without an LLVM intrinsic: one call per lane (f16 via f32).
llvm::Value* CodeGenLLVM::emit_libm_per_lane(const std::string& name, DType t, llvm::Value* x) {
  if (t.bits == 16) {
    llvm::Type* half_ty = x->getType();
    const DType f32 = DType::f32().with_lanes(t.lanes);
    llvm::Value* r = emit_libm_per_lane(name, f32, builder_.CreateFPExt(x, llvm_type(f32)));
    return builder_.CreateFPTrunc(r, half_ty);
  }
  internal_assert(t.bits == 32 || t.bits == 64) << t.str();
  llvm::Type* scalar = llvm_type(t.element_of());
  llvm::Function* fn = declare_libm(t.bits == 32 ? name + "f" : name, scalar, {scalar});
  if (t.lanes == 1) return builder_.CreateCall(fn, {x});
  llvm::Value* out = llvm::UndefValue::get(x->getType());
  for (int i = 0; i < t.lanes; ++i) {
    llvm::Value* lane = builder_.CreateCall(fn, {builder_.CreateExtractElement(x, i)});
    out = builder_.CreateInsertElement(out, lane, i);
  }
  return out;
}

// erf: f64 calls libm; f32 (and f16 through f32) evaluates the rational
// approximation XLA and Eigen use, x * P(x^2) / Q(x^2) on x clamped to
// [-4, 4] (erf is +-1 within f32 precision beyond), which vectorizes: no
// call per lane. Largest error against libm's erf: 4.2e-7 (a few ulp).
llvm::Value* CodeGenLLVM::emit_erf(DType t, llvm::Value* x) {
  if (t.bits == 64) return emit_libm_per_lane("erf", t, x);
  if (t.bits == 16) {
    llvm::Type* half_ty = x->getType();
    return builder_.CreateFPTrunc(emit_erf(DType::f32().with_lanes(t.lanes),
                                           builder_.CreateFPExt(x, llvm_type(DType::f32().with_lanes(t.lanes)))),
                                  half_ty);
  }
  internal_assert(t.bits == 32) << t.str();
  static const double kNumerator[] = {-2.72614225801306e-10, 2.77068142495902e-08,  -2.10102402082508e-06,
                                      -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                                      -1.60960333262415e-02};
  static const double kDenominator[] = {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                                        -7.37332916720468e-03, -1.42647390514189e-02};
  llvm::Type* ty = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(ty, v); };
  // Ordered compares: NaN stays NaN (minnum / maxnum would turn it into a bound).
  x = builder_.CreateSelect(builder_.CreateFCmpOLT(x, c(-4.0)), c(-4.0), x);
  x = builder_.CreateSelect(builder_.CreateFCmpOGT(x, c(4.0)), c(4.0), x);
  llvm::Value* x2 = builder_.CreateFMul(x, x);
  auto horner = [&](const double* coef, int n) {
    llvm::Value* acc = c(coef[0]);
    for (int i = 1; i < n; ++i) acc = builder_.CreateFAdd(builder_.CreateFMul(acc, x2), c(coef[i]));
    return acc;
  };
  llvm::Value* p = horner(kNumerator, 7);
  llvm::Value* q = horner(kDenominator, 5);
  return builder_.CreateFDiv(builder_.CreateFMul(x, p), q);
}

// exp: f64 (and f16) keep LLVM's intrinsic; f32 is evaluated inline so
// that it vectorizes (the intrinsic becomes one expf call per lane):
// exp(x) = 2^n * e^r with n = round(x / ln 2) and r = x - n ln 2 (ln 2 in
// two parts, Cody-Waite), e^r by Cephes' expf polynomial, 2^n applied in
// two halves so that the result overflows to infinity and underflows to
// zero (through the denormals) where expf does. NaN stays NaN.
llvm::Value* CodeGenLLVM::emit_exp(DType t, llvm::Value* x) {
  if (t.bits != 32) return builder_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, x);
  llvm::Type* ty = x->getType();
  llvm::Type* ity = llvm_type(DType::i32().with_lanes(t.lanes));
  auto c = [&](double v) { return llvm::ConstantFP::get(ty, v); };
  auto ci = [&](int v) { return llvm::ConstantInt::get(ity, static_cast<uint64_t>(static_cast<int64_t>(v)), true); };
  llvm::Value* is_nan = builder_.CreateFCmpUNO(x, x);
  // Beyond these bounds the result is already 0 or infinity.
  llvm::Value* xc = builder_.CreateSelect(is_nan, c(0.0), x);
  xc = builder_.CreateSelect(builder_.CreateFCmpOLT(xc, c(-104.0)), c(-104.0), xc);
  xc = builder_.CreateSelect(builder_.CreateFCmpOGT(xc, c(89.0)), c(89.0), xc);
  llvm::Value* nf =
      builder_.CreateUnaryIntrinsic(llvm::Intrinsic::rint, builder_.CreateFMul(xc, c(1.44269504088896341)));
  llvm::Value* r = builder_.CreateFSub(xc, builder_.CreateFMul(nf, c(0.693359375)));
  r = builder_.CreateFSub(r, builder_.CreateFMul(nf, c(-2.12194440e-4)));
  static const double kPoly[] = {1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                                 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1};
  llvm::Value* p = c(kPoly[0]);
  for (int i = 1; i < 6; ++i) p = builder_.CreateFAdd(builder_.CreateFMul(p, r), c(kPoly[i]));
  llvm::Value* y =
      builder_.CreateFAdd(builder_.CreateFAdd(builder_.CreateFMul(p, builder_.CreateFMul(r, r)), r), c(1.0));
  // 2^n = 2^(n/2) * 2^(n - n/2): each half is a normal float for n in [-150, 129].
  llvm::Value* n = builder_.CreateFPToSI(nf, ity);
  llvm::Value* n1 = builder_.CreateAShr(n, ci(1));
  llvm::Value* n2 = builder_.CreateSub(n, n1);
  auto pow2 = [&](llvm::Value* k) {
    return builder_.CreateBitCast(builder_.CreateShl(builder_.CreateAdd(k, ci(127)), ci(23)), ty);
  };
  llvm::Value* result = builder_.CreateFMul(builder_.CreateFMul(y, pow2(n1)), pow2(n2));
  return builder_.CreateSelect(is_nan, x, result);
}

llvm::Value* CodeGenLLVM::emit_ramp(const RampNode* op) {
  const DType elem = op->dtype.element_of();
  internal_assert(elem.code != DType::kBFloat) << "bf16 ramp";
  llvm::Value* base = builder_.CreateVectorSplat(op->lanes, emit(op->base));
  llvm::Value* stride = builder_.CreateVectorSplat(op->lanes, emit(op->stride));
  std::vector<llvm::Constant*> steps;
  llvm::Type* et = llvm_type(elem);
  for (int i = 0; i < op->lanes; ++i) {
    steps.push_back(elem.is_float() ? llvm::ConstantFP::get(et, i) : llvm::cast<llvm::Constant>(make_int(et, i)));
  }
  llvm::Value* offsets = llvm::ConstantVector::get(steps);
  if (elem.is_float()) return builder_.CreateFAdd(base, builder_.CreateFMul(stride, offsets));
  const bool nsw = elem.is_int() && elem.bits >= 32;
  return builder_.CreateAdd(base, builder_.CreateMul(stride, offsets, "", false, nsw), "", false, nsw);
}

bool CodeGenLLVM::is_data(const Expr& e) const {
  bool data = false;
  post_order_visit(e, [&](const Ref<Object>& n) {
    if (data) return;
    if (n->kind() == NodeKind::Load) data = true;
    if (n->kind() == NodeKind::Var) data = data_vars_.count(static_cast<const VarNode*>(n.get())) > 0;
  });
  return data;
}

bool CodeGenLLVM::may_fault(const Expr& e) {
  bool fault = false;
  post_order_visit(e, [&](const Ref<Object>& n) {
    if (fault) return;
    if (auto* l = n->kind() == NodeKind::Load ? static_cast<const LoadNode*>(n.get()) : nullptr) {
      if (l->predicate.defined()) return;  // already evaluated only where its lanes are on
      auto it = buffer_elems_.find(l->buffer.node());
      const ConstIntBound b = analyzer_.const_int_bound(l->index);
      fault = it == buffer_elems_.end() || b.min_value < 0 || b.max_value >= it->second;
      return;
    }
    const NodeKind k = n->kind();
    if (k != NodeKind::Div && k != NodeKind::Mod && k != NodeKind::FloorDiv && k != NodeKind::FloorMod) return;
    auto* op = static_cast<const BinaryNode*>(n.get());
    if (!op->b.dtype().is_integer()) return;
    const ConstIntBound b = analyzer_.const_int_bound(op->b);
    fault = b.min_value <= 0 && b.max_value >= 0;
  });
  return fault;
}

// compute/expr.h: select evaluates only the chosen branch. A branch that
// cannot fault is computed anyway and the result picked (a select
// instruction, which vectorizes); one that may fault is computed under a
// branch. Vector selects reach here with their loads already predicated by
// the vectorizer, which does not vectorize a division under a select.
llvm::Value* CodeGenLLVM::emit_select(const SelectNode* op) {
  llvm::Value* c = emit(op->condition);
  const bool lazy = op->condition.dtype().is_scalar() && (may_fault(op->true_value) || may_fault(op->false_value));
  if (!lazy) {
    llvm::Value* t = emit(op->true_value);
    llvm::Value* f = emit(op->false_value);
    return builder_.CreateSelect(c, t, f);
  }
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "select_true", func_);
  auto* else_bb = llvm::BasicBlock::Create(ctx_, "select_false", func_);
  auto* done_bb = llvm::BasicBlock::Create(ctx_, "select_done", func_);
  builder_.CreateCondBr(c, then_bb, else_bb);
  builder_.SetInsertPoint(then_bb);
  llvm::Value* t = emit(op->true_value);
  llvm::BasicBlock* then_end = builder_.GetInsertBlock();
  builder_.CreateBr(done_bb);
  builder_.SetInsertPoint(else_bb);
  llvm::Value* f = emit(op->false_value);
  llvm::BasicBlock* else_end = builder_.GetInsertBlock();
  builder_.CreateBr(done_bb);
  builder_.SetInsertPoint(done_bb);
  llvm::PHINode* phi = builder_.CreatePHI(t->getType(), 2);
  phi->addIncoming(t, then_end);
  phi->addIncoming(f, else_end);
  return phi;
}

llvm::Value* CodeGenLLVM::emit_let(const LetNode* op) {
  llvm::Value* value = emit(op->value);
  const VarNode* v = op->var.node();
  auto it = values_.find(v);
  llvm::Value* previous = it == values_.end() ? nullptr : it->second;
  bind(v, value);
  Analyzer::VarScope scope(&analyzer_, op->var);
  if (op->value.dtype().is_integer() && op->value.dtype().is_scalar()) analyzer_.bind(op->var, op->value);
  const bool data = is_data(op->value);
  if (data) data_vars_.insert(v);
  llvm::Value* result = emit(op->body);
  if (data) data_vars_.erase(v);
  unbind(v, previous);
  return result;
}

}  // namespace kiln
