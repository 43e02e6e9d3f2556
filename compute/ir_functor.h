// Generic traversal of expressions and statements.
//
// IRVisitor walks every child; override visit_<Node> to act on a node and
// call the base to keep walking. IRMutator rebuilds a node only when one of
// its children changed (so unchanged subtrees stay shared and `same_as`
// tells a pass whether anything happened).
#pragma once

#include <functional>
#include <unordered_map>

#include "compute/expr.h"
#include "compute/stmt.h"
#include "compute/tensor.h"

namespace kiln {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  virtual void visit(const Expr& e);
  virtual void visit(const Stmt& s);

 protected:
#define KILN_NODE(Name) virtual void visit_##Name(const Name##Node* op);
#include "compute/ir_expr_stmt_kinds.def"
#undef KILN_NODE
  virtual void visit_binary(const BinaryNode* op);
};

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  virtual Expr mutate(const Expr& e);
  virtual Stmt mutate(const Stmt& s);

 protected:
#define KILN_NODE(Name) virtual Expr mutate_##Name(const Name##Node* op, const Expr& self);
#include "compute/ir_expr_kinds.def"
#undef KILN_NODE
#define KILN_NODE(Name) virtual Stmt mutate_##Name(const Name##Node* op, const Stmt& self);
#include "compute/ir_stmt_kinds.def"
#undef KILN_NODE
  virtual Expr mutate_binary(const BinaryNode* op, const Expr& self);
};

// Calls f on every node of the tree (children before parents). IterVar,
// Tensor and Operation nodes are not visited.
void post_order_visit(const Expr& e, const std::function<void(const Ref<Object>&)>& f);
void post_order_visit(const Stmt& s, const std::function<void(const Ref<Object>&)>& f);

using VarMap = std::unordered_map<const VarNode*, Expr>;
// Replaces variables by expressions (by variable identity).
Expr substitute(const Expr& e, const VarMap& vmap);
Stmt substitute(const Stmt& s, const VarMap& vmap);

// Does e / s mention variable v (or any var satisfying pred)?
bool uses_var(const Expr& e, const VarNode* v);
bool uses_var(const Stmt& s, const VarNode* v);

}  // namespace kiln
