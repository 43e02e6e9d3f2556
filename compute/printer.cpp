// IR printer (format documented in printer.h).
#include "compute/printer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"
#include "compute/tensor.h"
#include "compute/tensor_intrin.h"

namespace kiln {

namespace {

// Shortest decimal text that reads back as the same value at the type's
// precision (float for f32/f16/bf16, double for f64).
std::string format_float(double v, bool single) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, v);
    if (single) {
      if (std::strtof(buf, nullptr) == static_cast<float>(v)) break;
    } else if (std::strtod(buf, nullptr) == v) {
      break;
    }
  }
  return buf;
}

const char* binary_symbol(NodeKind k) {
  switch (k) {
    case NodeKind::Add:
      return " + ";
    case NodeKind::Sub:
      return " - ";
    case NodeKind::Mul:
      return "*";
    case NodeKind::Div:
      return " / ";
    case NodeKind::Mod:
      return " % ";
    case NodeKind::EQ:
      return " == ";
    case NodeKind::NE:
      return " != ";
    case NodeKind::LT:
      return " < ";
    case NodeKind::LE:
      return " <= ";
    case NodeKind::GT:
      return " > ";
    case NodeKind::GE:
      return " >= ";
    case NodeKind::And:
      return " && ";
    case NodeKind::Or:
      return " || ";
    default:
      return nullptr;
  }
}

const char* binary_function(NodeKind k) {
  switch (k) {
    case NodeKind::FloorDiv:
      return "floordiv";
    case NodeKind::FloorMod:
      return "floormod";
    case NodeKind::Min:
      return "min";
    case NodeKind::Max:
      return "max";
    default:
      return nullptr;
  }
}

class IRPrinter {
 public:
  explicit IRPrinter(std::ostream& os) : os_(os) {}

  void print(const Expr& e) {
    if (!e.defined()) {
      os_ << "<undefined>";
      return;
    }
    switch (e->kind()) {
      case NodeKind::IntImm:
        return print_int(e.as<IntImmNode>());
      case NodeKind::FloatImm:
        return print_float(e.as<FloatImmNode>());
      case NodeKind::StringImm:
        return print_string(e.as<StringImmNode>()->value);
      case NodeKind::Var:
        os_ << name_of(e.as<VarNode>());
        return;
      case NodeKind::Not:
        os_ << "!";
        print(e.as<NotNode>()->a);
        return;
      case NodeKind::Select: {
        auto* op = e.as<SelectNode>();
        os_ << "select(";
        print(op->condition);
        os_ << ", ";
        print(op->true_value);
        os_ << ", ";
        print(op->false_value);
        os_ << ")";
        return;
      }
      case NodeKind::Cast: {
        auto* op = e.as<CastNode>();
        os_ << op->dtype.str() << "(";
        print(op->value);
        os_ << ")";
        return;
      }
      case NodeKind::Call: {
        auto* op = e.as<CallNode>();
        os_ << math_op_name(op->op) << "(";
        print_list(op->args);
        os_ << ")";
        return;
      }
      case NodeKind::TensorRead: {
        auto* op = e.as<TensorReadNode>();
        os_ << op->tensor->op->name << "[";
        print_list(op->indices);
        os_ << "]";
        return;
      }
      case NodeKind::Load: {
        auto* op = e.as<LoadNode>();
        print_access(op->buffer.node(), op->index, op->predicate);
        return;
      }
      case NodeKind::Ramp: {
        auto* op = e.as<RampNode>();
        os_ << "ramp(";
        print(op->base);
        os_ << ", ";
        print(op->stride);
        os_ << ", " << op->lanes << ")";
        return;
      }
      case NodeKind::Broadcast: {
        auto* op = e.as<BroadcastNode>();
        os_ << "x" << op->lanes << "(";
        print(op->value);
        os_ << ")";
        return;
      }
      case NodeKind::Let: {
        auto* op = e.as<LetNode>();
        os_ << "(let " << name_of(op->var.node()) << " = ";
        print(op->value);
        os_ << " in ";
        print(op->body);
        os_ << ")";
        return;
      }
      case NodeKind::Reduce:
        return print_reduce(e.as<ReduceNode>());
      default:
        break;
    }
    internal_assert(is_binary_kind(e->kind())) << node_kind_name(e->kind());
    auto* op = static_cast<const BinaryNode*>(e.get());
    if (const char* fn = binary_function(e->kind())) {
      os_ << fn << "(";
      print(op->a);
      os_ << ", ";
      print(op->b);
      os_ << ")";
      return;
    }
    os_ << "(";
    print(op->a);
    os_ << binary_symbol(e->kind());
    print(op->b);
    os_ << ")";
  }

  void print(const Stmt& s) {
    if (!s.defined()) return;
    switch (s->kind()) {
      case NodeKind::For: {
        auto* op = s.as<ForNode>();
        indent();
        os_ << for_kind_name(op->for_kind);
        if (op->for_kind == ForKind::kThreadBinding) os_ << "(" << op->thread_tag << ")";
        os_ << " (" << name_of(op->loop_var.node()) << ", ";
        print(op->min);
        os_ << ", ";
        print(op->extent);
        os_ << ") {\n";
        print_block(op->body);
        indent();
        os_ << "}\n";
        return;
      }
      case NodeKind::Allocate: {
        auto* op = s.as<AllocateNode>();
        indent();
        os_ << "allocate " << name_of(op->buffer.node()) << "[" << op->dtype.str();
        for (auto& e : op->extents) {
          os_ << " * ";
          print(e);
        }
        os_ << "] @" << mem_scope_name(op->scope) << "\n";
        print(op->body);
        return;
      }
      case NodeKind::Store: {
        auto* op = s.as<StoreNode>();
        indent();
        print_access(op->buffer.node(), op->index, op->predicate);
        os_ << " = ";
        print(op->value);
        os_ << "\n";
        return;
      }
      case NodeKind::Seq:
        for (auto& x : s.as<SeqNode>()->seq) print(x);
        return;
      case NodeKind::IfThenElse: {
        auto* op = s.as<IfThenElseNode>();
        indent();
        os_ << "if (";
        print(op->condition);
        os_ << ") {\n";
        print_block(op->then_case);
        if (op->else_case.defined()) {
          indent();
          os_ << "} else {\n";
          print_block(op->else_case);
        }
        indent();
        os_ << "}\n";
        return;
      }
      case NodeKind::LetStmt: {
        auto* op = s.as<LetStmtNode>();
        indent();
        os_ << "let " << name_of(op->var.node()) << " = ";
        print(op->value);
        os_ << "\n";
        print(op->body);
        return;
      }
      case NodeKind::Evaluate:
        indent();
        print(s.as<EvaluateNode>()->value);
        os_ << "\n";
        return;
      case NodeKind::Barrier:
        indent();
        os_ << "barrier(" << mem_scope_name(s.as<BarrierNode>()->scope) << ")\n";
        return;
      case NodeKind::ThreadAllReduce: {
        auto* op = s.as<ThreadAllReduceNode>();
        indent();
        os_ << name_of(op->result.node()) << "[0] = allreduce_" << combiner_name(op->combiner) << "(";
        print(op->value);
        os_ << ", over " << op->thread_tag << ")\n";
        return;
      }
      case NodeKind::Token: {
        auto* op = s.as<TokenNode>();
        indent();
        os_ << (op->op == TokenNode::Op::kPush  ? "push_token("
                : op->op == TokenNode::Op::kPop ? "pop_token("
                                                : "wait_token(")
            << (op->queue == TokenNode::Queue::kFull ? "full" : "free") << ", pipeline " << op->pipeline << ", slot ";
        print(op->slot);
        if (op->in_flight.defined()) {
          os_ << ", in_flight ";
          print(op->in_flight);
        }
        if (op->phase.defined()) {
          os_ << ", phase ";
          print(op->phase);
        }
        os_ << ")\n";
        return;
      }
      case NodeKind::Prefetch: {
        auto* op = s.as<PrefetchNode>();
        indent();
        os_ << "prefetch(" << name_of(op->buffer.node()) << "[";
        print(op->index);
        os_ << "])\n";
        return;
      }
      case NodeKind::AttrStmt: {
        auto* op = s.as<AttrStmtNode>();
        indent();
        os_ << "// attr ";
        if (op->node.defined()) os_ << "[" << node_label(op->node) << "] ";
        os_ << op->key << " = ";
        print(op->value);
        os_ << "\n";
        print(op->body);
        return;
      }
      case NodeKind::TensorIntrinCall: {
        auto* op = s.as<TensorIntrinCallNode>();
        indent();
        os_ << "tensor_intrin " << op->intrin << "(";
        bool first = true;
        for (auto& o : op->operands) {
          if (!first) os_ << ", ";
          first = false;
          os_ << name_of(o.buffer.node()) << "[";
          print(o.offset);
          os_ << ", extent=";
          print(o.extent);
          os_ << ", stride=";
          print(o.stride);
          os_ << "]";
        }
        for (auto& x : op->scalars) {
          if (!first) os_ << ", ";
          first = false;
          print(x);
        }
        os_ << ")\n";
        return;
      }
      case NodeKind::Tensorize: {
        auto* op = s.as<TensorizeNode>();
        indent();
        os_ << "tensorize " << op->intrin->name << "." << intrin_phase_name(op->phase) << "(";
        for (size_t r = 0; r < op->regions.size(); ++r) {
          const TensorizeNode::Region& region = op->regions[r];
          if (r > 0) os_ << ", ";
          os_ << region.tensor->op->name << "[";
          for (size_t d = 0; d < region.base.size(); ++d) {
            if (d > 0) os_ << ", ";
            print(region.base[d]);
          }
          os_ << "] along (";
          for (size_t d = 0; d < region.dims.size(); ++d) os_ << (d > 0 ? ", " : "") << region.dims[d];
          os_ << ")";
        }
        os_ << ")\n";
        return;
      }
      case NodeKind::Provide: {
        auto* op = s.as<ProvideNode>();
        indent();
        os_ << op->tensor->op->name << "[";
        print_list(op->indices);
        os_ << "] = ";
        print(op->value);
        os_ << "\n";
        return;
      }
      case NodeKind::Realize: {
        auto* op = s.as<RealizeNode>();
        indent();
        os_ << "realize " << op->tensor->op->name << "(";
        for (size_t i = 0; i < op->bounds.size(); ++i) {
          if (i) os_ << ", ";
          os_ << "[";
          print(op->bounds[i].min);
          os_ << ", ";
          print(op->bounds[i].extent);
          os_ << "]";
        }
        os_ << ") @" << mem_scope_name(op->scope);
        bool aligned = false;
        for (auto& a : op->align) aligned |= a.factor != 0;
        if (aligned) {
          os_ << " align=[";
          for (size_t i = 0; i < op->align.size(); ++i)
            os_ << (i ? ", " : "") << "(" << op->align[i].factor << ", " << op->align[i].offset << ")";
          os_ << "]";
        }
        bool tiled = false;
        for (auto& a : op->align) tiled |= a.tile != 0;
        if (tiled) {
          os_ << " tiles=[";
          for (size_t i = 0; i < op->align.size(); ++i)
            os_ << (i ? ", " : "") << std::max<int64_t>(1, op->align[i].tile);
          os_ << "]";
        }
        if (!op->align.empty() && op->align.back().swizzle) os_ << " swizzle=" << op->align.back().swizzle;
        os_ << "\n";
        print(op->body);
        return;
      }
      default:
        internal_error() << "not a statement: " << node_kind_name(s->kind());
    }
  }

  void print(const LoweredFunc& f) {
    os_ << "func " << f.name << "(";
    for (size_t i = 0; i < f.args.size(); ++i) {
      const BufferArg& a = f.args[i];
      if (i) os_ << ", ";
      if (a.data.defined()) {
        const std::string& n = name_of(a.data.node());
        os_ << n;
        if (n != a.name) os_ << " (" << a.name << ")";
      } else {
        os_ << a.name;
      }
      os_ << ": " << a.dtype.str() << "[";
      for (size_t d = 0; d < a.shape.size(); ++d) os_ << (d ? ", " : "") << a.shape[d];
      os_ << "]";
    }
    os_ << ") {\n";
    print_block(f.body);
    os_ << "}\n";
  }

 private:
  void indent() {
    for (int i = 0; i < indent_; ++i) os_ << "  ";
  }

  void print_block(const Stmt& s) {
    ++indent_;
    print(s);
    --indent_;
  }

  void print_list(const std::vector<Expr>& v) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) os_ << ", ";
      print(v[i]);
    }
  }

  void print_access(const VarNode* buffer, const Expr& index, const Expr& predicate) {
    os_ << name_of(buffer) << "[";
    print(index);
    if (predicate.defined()) {
      os_ << " if ";
      print(predicate);
    }
    os_ << "]";
  }

  void print_int(const IntImmNode* op) {
    if (op->dtype.is_bool()) {
      os_ << (op->value ? "true" : "false");
      return;
    }
    os_ << op->value;
    if (op->dtype != DType::i32()) os_ << op->dtype.str();
  }

  void print_float(const FloatImmNode* op) {
    bool is_f64 = op->dtype.code == DType::kFloat && op->dtype.bits == 64;
    std::string s = format_float(op->value, !is_f64);
    if (is_f64) {
      if (s.find_first_of(".en") == std::string::npos) s += ".0";  // "e" exponent, "n" in inf/nan
      os_ << s;
      return;
    }
    os_ << s;
    if (op->dtype == DType::f32())
      os_ << "f";
    else
      os_ << op->dtype.str();
  }

  void print_string(const std::string& v) {
    os_ << '"';
    for (char c : v) {
      if (c == '"' || c == '\\') os_ << '\\';
      os_ << c;
    }
    os_ << '"';
  }

  void print_reduce(const ReduceNode* op) {
    os_ << combiner_name(op->combiner) << "(";
    print(op->source);
    os_ << ", axis=[";
    for (size_t i = 0; i < op->axes.size(); ++i) {
      const IterVarNode* iv = op->axes[i].get();
      if (i) os_ << ", ";
      os_ << name_of(iv->var.node()) << ": ";
      print(iv->dom.min);
      os_ << "..";
      const int64_t* mn = as_const_int(iv->dom.min);
      const int64_t* ext = as_const_int(iv->dom.extent);
      if (mn && ext) {
        os_ << (*mn + *ext);
      } else if (mn && *mn == 0) {
        print(iv->dom.extent);
      } else {
        os_ << "(";
        print(iv->dom.min);
        os_ << " + ";
        print(iv->dom.extent);
        os_ << ")";
      }
    }
    os_ << "]";
    if (op->condition.defined()) {
      os_ << ", where ";
      print(op->condition);
    }
    os_ << ")";
  }

  // What an AttrStmt annotates, as a short label.
  std::string node_label(const Ref<Object>& n) {
    switch (n->kind()) {
      case NodeKind::Var:
        return name_of(static_cast<const VarNode*>(n.get()));
      case NodeKind::IterVar:
        return name_of(static_cast<const IterVarNode*>(n.get())->var.node());
      case NodeKind::Tensor:
        return static_cast<const TensorNode*>(n.get())->op->name;
      case NodeKind::PlaceholderOp:
      case NodeKind::ComputeOp:
        return static_cast<const OperationNode*>(n.get())->name;
      default:
        break;
    }
    if (n->kind() <= NodeKind::Reduce) {  // some other expression
      std::ostringstream os;
      IRPrinter sub(os);
      sub.names_ = names_;
      sub.taken_ = taken_;
      sub.print(Expr(Ref<ExprNode>(static_cast<const ExprNode*>(n.get()))));
      names_ = sub.names_;
      taken_ = sub.taken_;
      return os.str();
    }
    return node_kind_name(n->kind());
  }

  const std::string& name_of(const VarNode* v) {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    std::string name = v->name.empty() ? "v" : v->name;
    if (taken_.count(name)) {
      for (int k = 1;; ++k) {
        std::string cand = name + "_" + std::to_string(k);
        if (!taken_.count(cand)) {
          name = cand;
          break;
        }
      }
    }
    taken_.insert(name);
    return names_.emplace(v, name).first->second;
  }

  std::ostream& os_;
  int indent_ = 0;
  std::unordered_map<const VarNode*, std::string> names_;
  std::unordered_set<std::string> taken_;
};

}  // namespace

std::string to_string(const Expr& e) {
  std::ostringstream os;
  IRPrinter(os).print(e);
  return os.str();
}

std::string to_string(const Stmt& s) {
  std::ostringstream os;
  IRPrinter(os).print(s);
  return os.str();
}

std::string to_string(const LoweredFunc& f) {
  std::ostringstream os;
  IRPrinter(os).print(f);
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Expr& e) {
  IRPrinter(os).print(e);
  return os;
}
std::ostream& operator<<(std::ostream& os, const Stmt& s) {
  IRPrinter(os).print(s);
  return os;
}
std::ostream& operator<<(std::ostream& os, const DType& t) { return os << t.str(); }
std::ostream& operator<<(std::ostream& os, const LoweredFunc& f) {
  IRPrinter(os).print(f);
  return os;
}

}  // namespace kiln
