// A small statement interpreter for the lowering-pass tests: executes loop IR
// both before flattening (Realize / Provide / TensorRead, buffer_bind
// attributes) and after it (Allocate / Load / Store, ramps, broadcasts,
// predicates), over plain std::vector buffers. Every loop runs serially in
// order, which is the semantics every loop kind must preserve.
//
// It is strict so that a wrong lowering shows up as an error, not as a lucky
// value: out-of-bounds accesses of active lanes, reads of never-written
// elements, undefined variables, lane mismatches and division by zero throw
// ExecError. A scalar Select evaluates only the selected branch (padding
// expressions read out of bounds in the other); a vector Select evaluates
// both branches in every lane, so vectorized code must predicate the loads
// that a lane's condition protects.
#pragma once

#include <cmath>
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "compute/expr.h"
#include "compute/stmt.h"
#include "compute/tensor.h"
#include "schedule/passes/storage_flatten.h"

namespace kiln_test {

using namespace kiln;

struct ExecError : std::runtime_error {
  explicit ExecError(const std::string& m) : std::runtime_error(m) {}
};

struct Buffer {
  std::string name;
  std::vector<double> data;  // ints are exact up to 2^53, plenty for tests
  std::vector<bool> written;
  Buffer() = default;
  Buffer(std::string n, size_t size, bool initialized)
      : name(std::move(n)), data(size, 0.0), written(size, initialized) {}
};

// Counts of what ran, for tests that check that a pass removed work.
struct ExecStats {
  int64_t if_evals = 0;       // IfThenElse conditions evaluated
  int64_t vector_stores = 0;  // Store statements with more than one lane
  int64_t scalar_stores = 0;
};

class Interpreter {
 public:
  // `args`: the buffers behind the function's argument handles.
  explicit Interpreter(std::unordered_map<const VarNode*, Buffer*> args) : handles_(std::move(args)) {}

  ExecStats stats;

  void exec(const Stmt& s) {
    if (!s.defined()) return;
    switch (s->kind()) {
      case NodeKind::For: {
        auto* op = s.as<ForNode>();
        int64_t mn = scalar_int(eval(op->min)), ext = scalar_int(eval(op->extent));
        for (int64_t v = mn; v < mn + ext; ++v) {
          bind(op->loop_var.node(), int_value(op->loop_var.dtype(), {v}));
          exec(op->body);
        }
        vars_.erase(op->loop_var.node());
        return;
      }
      case NodeKind::Allocate: {
        auto* op = s.as<AllocateNode>();
        int64_t size = 1;
        for (auto& e : op->extents) size *= scalar_int(eval(e));
        if (size <= 0) throw ExecError("allocate of non-positive size");
        storage_.emplace_back(op->buffer->name, static_cast<size_t>(size), false);
        Buffer* saved = rebind_handle(op->buffer.node(), &storage_.back());
        exec(op->body);
        restore_handle(op->buffer.node(), saved);
        return;
      }
      case NodeKind::Store: {
        auto* op = s.as<StoreNode>();
        Value v = eval(op->value), idx = eval(op->index);
        Value pred = op->predicate.defined() ? eval(op->predicate) : Value();
        int lanes = idx.lanes();
        if (v.lanes() != lanes) throw ExecError("store lane mismatch");
        (lanes > 1 ? stats.vector_stores : stats.scalar_stores)++;
        Buffer* b = handle(op->buffer.node());
        for (int l = 0; l < lanes; ++l) {
          if (pred.lanes() && !lane_of(pred, l).i[0]) continue;
          write(b, idx.i[l], v.is_float ? v.f[l] : static_cast<double>(v.i[l]));
        }
        return;
      }
      case NodeKind::Seq:
        for (auto& x : s.as<SeqNode>()->seq) exec(x);
        return;
      case NodeKind::IfThenElse: {
        auto* op = s.as<IfThenElseNode>();
        ++stats.if_evals;
        if (scalar_int(eval(op->condition)))
          exec(op->then_case);
        else
          exec(op->else_case);
        return;
      }
      case NodeKind::LetStmt: {
        auto* op = s.as<LetStmtNode>();
        bind(op->var.node(), eval(op->value));
        exec(op->body);
        vars_.erase(op->var.node());
        return;
      }
      case NodeKind::Evaluate:
        eval(s.as<EvaluateNode>()->value);
        return;
      case NodeKind::Barrier:
        return;
      case NodeKind::AttrStmt: {
        auto* op = s.as<AttrStmtNode>();
        if (op->key == passes::kBufferBind) {
          Tensor t{Ref<TensorNode>(static_cast<const TensorNode*>(op->node.get()))};
          TensorStore ts;
          ts.buffer = handle(op->value.as<VarNode>());
          for (auto& e : t.shape()) {
            ts.mins.push_back(0);
            ts.extents.push_back(*as_const_int(e));
          }
          with_tensor(t->op.get(), ts, op->body);
          return;
        }
        exec(op->body);
        return;
      }
      case NodeKind::Realize: {
        auto* op = s.as<RealizeNode>();
        TensorStore ts;
        int64_t size = 1;
        for (auto& r : op->bounds) {
          ts.mins.push_back(scalar_int(eval(r.min)));
          ts.extents.push_back(scalar_int(eval(r.extent)));
          size *= ts.extents.back();
        }
        storage_.emplace_back(op->tensor->op->name, static_cast<size_t>(size), false);
        ts.buffer = &storage_.back();
        with_tensor(op->tensor->op.get(), ts, op->body);
        return;
      }
      case NodeKind::Provide: {
        auto* op = s.as<ProvideNode>();
        Value v = eval(op->value);
        if (v.lanes() != 1) throw ExecError("vector provide");
        const TensorStore& ts = tensor(op->tensor);
        write(ts.buffer, offset(ts, op->indices, op->tensor->op->name), v.is_float ? v.f[0] : double(v.i[0]));
        ++stats.scalar_stores;
        return;
      }
      default:
        throw ExecError(std::string("cannot execute ") + node_kind_name(s->kind()));
    }
  }

 private:
  struct Value {
    bool is_float = false;
    DType t;
    std::vector<int64_t> i;
    std::vector<double> f;
    int lanes() const { return static_cast<int>(is_float ? f.size() : i.size()); }
  };

  struct TensorStore {
    std::vector<int64_t> mins, extents;
    Buffer* buffer = nullptr;
  };

  static int64_t wrap(DType t, int64_t v) {
    if (t.is_bool()) return v != 0;
    if (t.bits >= 64) return v;
    uint64_t mask = (uint64_t{1} << t.bits) - 1;
    uint64_t u = static_cast<uint64_t>(v) & mask;
    if (t.is_int() && (u >> (t.bits - 1))) u |= ~mask;
    return static_cast<int64_t>(u);
  }
  static double round_float(DType t, double v) { return t.bits == 32 ? static_cast<double>(static_cast<float>(v)) : v; }

  static Value int_value(DType t, std::vector<int64_t> v) {
    Value r;
    r.t = t.with_lanes(static_cast<int>(v.size()));
    for (auto& x : v) x = wrap(t, x);
    r.i = std::move(v);
    return r;
  }
  static Value float_value(DType t, std::vector<double> v) {
    Value r;
    r.is_float = true;
    r.t = t.with_lanes(static_cast<int>(v.size()));
    for (auto& x : v) x = round_float(t, x);
    r.f = std::move(v);
    return r;
  }
  static Value lane_of(const Value& v, int l) {
    if (v.lanes() == 1) return v;
    if (l >= v.lanes()) throw ExecError("lane out of range");
    return v.is_float ? float_value(v.t, {v.f[l]}) : int_value(v.t, {v.i[l]});
  }
  static int64_t scalar_int(const Value& v) {
    if (v.is_float || v.lanes() != 1) throw ExecError("expected a scalar integer");
    return v.i[0];
  }

  void bind(const VarNode* v, Value val) { vars_[v] = std::move(val); }

  // Evaluates e where its value only matters when `live` (a scalar Select's
  // branch not taken is evaluated dead: its loads and divisions are skipped).
  Value eval_live(const Expr& e, bool live) {
    bool saved = live_;
    live_ = live_ && live;
    Value v = eval(e);
    live_ = saved;
    return v;
  }

  Buffer* handle(const VarNode* h) {
    auto it = handles_.find(h);
    if (it == handles_.end() || !it->second) throw ExecError("unknown buffer '" + (h ? h->name : "?") + "'");
    return it->second;
  }
  Buffer* rebind_handle(const VarNode* h, Buffer* b) {
    auto it = handles_.find(h);
    Buffer* saved = it == handles_.end() ? nullptr : it->second;
    handles_[h] = b;
    return saved;
  }
  void restore_handle(const VarNode* h, Buffer* saved) {
    if (saved)
      handles_[h] = saved;
    else
      handles_.erase(h);
  }

  void with_tensor(const OperationNode* op, const TensorStore& ts, const Stmt& body) {
    auto it = tensors_.find(op);
    bool had = it != tensors_.end();
    TensorStore saved = had ? it->second : TensorStore();
    tensors_[op] = ts;
    exec(body);
    if (had)
      tensors_[op] = saved;
    else
      tensors_.erase(op);
  }
  const TensorStore& tensor(const Ref<TensorNode>& t) {
    auto it = tensors_.find(t->op.get());
    if (it == tensors_.end()) throw ExecError("tensor '" + t->op->name + "' is not realized");
    return it->second;
  }
  int64_t offset(const TensorStore& ts, const std::vector<Expr>& indices, const std::string& name) {
    int64_t off = 0;
    for (size_t d = 0; d < indices.size(); ++d) {
      int64_t i = scalar_int(eval(indices[d])) - ts.mins[d];
      if (i < 0 || i >= ts.extents[d])
        throw ExecError("tensor '" + name + "' accessed outside its realized region in dimension " + std::to_string(d));
      off = off * ts.extents[d] + i;
    }
    return off;
  }

  void write(Buffer* b, int64_t i, double v) {
    if (i < 0 || i >= static_cast<int64_t>(b->data.size()))
      throw ExecError("store to '" + b->name + "' out of bounds at " + std::to_string(i));
    b->data[i] = v;
    b->written[i] = true;
  }
  double read(Buffer* b, int64_t i) {
    if (i < 0 || i >= static_cast<int64_t>(b->data.size()))
      throw ExecError("load from '" + b->name + "' out of bounds at " + std::to_string(i));
    if (!b->written[i]) throw ExecError("load from '" + b->name + "' of an unwritten element " + std::to_string(i));
    return b->data[i];
  }
  Value from_double(DType t, std::vector<double> v) {
    if (t.is_float()) return float_value(t, std::move(v));
    std::vector<int64_t> iv(v.size());
    for (size_t k = 0; k < v.size(); ++k) iv[k] = static_cast<int64_t>(v[k]);
    return int_value(t, iv);
  }

  static int64_t floordiv_i(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
  }

  Value binary(NodeKind k, DType rt, const Value& a, const Value& b) {
    if (a.lanes() != b.lanes()) throw ExecError("binary lane mismatch");
    int n = a.lanes();
    bool cmp = is_comparison_kind(k);
    if (a.is_float) {
      std::vector<double> r(n);
      std::vector<int64_t> c(n);
      for (int l = 0; l < n; ++l) {
        double x = a.f[l], y = b.f[l];
        switch (k) {
          case NodeKind::Add:
            r[l] = x + y;
            break;
          case NodeKind::Sub:
            r[l] = x - y;
            break;
          case NodeKind::Mul:
            r[l] = x * y;
            break;
          case NodeKind::Div:
            r[l] = x / y;
            break;
          case NodeKind::Mod:
            r[l] = std::fmod(x, y);
            break;
          case NodeKind::FloorDiv:
            r[l] = std::floor(x / y);
            break;
          case NodeKind::FloorMod:
            r[l] = x - std::floor(x / y) * y;
            break;
          case NodeKind::Min:
            r[l] = std::min(x, y);
            break;
          case NodeKind::Max:
            r[l] = std::max(x, y);
            break;
          case NodeKind::EQ:
            c[l] = x == y;
            break;
          case NodeKind::NE:
            c[l] = x != y;
            break;
          case NodeKind::LT:
            c[l] = x < y;
            break;
          case NodeKind::LE:
            c[l] = x <= y;
            break;
          case NodeKind::GT:
            c[l] = x > y;
            break;
          case NodeKind::GE:
            c[l] = x >= y;
            break;
          default:
            throw ExecError("bad float binary op");
        }
      }
      return cmp ? int_value(rt, c) : float_value(rt, r);
    }
    std::vector<int64_t> r(n);
    for (int l = 0; l < n; ++l) {
      int64_t x = a.i[l], y = b.i[l];
      bool div = k == NodeKind::Div || k == NodeKind::Mod || k == NodeKind::FloorDiv || k == NodeKind::FloorMod;
      if (div && y == 0) {
        if (live_) throw ExecError("integer division by zero");
        y = 1;
      }
      switch (k) {
        case NodeKind::Add:
          r[l] = x + y;
          break;
        case NodeKind::Sub:
          r[l] = x - y;
          break;
        case NodeKind::Mul:
          r[l] = x * y;
          break;
        case NodeKind::Div:
          r[l] = x / y;
          break;
        case NodeKind::Mod:
          r[l] = x % y;
          break;
        case NodeKind::FloorDiv:
          r[l] = floordiv_i(x, y);
          break;
        case NodeKind::FloorMod:
          r[l] = x - floordiv_i(x, y) * y;
          break;
        case NodeKind::Min:
          r[l] = std::min(x, y);
          break;
        case NodeKind::Max:
          r[l] = std::max(x, y);
          break;
        case NodeKind::EQ:
          r[l] = x == y;
          break;
        case NodeKind::NE:
          r[l] = x != y;
          break;
        case NodeKind::LT:
          r[l] = x < y;
          break;
        case NodeKind::LE:
          r[l] = x <= y;
          break;
        case NodeKind::GT:
          r[l] = x > y;
          break;
        case NodeKind::GE:
          r[l] = x >= y;
          break;
        case NodeKind::And:
          r[l] = x && y;
          break;
        case NodeKind::Or:
          r[l] = x || y;
          break;
        default:
          throw ExecError("bad integer binary op");
      }
    }
    return int_value(rt, r);
  }

 public:
  Value eval(const Expr& e) {
    if (!e.defined()) throw ExecError("undefined expression");
    switch (e->kind()) {
      case NodeKind::IntImm:
        return int_value(e.dtype(), {e.as<IntImmNode>()->value});
      case NodeKind::FloatImm:
        return float_value(e.dtype(), {e.as<FloatImmNode>()->value});
      case NodeKind::Var: {
        auto it = vars_.find(e.as<VarNode>());
        if (it == vars_.end()) throw ExecError("undefined variable '" + e.as<VarNode>()->name + "'");
        return it->second;
      }
      case NodeKind::Not: {
        Value a = eval(e.as<NotNode>()->a);
        for (auto& x : a.i) x = !x;
        return a;
      }
      case NodeKind::Select: {
        auto* op = e.as<SelectNode>();
        Value c = eval(op->condition);
        int n = op->dtype.lanes;
        Value t, f;
        if (n == 1) {  // lazy: only the selected branch is evaluated
          bool take = c.i[0] != 0;
          t = eval_live(op->true_value, take);
          f = eval_live(op->false_value, !take);
        } else {  // a vector select evaluates both branches in every lane
          t = eval(op->true_value);
          f = eval(op->false_value);
        }
        if (f.lanes() != n || (c.lanes() != 1 && c.lanes() != n)) throw ExecError("select lane mismatch");
        Value r = t;
        for (int l = 0; l < n; ++l) {
          if (lane_of(c, l).i[0]) continue;
          if (r.is_float)
            r.f[l] = f.f[l];
          else
            r.i[l] = f.i[l];
        }
        return r;
      }
      case NodeKind::Cast: {
        auto* op = e.as<CastNode>();
        Value v = eval(op->value);
        std::vector<double> d(v.lanes());
        for (int l = 0; l < v.lanes(); ++l) d[l] = v.is_float ? v.f[l] : static_cast<double>(v.i[l]);
        if (!op->dtype.is_float()) {
          std::vector<int64_t> iv(d.size());
          for (size_t l = 0; l < d.size(); ++l) iv[l] = v.is_float ? static_cast<int64_t>(std::trunc(d[l])) : v.i[l];
          return int_value(op->dtype, iv);
        }
        return float_value(op->dtype, d);
      }
      case NodeKind::Call: {
        auto* op = e.as<CallNode>();
        Value a = eval(op->args[0]);
        for (auto& x : a.f) {
          switch (op->op) {
            case MathOp::kExp:
              x = std::exp(x);
              break;
            case MathOp::kSqrt:
              x = std::sqrt(x);
              break;
            case MathOp::kFabs:
              x = std::fabs(x);
              break;
            case MathOp::kFloor:
              x = std::floor(x);
              break;
            default:
              throw ExecError(std::string("unsupported call ") + math_op_name(op->op));
          }
        }
        return float_value(a.t, a.f);
      }
      case NodeKind::TensorRead: {
        auto* op = e.as<TensorReadNode>();
        if (!live_) return from_double(op->dtype, {0.0});
        const TensorStore& ts = tensor(op->tensor);
        return from_double(op->dtype, {read(ts.buffer, offset(ts, op->indices, op->tensor->op->name))});
      }
      case NodeKind::Load: {
        auto* op = e.as<LoadNode>();
        Value idx = eval(op->index);
        Value pred = op->predicate.defined() ? eval(op->predicate) : Value();
        if (idx.lanes() != op->dtype.lanes) throw ExecError("load lane mismatch");
        Buffer* b = handle(op->buffer.node());
        std::vector<double> r(idx.lanes(), 0.0);
        for (int l = 0; l < idx.lanes(); ++l) {
          if (pred.lanes() && !lane_of(pred, l).i[0]) continue;
          if (!live_) continue;
          r[l] = read(b, idx.i[l]);
        }
        return from_double(op->dtype, r);
      }
      case NodeKind::Ramp: {
        auto* op = e.as<RampNode>();
        int64_t base = scalar_int(eval(op->base)), stride = scalar_int(eval(op->stride));
        std::vector<int64_t> r(op->lanes);
        for (int l = 0; l < op->lanes; ++l) r[l] = base + l * stride;
        return int_value(op->dtype.element_of(), r);
      }
      case NodeKind::Broadcast: {
        auto* op = e.as<BroadcastNode>();
        Value v = eval(op->value);
        if (v.lanes() != 1) throw ExecError("broadcast of a vector");
        if (v.is_float) return float_value(v.t, std::vector<double>(op->lanes, v.f[0]));
        return int_value(v.t, std::vector<int64_t>(op->lanes, v.i[0]));
      }
      case NodeKind::Let: {
        auto* op = e.as<LetNode>();
        bind(op->var.node(), eval(op->value));
        Value r = eval(op->body);
        vars_.erase(op->var.node());
        return r;
      }
      default:
        if (is_binary_kind(e->kind())) {
          auto* op = static_cast<const BinaryNode*>(e.get());
          return binary(e->kind(), e.dtype().element_of(), eval(op->a), eval(op->b));
        }
        throw ExecError(std::string("cannot evaluate ") + node_kind_name(e->kind()));
    }
  }

 private:
  std::unordered_map<const VarNode*, Buffer*> handles_;
  std::unordered_map<const VarNode*, Value> vars_;
  std::unordered_map<const OperationNode*, TensorStore> tensors_;
  std::deque<Buffer> storage_;  // allocations; deque keeps addresses stable
  bool live_ = true;            // false inside a scalar Select's branch not taken
};

}  // namespace kiln_test
