// Internal to the reference interpreter: the compiled evaluator of one compute
// operation, shared by whole-tensor interpretation (interpret) and sampled
// point evaluation (interpret_at). Semantics in compute/interpreter.h.
//
// An operation's body is compiled once into a flat array of typed nodes with
// variable slots. Each tensor it reads is either materialized (a HostTensor)
// or the OpEvaluator of its producer, which computes the element on demand
// and memoizes it. Because the graph is acyclic, an operation is never
// re-entered while one of its elements is being evaluated, so each evaluator
// owns its variable slots without save/restore.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "compute/interpreter.h"
#include "compute/tensor.h"

namespace kiln {
namespace interp {

// Numeric class of a scalar type, deciding how operations compute.
enum class Num : uint8_t { kSigned, kUnsigned, kBool, kF32, kF64, kF16, kBF16 };

union Val {
  int64_t i;
  double f;  // floats hold values exact in their computing precision
};

struct Type {
  DType dtype;
  Num num;
};

class OpEvaluator;

// Where the values of a tensor come from: exactly one of data / producer.
struct TensorSource {
  const HostTensor* data = nullptr;  // materialized values
  OpEvaluator* producer = nullptr;   // evaluated on demand, element by element
  std::vector<int64_t> shape;
  std::string name;
};

// Operation -> source of its values, for the tensors an operation may read.
using SourceTable = std::unordered_map<const OperationNode*, TensorSource>;

// The constant shape of an operation's output (user_error when symbolic).
std::vector<int64_t> const_shape(const OperationNode& op);
// "[1, 2, 3]"
std::string index_str(const std::vector<int64_t>& v);

class OpEvaluator {
 public:
  // Compiles `op`'s body; every tensor it reads must be in `sources`.
  OpEvaluator(const ComputeOpNode* op, const SourceTable& sources);

  // Evaluates every element of the operation into `out` (row-major).
  void run(HostTensor* out);
  // The element at row-major `flat` (which must be inside the shape), as it
  // reads back after being stored in a tensor of the op's dtype. Memoized.
  Val value_at(int64_t flat);
  // Whether values are held in Val::f (else Val::i).
  bool floating() const { return floating_; }

 private:
  struct CNode {
    NodeKind kind;
    Type type;  // result type
    Type arg;   // operand type (comparisons and casts)
    int a = -1, b = -1, c = -1;
    Val imm{};      // immediates; a reduction's identity
    int slot = -1;  // Var, Let
    MathOp math{};
    Combiner combiner{};
    int read = -1;          // TensorRead: index into reads_
    std::vector<int> kids;  // TensorRead: index nodes; Reduce: (slot, min, extent) per axis
  };
  class ScopedSlot;

  int new_slot();
  Type type_of(DType t) const;
  int add_node(CNode n);
  int compile(const Expr& e);
  int compile_read(const TensorReadNode* op, CNode n);
  int compile_reduce(const ReduceNode* op, CNode n);

  Val eval(int index);
  Val arith(NodeKind k, const Type& t, Val va, Val vb) const;
  Val math(const CNode& n);
  Val read(const CNode& n);
  void reduce(const CNode& n, size_t axis, Val* acc);
  void set_axes(int64_t flat);

  const ComputeOpNode* op_;
  const SourceTable* sources_;  // compile time only
  std::vector<CNode> nodes_;
  std::vector<Val> env_;
  std::vector<int> axis_slots_;
  std::vector<int64_t> axis_mins_;
  std::vector<int64_t> shape_;
  std::unordered_map<const VarNode*, int> slots_;  // compile time: variable -> slot
  std::vector<TensorSource> reads_;
  int root_ = -1;
  bool floating_ = false;
  std::unordered_map<int64_t, Val> memo_;  // value_at: flat index -> stored value
};

}  // namespace interp
}  // namespace kiln
