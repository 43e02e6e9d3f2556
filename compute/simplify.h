// Simplification of expressions and statements (rules: compute/analyzer.h and
// simplify_expr.cpp).
//
// simplify(Stmt) simplifies every expression in the tree, knowing the ranges
// of the enclosing For loops (and thread_extent attributes), the values of
// enclosing LetStmts, and the constant bounds implied by enclosing if-guards
// of the form `var < expr` (and <=, >, >=, ==, their && and negations). It
// also:
//   - replaces an IfThenElse whose condition is provably true/false by the
//     taken branch (nothing when no else branch),
//   - removes For loops whose extent is provably <= 0,
//   - replaces a loop of extent 1 by its body with the loop variable
//     substituted by the loop min (thread-binding loops are kept: they
//     describe the launch),
//   - drops predicates that are provably all-true on Store/Load.
// Everything else keeps its structure. A statement that disappears entirely
// becomes the no-op `0` (Evaluate). Unchanged subtrees are returned as the
// same objects.
#pragma once

#include "compute/analyzer.h"
#include "compute/stmt.h"

namespace kiln {

Expr simplify(const Expr& e);
Stmt simplify(const Stmt& s);
// Uses (and leaves unchanged) what `analyzer` knows about free variables.
Stmt simplify(const Stmt& s, Analyzer* analyzer);

}  // namespace kiln
