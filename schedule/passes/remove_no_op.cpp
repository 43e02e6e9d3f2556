#include "schedule/passes/remove_no_op.h"

#include "compute/expr_ops.h"
#include "compute/ir_functor.h"
#include "schedule/passes/pass_util.h"

namespace kiln {
namespace passes {

namespace {

// Returns an undefined Stmt for "nothing"; IRMutator's defaults propagate it
// through Seq, Allocate, LetStmt, AttrStmt and Realize.
class NoOpRemover : public IRMutator {
 public:
  using IRMutator::mutate;

  Stmt mutate(const Stmt& s) override {
    Stmt r = IRMutator::mutate(s);
    return is_no_op(r) ? Stmt() : r;
  }

 protected:
  Stmt mutate_For(const ForNode* op, const Stmt& self) override {
    const int64_t* ext = as_const_int(op->extent);
    if (ext && *ext <= 0) return Stmt();
    return IRMutator::mutate_For(op, self);
  }

  Stmt mutate_IfThenElse(const IfThenElseNode* op, const Stmt& self) override {
    if (const int64_t* c = as_const_int(op->condition)) return mutate(*c ? op->then_case : op->else_case);
    return IRMutator::mutate_IfThenElse(op, self);
  }

  Stmt mutate_LetStmt(const LetStmtNode* op, const Stmt& self) override {
    Stmt body = mutate(op->body);
    if (!body.defined() || !uses_var(body, op->var.node())) return body;
    if (body.same_as(op->body)) return self;
    return LetStmtNode::make(op->var, op->value, body);
  }

  Stmt mutate_Allocate(const AllocateNode* op, const Stmt& self) override {
    Stmt body = mutate(op->body);
    if (!body.defined() || !uses_var(body, op->buffer.node())) return body;
    if (body.same_as(op->body)) return self;
    return AllocateNode::make(op->buffer, op->dtype, op->extents, op->scope, body);
  }
};

}  // namespace

Stmt remove_no_op(const Stmt& s) {
  Stmt r = NoOpRemover().mutate(s);
  return r.defined() ? r : make_no_op();
}

}  // namespace passes
}  // namespace kiln
