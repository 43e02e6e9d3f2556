// Helpers shared by the codegen tests: build lowered IR by hand and run it
// through the JIT on runtime NDArrays.
#pragma once

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "codegen/build.h"
#include "codegen/runtime_dtype.h"
#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/function.h"
#include "compute/ir_functor.h"
#include "runtime/ndarray.h"

namespace kiln {
namespace test {

inline BufferArg buffer(const std::string& name, DType t, std::vector<int64_t> shape) {
  return BufferArg{Var::handle(name, t), name, t, std::move(shape)};
}

// b[index] (vector when index is), optionally predicated.
inline Expr ld(const BufferArg& b, Expr index, Expr pred = Expr()) {
  const int lanes = index.dtype().lanes;
  return LoadNode::make(b.dtype.with_lanes(lanes), b.data, std::move(index), std::move(pred));
}

inline Stmt st(const BufferArg& b, Expr value, Expr index, Expr pred = Expr()) {
  return StoreNode::make(b.data, std::move(value), std::move(index), std::move(pred));
}

inline Stmt loop(const Var& v, int64_t extent, Stmt body, ForKind kind = ForKind::kSerial) {
  return ForNode::make(v, make_const(v.dtype(), int64_t{0}), make_const(v.dtype(), extent), kind, std::move(body));
}

inline Expr ramp(Expr base, int64_t stride, int lanes) {
  return RampNode::make(base, make_const(base.dtype(), stride), lanes);
}

inline LoweredFunc func(const std::string& name, std::vector<BufferArg> args, Stmt body) {
  return LoweredFunc{name, std::move(args), std::move(body)};
}

inline rt::NDArray array(const BufferArg& b) {
  int64_t n = 1;
  for (int64_t d : b.shape) n *= d;
  return rt::NDArray::empty({n}, to_runtime_dtype(b.dtype));
}

// JIT-compiles f for the host and runs it on arrays; returns the kernel's result.
inline int run(const LoweredFunc& f, const std::vector<rt::NDArray>& arrays) {
  auto m = JitModule::compile({f}, Target::host());
  std::vector<void*> args;
  for (const auto& a : arrays) args.push_back(a.data());
  return m->get_function(f.name)(args.data());
}

// The message of the UserError that f throws (a test failure otherwise).
template <class F>
std::string user_error_of(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("expected a UserError, got: " << e.what());
  }
  FAIL("expected a UserError, nothing was thrown");
  return "";
}

inline bool host_has_avx512f() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, 5, "flags") == 0) return line.find(" avx512f") != std::string::npos;
  }
  return false;
}

// How many times `what` occurs in `text`.
inline int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// Drops every barrier of a statement.
class DropBarriers : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  Stmt mutate_Barrier(const BarrierNode*, const Stmt&) override { return EvaluateNode::make(Expr(0)); }
};

}  // namespace test
}  // namespace kiln
