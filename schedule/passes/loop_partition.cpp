#include "schedule/passes/loop_partition.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/ir_functor.h"
#include "schedule/passes/pass_util.h"

namespace kiln {
namespace passes {

namespace {

constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();

struct Interval {
  int64_t lo, hi;
};
using Env = std::unordered_map<const VarNode*, Interval>;

bool fits(__int128 v) { return v > kNegInf && v < kPosInf; }  // the extremes are reserved for infinity

int64_t floordiv_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Signed scalar integers: the comparisons below reason about their
// mathematical values (unsigned index math could wrap).
bool is_index_type(const Expr& e) { return e.dtype().is_scalar() && e.dtype().is_int(); }

// Interval of an integer expression given the ranges in env; false when some
// part has no known range.
bool eval_interval(const Expr& e, const Env& env, Interval* out) {
  if (!is_index_type(e)) return false;
  if (auto* imm = e.as<IntImmNode>()) {
    *out = {imm->value, imm->value};
    return true;
  }
  if (auto* v = e.as<VarNode>()) {
    auto it = env.find(v);
    if (it == env.end()) return false;
    *out = it->second;
    return true;
  }
  if (auto* c = e.as<CastNode>()) {
    DType from = c->value.dtype();
    if (!from.is_int() || !from.is_scalar() || from.bits > c->dtype.bits) return false;
    return eval_interval(c->value, env, out);
  }
  if (auto* s = e.as<SelectNode>()) {
    Interval t, f;
    if (!eval_interval(s->true_value, env, &t) || !eval_interval(s->false_value, env, &f)) return false;
    *out = {std::min(t.lo, f.lo), std::max(t.hi, f.hi)};
    return true;
  }
  if (!is_binary_kind(e->kind())) return false;
  auto* bin = static_cast<const BinaryNode*>(e.get());
  Interval a, b;
  if (!eval_interval(bin->a, env, &a) || !eval_interval(bin->b, env, &b)) return false;
  __int128 lo, hi;
  switch (e->kind()) {
    case NodeKind::Add:
      lo = (__int128)a.lo + b.lo, hi = (__int128)a.hi + b.hi;
      break;
    case NodeKind::Sub:
      lo = (__int128)a.lo - b.hi, hi = (__int128)a.hi - b.lo;
      break;
    case NodeKind::Mul: {
      __int128 c[4] = {(__int128)a.lo * b.lo, (__int128)a.lo * b.hi, (__int128)a.hi * b.lo, (__int128)a.hi * b.hi};
      lo = *std::min_element(c, c + 4), hi = *std::max_element(c, c + 4);
      break;
    }
    case NodeKind::Min:
      lo = std::min(a.lo, b.lo), hi = std::min(a.hi, b.hi);
      break;
    case NodeKind::Max:
      lo = std::max(a.lo, b.lo), hi = std::max(a.hi, b.hi);
      break;
    case NodeKind::FloorDiv:
    case NodeKind::Div:  // both monotone in a for a positive constant divisor
      if (b.lo != b.hi || b.lo <= 0) return false;
      if (e->kind() == NodeKind::FloorDiv)
        lo = floordiv_i(a.lo, b.lo), hi = floordiv_i(a.hi, b.lo);
      else
        lo = a.lo / b.lo, hi = a.hi / b.lo;
      break;
    case NodeKind::FloorMod:
    case NodeKind::Mod:
      if (b.lo != b.hi || b.lo <= 0) return false;
      if (e->kind() == NodeKind::Mod && a.lo < 0) {
        lo = -(b.lo - 1), hi = b.lo - 1;
      } else if (floordiv_i(a.lo, b.lo) == floordiv_i(a.hi, b.lo)) {
        lo = a.lo - floordiv_i(a.lo, b.lo) * b.lo, hi = a.hi - floordiv_i(a.hi, b.lo) * b.lo;
      } else {
        lo = 0, hi = b.lo - 1;
      }
      break;
    default:
      return false;
  }
  if (!fits(lo) || !fits(hi)) return false;
  *out = {static_cast<int64_t>(lo), static_cast<int64_t>(hi)};
  return true;
}

// e as sum(coef * var) + constant + sum(coef * opaque term).
struct Linear {
  std::unordered_map<const VarNode*, int64_t> coef;
  std::vector<std::pair<Expr, int64_t>> opaque;
  int64_t constant = 0;
  bool ok = true;  // false on overflow
};

void add_linear(const Expr& e, int64_t scale, Linear* out) {
  if (!out->ok) return;
  auto mul = [&](int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) out->ok = false;
    return r;
  };
  auto add = [&](int64_t* acc, int64_t v) {
    if (__builtin_add_overflow(*acc, v, acc)) out->ok = false;
  };
  if (auto* imm = e.as<IntImmNode>()) {
    add(&out->constant, mul(imm->value, scale));
  } else if (auto* v = e.as<VarNode>()) {
    add(&out->coef[v], scale);
  } else if (auto* a = e.as<AddNode>()) {
    add_linear(a->a, scale, out);
    add_linear(a->b, scale, out);
  } else if (auto* s = e.as<SubNode>()) {
    add_linear(s->a, scale, out);
    add_linear(s->b, mul(scale, -1), out);
  } else if (auto* m = e.as<MulNode>(); m && m->b.as<IntImmNode>()) {
    add_linear(m->a, mul(scale, m->b.as<IntImmNode>()->value), out);
  } else if (m && m->a.as<IntImmNode>()) {
    add_linear(m->b, mul(scale, m->a.as<IntImmNode>()->value), out);
  } else {
    out->opaque.emplace_back(e, scale);
  }
}

// Interval of the linear form, leaving out the variable `skip`.
bool linear_interval(const Linear& lf, const Env& env, const VarNode* skip, Interval* out) {
  if (!lf.ok) return false;
  __int128 lo = lf.constant, hi = lf.constant;
  auto acc = [&](Interval r, int64_t c) {
    __int128 x = (__int128)r.lo * c, y = (__int128)r.hi * c;
    lo += std::min(x, y);
    hi += std::max(x, y);
  };
  for (auto& [v, c] : lf.coef) {
    if (v == skip || c == 0) continue;
    auto it = env.find(v);
    if (it == env.end()) return false;
    acc(it->second, c);
  }
  for (auto& [e, c] : lf.opaque) {
    Interval r;
    if (!eval_interval(e, env, &r)) return false;
    acc(r, c);
  }
  if (!fits(lo) || !fits(hi)) return false;
  *out = {static_cast<int64_t>(lo), static_cast<int64_t>(hi)};
  return true;
}

// Writes a comparison conjunct as `E < 0` (E linear); false if it is not an
// integer ordering comparison.
bool as_negative_form(const Expr& cond, Linear* out) {
  bool negate = false;
  Expr c = cond;
  while (auto* n = c.as<NotNode>()) {
    negate = !negate;
    c = n->a;
  }
  NodeKind k = c->kind();
  if (k != NodeKind::LT && k != NodeKind::LE && k != NodeKind::GT && k != NodeKind::GE) return false;
  auto* bin = static_cast<const BinaryNode*>(c.get());
  if (!is_index_type(bin->a)) return false;
  if (negate) {  // !(a < b) == a >= b, ...
    k = k == NodeKind::LT   ? NodeKind::GE
        : k == NodeKind::LE ? NodeKind::GT
        : k == NodeKind::GT ? NodeKind::LE
                            : NodeKind::LT;
  }
  // a < b: a - b < 0; a <= b: a - b - 1 < 0; a > b: b - a < 0; a >= b: b - a - 1 < 0.
  bool swap = k == NodeKind::GT || k == NodeKind::GE;
  add_linear(swap ? bin->b : bin->a, 1, out);
  add_linear(swap ? bin->a : bin->b, -1, out);
  if (k == NodeKind::LE || k == NodeKind::GE) add_linear(make_const(bin->a.dtype(), int64_t{1}), -1, out);
  return out->ok;
}

// The select a store writes when its value is one with a scalar condition
// (the guard of a padded copy), else null.
const SelectNode* guarded_value(const StoreNode* op) {
  const SelectNode* sel = op->value.as<SelectNode>();
  return sel && sel->condition.dtype().is_scalar() ? sel : nullptr;
}

enum class Truth { kTrue, kFalse, kUnknown };

Truth prove(const Expr& cond, const Env& env) {
  if (const int64_t* c = as_const_int(cond)) return *c ? Truth::kTrue : Truth::kFalse;
  if (auto* a = cond.as<AndNode>()) {
    Truth x = prove(a->a, env), y = prove(a->b, env);
    if (x == Truth::kFalse || y == Truth::kFalse) return Truth::kFalse;
    return x == Truth::kTrue && y == Truth::kTrue ? Truth::kTrue : Truth::kUnknown;
  }
  if (auto* o = cond.as<OrNode>()) {
    Truth x = prove(o->a, env), y = prove(o->b, env);
    if (x == Truth::kTrue || y == Truth::kTrue) return Truth::kTrue;
    return x == Truth::kFalse && y == Truth::kFalse ? Truth::kFalse : Truth::kUnknown;
  }
  Linear lf;
  Interval r;
  if (as_negative_form(cond, &lf) && linear_interval(lf, env, nullptr, &r)) {
    if (r.hi < 0) return Truth::kTrue;
    if (r.lo >= 0) return Truth::kFalse;
  }
  return Truth::kUnknown;
}

// Finds the values of loop var `v` for which every usable guard in a loop
// body is provably true: the intersection over guards whose v-dependent
// conjuncts are all affine in v with a remainder of known range. Guards are
// IfThenElse conditions and, with `selects`, the conditions of stores whose
// value is a select (a padded copy: `pad[i] = select(inside, data[...], 0)`).
class GuardRegion : public IRVisitor {
 public:
  GuardRegion(const VarNode* v, Env env, bool selects) : v_(v), env_(std::move(env)), selects_(selects) {}
  using IRVisitor::visit;

  bool found = false;
  int64_t lo = kNegInf, hi = kPosInf;
  // Where some guard turns true or false: each usable guard's first true
  // iteration and the one after its last.
  std::vector<int64_t> cuts;
  // Where a guard becomes false in every iteration of the inner loops: the
  // first iteration past which one of its conjuncts can no longer hold (the
  // empty sub-tiles after a split's last partial one).
  std::vector<int64_t> false_cuts;

 protected:
  void visit_For(const ForNode* op) override {
    const int64_t *mn = as_const_int(op->min), *ext = as_const_int(op->extent);
    if (mn && ext && *ext > 0) env_[op->loop_var.node()] = {*mn, *mn + *ext - 1};
    visit(op->body);
    env_.erase(op->loop_var.node());
  }

  void visit_IfThenElse(const IfThenElseNode* op) override {
    constrain(op->condition);
    visit(op->then_case);
    visit(op->else_case);
  }

  void visit_Store(const StoreNode* op) override {
    if (const SelectNode* sel = guarded_value(op); sel && selects_) constrain(sel->condition);
    IRVisitor::visit_Store(op);
  }

 private:
  void constrain(const Expr& condition) {
    std::vector<Expr> conj;
    split_conjuncts(condition, &conj);
    int64_t l = kNegInf, h = kPosInf;
    bool usable = true, constrains = false;
    for (auto& c : conj) {
      if (!uses_var(c, v_)) continue;
      Linear lf;
      Interval rest;
      if (!as_negative_form(c, &lf) || !linear_interval(lf, env_, v_, &rest)) {
        usable = false;
        break;
      }
      for (auto& o : lf.opaque) usable &= !uses_var(o.first, v_);
      int64_t coef = lf.coef.count(v_) ? lf.coef[v_] : 0;
      if (!usable) break;
      if (coef == 0) continue;
      constrains = true;
      // coef*v + rest < 0 for every rest in range <=> coef*v + rest.hi < 0;
      // for none <=> coef*v + rest.lo >= 0.
      if (coef > 0) {
        h = std::min(h, floordiv_i(-rest.hi - 1, coef));
        false_cuts.push_back(-floordiv_i(rest.lo, coef));  // ceil(-rest.lo / coef)
      } else {
        l = std::max(l, -floordiv_i(-(rest.hi + 1), -coef));
        false_cuts.push_back(floordiv_i(rest.lo, -coef) + 1);
      }
    }
    if (usable && constrains) {
      found = true;
      lo = std::max(lo, l);
      hi = std::min(hi, h);
      if (l != kNegInf) cuts.push_back(l);
      if (h != kPosInf) cuts.push_back(h + 1);
    }
  }

  const VarNode* v_;
  Env env_;
  bool selects_;
};

class Partitioner : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  Stmt mutate_For(const ForNode* op, const Stmt& self) override {
    const int64_t *mn = as_const_int(op->min), *ext = as_const_int(op->extent);
    bool partitionable = op->for_kind == ForKind::kSerial || op->for_kind == ForKind::kParallel ||
                         op->for_kind == ForKind::kVectorized || op->for_kind == ForKind::kUnrolled;
    if (!mn || !ext || *ext <= 0 || *ext > kPosInf / 4 || *mn > kPosInf / 4 || *mn < kNegInf / 4)
      return IRMutator::mutate_For(op, self);
    int64_t lo = *mn, hi = *mn + *ext - 1;
    if (!partitionable) {  // still tell the body the var's range
      env_[op->loop_var.node()] = {lo, hi};
      Stmt body = mutate(op->body);
      env_.erase(op->loop_var.node());
      if (body.same_as(op->body)) return self;
      if (!body.defined()) return body;
      return ForNode::make(op->loop_var, op->min, op->extent, op->for_kind, body, op->thread_tag);
    }

    // Select guards only split serial loops: a parallel loop would branch
    // its whole body (the padded copy's tile) three ways for a copy.
    GuardRegion region(op->loop_var.node(), env_, op->for_kind != ForKind::kParallel);
    region.visit(op->body);
    int64_t main_lo = std::max(lo, region.lo), main_hi = std::min(hi, region.hi);
    if (region.found && main_lo > main_hi && op->for_kind != ForKind::kParallel &&
        op->for_kind != ForKind::kVectorized) {
      // No iteration passes every guard (a row of two tiles, the first on the
      // left padding and the second on the right; a split's last partial
      // tile before empty ones): split where the guards change, so that each
      // piece decides all of them, or at least where they turn true.
      std::vector<int64_t> all = region.cuts;
      all.insert(all.end(), region.false_cuts.begin(), region.false_cuts.end());
      if (Stmt s = split_at_cuts(op, lo, hi, all, op->for_kind); s.defined()) return s;
      if (Stmt s = split_at_cuts(op, lo, hi, region.cuts, op->for_kind); s.defined()) return s;
    }
    if (!region.found || main_lo > main_hi || (main_lo == lo && main_hi == hi))
      return make_piece(op, lo, hi, op->for_kind);

    if (op->for_kind == ForKind::kParallel) {
      // Keep one parallel loop (splitting it would serialize the peeled
      // iterations) and branch on the loop var inside it instead.
      Expr v = op->loop_var;
      DType t = v.dtype();
      Stmt body = process_range(op, main_lo, main_hi);
      if (main_hi < hi) body = branch(v <= make_const(t, main_hi), body, process_range(op, main_hi + 1, hi));
      if (main_lo > lo) body = branch(v < make_const(t, main_lo), process_range(op, lo, main_lo - 1), body);
      if (!body.defined()) return body;
      return ForNode::make(op->loop_var, op->min, op->extent, op->for_kind, body, op->thread_tag);
    }
    ForKind peeled = op->for_kind == ForKind::kVectorized ? ForKind::kSerial : op->for_kind;
    // A peeled part splits again where its guards all turn false (the
    // empty sub-tiles after a partial one), so that the partial iterations
    // are pieces of their own, their guards decided.
    auto peel = [&](int64_t a, int64_t b) {
      if (op->for_kind != ForKind::kVectorized)
        if (Stmt s = split_at_cuts(op, a, b, region.false_cuts, peeled); s.defined()) return s;
      return make_piece(op, a, b, peeled);
    };
    std::vector<Stmt> pieces;
    if (main_lo > lo) pieces.push_back(peel(lo, main_lo - 1));
    pieces.push_back(make_piece(op, main_lo, main_hi, op->for_kind));
    if (main_hi < hi) pieces.push_back(peel(main_hi + 1, hi));
    return SeqNode::make(std::move(pieces));
  }

  Stmt mutate_IfThenElse(const IfThenElseNode* op, const Stmt& self) override {
    Expr kept;
    bool dropped = false;
    if (!reduce_guard(op->condition, &kept, &dropped)) return mutate(op->else_case);
    if (!kept.defined()) return mutate(op->then_case);
    if (!dropped) return IRMutator::mutate_IfThenElse(op, self);
    Stmt t = mutate(op->then_case), e = mutate(op->else_case);
    if (!t.defined()) return e.defined() ? IfThenElseNode::make(!kept, e) : Stmt();
    return IfThenElseNode::make(kept, t, e);
  }

  // A select guard proved true (or false) in this range stores its true
  // (false) value; conjuncts proved true are dropped.
  Stmt mutate_Store(const StoreNode* op, const Stmt& self) override {
    const SelectNode* sel = guarded_value(op);
    if (!sel) return IRMutator::mutate_Store(op, self);
    Expr kept;
    bool dropped = false;
    if (!reduce_guard(sel->condition, &kept, &dropped))
      return mutate(StoreNode::make(op->buffer, sel->false_value, op->index, op->predicate));
    if (!kept.defined()) return mutate(StoreNode::make(op->buffer, sel->true_value, op->index, op->predicate));
    if (!dropped) return IRMutator::mutate_Store(op, self);
    return mutate(
        StoreNode::make(op->buffer, select(kept, sel->true_value, sel->false_value), op->index, op->predicate));
  }

 private:
  // A guard's conjuncts in the current ranges: false when one is provably
  // false; else *kept gets those not provably true (undefined when all
  // are) and *dropped whether any was.
  bool reduce_guard(const Expr& condition, Expr* kept, bool* dropped) const {
    std::vector<Expr> conj;
    split_conjuncts(condition, &conj);
    for (auto& c : conj) {
      const Truth t = prove(c, env_);
      if (t == Truth::kFalse) return false;
      if (t == Truth::kTrue)
        *dropped = true;
      else
        *kept = kept->defined() ? *kept && c : c;
    }
    return true;
  }

  // The body of loop op processed for the iterations [lo, hi] (with the
  // var replaced by its value when that is a single one).
  Stmt process_range(const ForNode* op, int64_t lo, int64_t hi) {
    const VarNode* v = op->loop_var.node();
    Stmt body = lo == hi ? substitute(op->body, {{v, make_const(op->loop_var.dtype(), lo)}}) : op->body;
    env_[v] = {lo, hi};
    body = mutate(body);
    env_.erase(v);
    return body;
  }

  // The iterations [lo, hi] of loop op as a loop of `kind`; a single
  // iteration is emitted without a loop.
  Stmt make_piece(const ForNode* op, int64_t lo, int64_t hi, ForKind kind) {
    Stmt body = process_range(op, lo, hi);
    if (!body.defined() || lo == hi) return body;
    if (lo == *as_const_int(op->min) && hi - lo + 1 == *as_const_int(op->extent) && kind == op->for_kind &&
        body.same_as(op->body))
      return Stmt(op);
    DType t = op->loop_var.dtype();
    return ForNode::make(op->loop_var, make_const(t, lo), make_const(t, hi - lo + 1), kind, body, op->thread_tag);
  }

  // The iterations [lo, hi] of loop op as consecutive pieces of `kind` that
  // start at lo and at each cut inside (lo, hi]; undefined when there is no
  // such cut or that would be more than kMaxPieces pieces (code size).
  Stmt split_at_cuts(const ForNode* op, int64_t lo, int64_t hi, std::vector<int64_t> cuts, ForKind kind) {
    constexpr size_t kMaxPieces = 4;
    cuts.erase(std::remove_if(cuts.begin(), cuts.end(), [&](int64_t c) { return c <= lo || c > hi; }), cuts.end());
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    if (cuts.empty() || cuts.size() + 1 > kMaxPieces) return Stmt();
    std::vector<Stmt> pieces;
    int64_t start = lo;
    cuts.push_back(hi + 1);
    for (int64_t c : cuts) {
      if (Stmt p = make_piece(op, start, c - 1, kind); p.defined()) pieces.push_back(p);
      start = c;
    }
    if (pieces.empty()) return make_no_op();
    return pieces.size() == 1 ? pieces[0] : SeqNode::make(std::move(pieces));
  }

  // if (cond) then else otherwise, where either branch may be empty.
  static Stmt branch(const Expr& cond, const Stmt& then_case, const Stmt& else_case) {
    if (!then_case.defined()) return else_case.defined() ? IfThenElseNode::make(!cond, else_case) : Stmt();
    return IfThenElseNode::make(cond, then_case, else_case);
  }

  Env env_;  // constant ranges of the enclosing loop vars
};

}  // namespace

Stmt loop_partition(const Stmt& s) {
  Stmt r = Partitioner().mutate(s);
  return r.defined() ? r : make_no_op();
}

}  // namespace passes
}  // namespace kiln
