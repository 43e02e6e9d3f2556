#include "schedule/verify.h"

#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"
#include "compute/hw_instructions.h"
#include "compute/ir_functor.h"
#include "compute/printer.h"
#include "compute/tensor.h"
#include "compute/tensor_intrin.h"
#include "schedule/passes/storage_flatten.h"

namespace kiln {

namespace {

// Throws InternalError with the streamed message, prefixed by the pass name.
#define KILN_VERIFY_FAIL                                                                                       \
  ::kiln::detail::Thrower() & ::kiln::detail::ErrorBuilder<::kiln::InternalError>(__FILE__, __LINE__, nullptr) \
                                  << "IR check after pass '" << pass_ << "'" << context() << ": "

class Verifier : public IRVisitor {
 public:
  Verifier(const std::string& pass, const VerifyOptions& opt) : pass_(pass), opt_(opt) {
    for (auto& v : opt.free_vars) {
      in_scope_.insert(v.node());
      free_.insert(v.node());
    }
  }
  using IRVisitor::visit;

  void visit(const Stmt& s) override {
    if (!s.defined()) return;
    NodeKind k = s->kind();
    bool leaf =
        k == NodeKind::Store || k == NodeKind::Provide || k == NodeKind::Evaluate || k == NodeKind::TensorIntrinCall ||
        k == NodeKind::Tensorize ||
        k == NodeKind::ThreadAllReduce;
    if (!leaf) return IRVisitor::visit(s);
    leaf_ = s;
    IRVisitor::visit(s);
    leaf_ = Stmt();
  }

 protected:
  // ---- expressions
  void visit_Var(const VarNode* op) override {
    if (!in_scope_.count(op)) KILN_VERIFY_FAIL << "variable '" << op->name << "' is used but not defined";
  }

  void visit_binary(const BinaryNode* op) override {
    IRVisitor::visit_binary(op);
    const char* kind = node_kind_name(op->kind());
    if (op->a.dtype() != op->b.dtype())
      KILN_VERIFY_FAIL << kind << " operands have types " << op->a.dtype().str() << " and " << op->b.dtype().str();
    bool logic = op->kind() == NodeKind::And || op->kind() == NodeKind::Or;
    if (logic && !op->a.dtype().is_bool()) KILN_VERIFY_FAIL << kind << " of non-boolean operands";
    DType want =
        is_comparison_kind(op->kind()) || logic ? DType::boolean().with_lanes(op->a.dtype().lanes) : op->a.dtype();
    if (op->dtype != want) KILN_VERIFY_FAIL << kind << " has type " << op->dtype.str() << ", expected " << want.str();
  }

  void visit_Not(const NotNode* op) override {
    IRVisitor::visit_Not(op);
    if (!op->a.dtype().is_bool() || op->dtype != op->a.dtype()) KILN_VERIFY_FAIL << "Not of a non-boolean";
  }

  void visit_Select(const SelectNode* op) override {
    IRVisitor::visit_Select(op);
    DType c = op->condition.dtype();
    if (!c.is_bool()) KILN_VERIFY_FAIL << "Select condition has type " << c.str();
    if (op->true_value.dtype() != op->false_value.dtype() || op->dtype != op->true_value.dtype())
      KILN_VERIFY_FAIL << "Select branches have types " << op->true_value.dtype().str() << " and "
                       << op->false_value.dtype().str();
    if (c.lanes != 1 && c.lanes != op->dtype.lanes)
      KILN_VERIFY_FAIL << "Select condition has " << c.lanes << " lanes, values " << op->dtype.lanes;
  }

  void visit_Cast(const CastNode* op) override {
    IRVisitor::visit_Cast(op);
    if (op->dtype.lanes != op->value.dtype().lanes) KILN_VERIFY_FAIL << "Cast changes lanes";
  }

  void visit_Call(const CallNode* op) override {
    IRVisitor::visit_Call(op);
    for (auto& a : op->args)
      if (a.dtype() != op->dtype) KILN_VERIFY_FAIL << math_op_name(op->op) << " argument has type " << a.dtype().str();
  }

  void visit_TensorRead(const TensorReadNode* op) override {
    if (opt_.flattened) KILN_VERIFY_FAIL << "TensorRead of '" << op->tensor->op->name << "' remains after flattening";
    IRVisitor::visit_TensorRead(op);
    for (auto& i : op->indices) check_index(i, 1, "TensorRead");
  }

  void visit_Load(const LoadNode* op) override {
    IRVisitor::visit_Load(op);
    check_access(op->buffer, op->dtype, op->index, op->predicate, "Load");
  }

  void visit_Ramp(const RampNode* op) override {
    IRVisitor::visit_Ramp(op);
    DType b = op->base.dtype();
    if (!b.is_scalar() || op->stride.dtype() != b || op->lanes < 2 || op->dtype != b.with_lanes(op->lanes))
      KILN_VERIFY_FAIL << "malformed Ramp (base " << b.str() << ", stride " << op->stride.dtype().str() << ", lanes "
                       << op->lanes << ")";
  }

  void visit_Broadcast(const BroadcastNode* op) override {
    IRVisitor::visit_Broadcast(op);
    if (!op->value.dtype().is_scalar() || op->lanes < 2 || op->dtype != op->value.dtype().with_lanes(op->lanes))
      KILN_VERIFY_FAIL << "malformed Broadcast of " << op->value.dtype().str() << " to " << op->lanes << " lanes";
  }

  void visit_Let(const LetNode* op) override {
    visit(op->value);
    check_binding(op->var, op->value.dtype(), "Let");
    bind(op->var.node(), "Let");
    visit(op->body);
    unbind(op->var.node());
  }

  void visit_Reduce(const ReduceNode* op) override {
    if (opt_.flattened) KILN_VERIFY_FAIL << "Reduce remains after flattening";
    for (auto& ax : op->axes) bind(ax->var.node(), "reduce axis");
    visit(op->source);
    visit(op->condition);
    for (auto& ax : op->axes) unbind(ax->var.node());
  }

  // ---- statements
  void visit_For(const ForNode* op) override {
    const Var& v = op->loop_var;
    if (!v.dtype().is_scalar() || !v.dtype().is_integer())
      KILN_VERIFY_FAIL << "loop var '" << v->name << "' has type " << v.dtype().str();
    if (op->min.dtype() != v.dtype() || op->extent.dtype() != v.dtype())
      KILN_VERIFY_FAIL << "loop '" << v->name << "' (" << v.dtype().str() << ") has min " << op->min.dtype().str()
                       << " and extent " << op->extent.dtype().str();
    if (opt_.vectorized && op->for_kind == ForKind::kVectorized)
      KILN_VERIFY_FAIL << "vectorized loop '" << v->name << "' remains after vectorization";
    visit(op->min);
    visit(op->extent);
    bind(v.node(), "For");
    visit(op->body);
    unbind(v.node());
  }

  void visit_Allocate(const AllocateNode* op) override {
    const Var& b = op->buffer;
    if (!b.dtype().is_handle()) KILN_VERIFY_FAIL << "Allocate of non-handle '" << b->name << "'";
    if (!op->dtype.is_scalar()) KILN_VERIFY_FAIL << "Allocate '" << b->name << "' of vector type " << op->dtype.str();
    if (op->extents.empty()) KILN_VERIFY_FAIL << "Allocate '" << b->name << "' without extents";
    for (auto& e : op->extents) {
      visit(e);
      if (!e.dtype().is_scalar() || !e.dtype().is_integer())
        KILN_VERIFY_FAIL << "Allocate '" << b->name << "' extent of type " << e.dtype().str();
      const int64_t* c = as_const_int(e);
      if (c && *c <= 0) KILN_VERIFY_FAIL << "Allocate '" << b->name << "' with extent " << *c;
    }
    bind(b.node(), "Allocate");
    alloc_type_[b.node()] = op->dtype;
    visit(op->body);
    alloc_type_.erase(b.node());
    unbind(b.node());
  }

  void visit_Store(const StoreNode* op) override {
    IRVisitor::visit_Store(op);
    check_access(op->buffer, op->value.dtype(), op->index, op->predicate, "Store");
  }

  void visit_ThreadAllReduce(const ThreadAllReduceNode* op) override {
    IRVisitor::visit_ThreadAllReduce(op);
    check_access(op->result, op->value.dtype(), make_const(DType::i32(), int64_t{0}), Expr(), "ThreadAllReduce");
  }

  void visit_IfThenElse(const IfThenElseNode* op) override {
    if (!op->condition.dtype().is_bool() || !op->condition.dtype().is_scalar())
      KILN_VERIFY_FAIL << "IfThenElse condition has type " << op->condition.dtype().str();
    if (!op->then_case.defined()) KILN_VERIFY_FAIL << "IfThenElse without a then branch";
    IRVisitor::visit_IfThenElse(op);
  }

  void visit_LetStmt(const LetStmtNode* op) override {
    visit(op->value);
    check_binding(op->var, op->value.dtype(), "LetStmt");
    bind(op->var.node(), "LetStmt");
    visit(op->body);
    unbind(op->var.node());
  }

  void visit_AttrStmt(const AttrStmtNode* op) override {
    if (op->key == passes::kBufferBind) {
      if (opt_.flattened) KILN_VERIFY_FAIL << "buffer_bind attribute remains after flattening";
      auto* h = op->value.as<VarNode>();
      if (!h || !h->dtype.is_handle()) KILN_VERIFY_FAIL << "buffer_bind must bind a handle Var";
      if (!op->node.defined() || op->node->kind() != NodeKind::Tensor)
        KILN_VERIFY_FAIL << "buffer_bind must name a tensor";
      if (free_.count(h)) {  // the argument handle, already declared free
        visit(op->body);
        return;
      }
      bind(h, "buffer_bind");
      visit(op->body);
      unbind(h);
      return;
    }
    IRVisitor::visit_AttrStmt(op);
  }

  void visit_Provide(const ProvideNode* op) override {
    if (opt_.flattened) KILN_VERIFY_FAIL << "Provide to '" << op->tensor->op->name << "' remains after flattening";
    IRVisitor::visit_Provide(op);
    for (auto& i : op->indices) check_index(i, 1, "Provide");
    if (op->value.dtype() != Tensor(op->tensor).dtype())
      KILN_VERIFY_FAIL << "Provide of " << op->value.dtype().str() << " to '" << op->tensor->op->name << "' of type "
                       << Tensor(op->tensor).dtype().str();
  }

  void visit_TensorIntrinCall(const TensorIntrinCallNode* op) override {
    IRVisitor::visit_TensorIntrinCall(op);
    const std::string problem = hw_call_problem(*op);
    if (!problem.empty()) KILN_VERIFY_FAIL << problem;
  }

  void visit_Tensorize(const TensorizeNode* op) override {
    if (opt_.flattened) KILN_VERIFY_FAIL << "tensorize of '" << op->intrin->name << "' remains after flattening";
    IRVisitor::visit_Tensorize(op);
  }

  void visit_Realize(const RealizeNode* op) override {
    if (opt_.flattened) KILN_VERIFY_FAIL << "Realize of '" << op->tensor->op->name << "' remains after flattening";
    IRVisitor::visit_Realize(op);
  }

 private:
  // Where the violation is: the statement being checked, when it is a leaf.
  std::string context() const {
    if (!leaf_.defined()) return "";
    std::string text = to_string(leaf_);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    if (text.size() > 160) text = text.substr(0, 157) + "...";
    return ", at `" + text + "`";
  }

  void bind(const VarNode* v, const char* by) {
    if (!in_scope_.insert(v).second)
      KILN_VERIFY_FAIL << "variable '" << v->name << "' is bound by " << by << " while already in scope";
  }
  void unbind(const VarNode* v) { in_scope_.erase(v); }

  void check_binding(const Var& v, DType value, const char* what) {
    if (v.dtype() != value)
      KILN_VERIFY_FAIL << what << " var '" << v->name << "' has type " << v.dtype().str() << " but its value "
                       << value.str();
  }

  void check_index(const Expr& index, int lanes, const char* what) {
    if (!index.dtype().is_integer() || index.dtype().lanes != lanes)
      KILN_VERIFY_FAIL << what << " index has type " << index.dtype().str() << ", expected an integer with " << lanes
                       << " lane(s)";
  }

  void check_access(const Var& buf, DType value, const Expr& index, const Expr& pred, const char* what) {
    if (!buf.dtype().is_handle()) KILN_VERIFY_FAIL << what << " through non-handle '" << buf->name << "'";
    if (value.lanes != index.dtype().lanes)
      KILN_VERIFY_FAIL << what << " of '" << buf->name << "': value has " << value.lanes << " lanes, index "
                       << index.dtype().lanes;
    check_index(index, value.lanes, what);
    if (pred.defined() && (!pred.dtype().is_bool() || pred.dtype().lanes != value.lanes))
      KILN_VERIFY_FAIL << what << " of '" << buf->name << "': predicate of type " << pred.dtype().str() << " for "
                       << value.lanes << " lanes";
    auto it = alloc_type_.find(buf.node());
    if (it != alloc_type_.end() && it->second != value.element_of())
      KILN_VERIFY_FAIL << what << " of " << value.str() << " into '" << buf->name << "', allocated as "
                       << it->second.str();
  }

  const std::string& pass_;
  const VerifyOptions& opt_;
  std::unordered_set<const VarNode*> in_scope_;
  std::unordered_set<const VarNode*> free_;
  Stmt leaf_;  // the Store / Provide / Evaluate / TensorIntrinCall being checked
  std::unordered_map<const VarNode*, DType> alloc_type_;
};

}  // namespace

void verify_ir(const Stmt& s, const std::string& after_pass, const VerifyOptions& options) {
  if (!s.defined()) throw InternalError("IR check after pass '" + after_pass + "': the statement is undefined");
  Verifier(after_pass, options).visit(s);
}

void verify_ir(const Stmt& s, const std::string& after_pass, bool flattened, const std::vector<Var>& free_vars) {
  VerifyOptions o;
  o.flattened = flattened;
  o.free_vars = free_vars;
  verify_ir(s, after_pass, o);
}

}  // namespace kiln
