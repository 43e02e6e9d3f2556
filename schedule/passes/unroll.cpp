#include "schedule/passes/unroll.h"

#include "compute/expr_ops.h"
#include "compute/ir_functor.h"
#include "schedule/passes/pass_util.h"

namespace kiln {
namespace passes {

namespace {

class Unroller : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  Stmt mutate_For(const ForNode* op, const Stmt& self) override {
    Stmt body = mutate(op->body);  // inner loops first
    if (op->for_kind != ForKind::kUnrolled) {
      if (body.same_as(op->body)) return self;
      return ForNode::make(op->loop_var, op->min, op->extent, op->for_kind, body, op->thread_tag);
    }
    const int64_t* ext = as_const_int(op->extent);
    if (!ext) return ForNode::make(op->loop_var, op->min, op->extent, ForKind::kSerial, body);
    std::vector<Stmt> copies;
    for (int64_t k = 0; k < *ext; ++k) {
      Expr value = op->min + make_const(op->min.dtype(), k);
      copies.push_back(substitute(body, {{op->loop_var.node(), value}}));
    }
    return SeqNode::make(std::move(copies));  // undefined when the extent is <= 0
  }
};

}  // namespace

Stmt unroll(const Stmt& s) {
  Stmt r = Unroller().mutate(s);
  return r.defined() ? r : make_no_op();
}

}  // namespace passes
}  // namespace kiln
