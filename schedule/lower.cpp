#include "schedule/lower.h"

#include <cstdlib>
#include <functional>
#include <iostream>
#include <unordered_set>

#include "base/error.h"
#include "compute/printer.h"
#include "compute/simplify.h"
#include "schedule/bound.h"
#include "schedule/gpu_kernels.h"
#include "schedule/passes/hoist_guards.h"
#include "schedule/passes/inject_pipeline.h"
#include "schedule/passes/inject_prefetch.h"
#include "schedule/passes/loop_partition.h"
#include "schedule/passes/remove_no_op.h"
#include "schedule/passes/storage_flatten.h"
#include "schedule/passes/thread_sync.h"
#include "schedule/passes/unroll.h"
#include "schedule/passes/vectorize.h"
#include "schedule/schedule_ops.h"
#include "schedule/verify.h"

namespace kiln {

namespace {

struct Pass {
  const char* name;
  std::function<Stmt(const Stmt&)> run;
  bool flattened_after;
  bool vectorized_after;
};

Stmt simplify_stmt(const Stmt& s) { return simplify(s); }

// Pipelines, their tokens checked (a deadlock is a compile-time error).
Stmt pipelined(const Stmt& s, bool gpu) {
  Stmt r = passes::inject_pipeline(s, gpu);
  if (!r.same_as(s)) verify_pipeline_tokens(r);
  return r;
}

// The pass pipeline, in order. Every pass is a pure Stmt -> Stmt function.
const std::vector<Pass>& pass_list() {
  static const std::vector<Pass> passes = {
      {"storage_flatten", passes::storage_flatten, true, false},
      {"simplify", simplify_stmt, true, false},
      {"inject_pipeline", [](const Stmt& s) { return pipelined(s, false); }, true, false},
      {"inject_prefetch", [](const Stmt& s) { return passes::inject_prefetch(s, false); }, true, false},
      {"loop_partition", passes::loop_partition, true, false},
      // Partitioned loops have constant extents only once simplified.
      {"simplify", simplify_stmt, true, false},
      {"vectorize", passes::vectorize, true, true},
      {"unroll", passes::unroll, true, true},
      {"simplify", simplify_stmt, true, true},
      {"hoist_guards", passes::hoist_guards, true, true},
      {"remove_no_op", passes::remove_no_op, true, true},
  };
  return passes;
}

// The pass pipeline for a cuda target. No loop partitioning: a thread loop
// split into parts would no longer span its block. Barriers go in before
// guards are hoisted, so a guard is never lifted over a barrier (a barrier
// is not guarded, so the guard no longer guards every statement of the loop).
const std::vector<Pass>& gpu_pass_list() {
  static const std::vector<Pass> passes = {
      {"storage_flatten", passes::storage_flatten, true, false},
      {"simplify", simplify_stmt, true, false},
      {"vectorize", passes::vectorize, true, true},
      {"unroll", passes::unroll, true, true},
      {"simplify", simplify_stmt, true, true},
      // After vectorizing: a fill's vector copies become cp.async calls.
      {"inject_pipeline", [](const Stmt& s) { return pipelined(s, true); }, true, true},
      {"inject_prefetch", [](const Stmt& s) { return passes::inject_prefetch(s, true); }, true, true},
      {"thread_sync", passes::insert_thread_syncs, true, true},
      {"hoist_guards", passes::hoist_guards, true, true},
      {"remove_no_op", passes::remove_no_op, true, true},
  };
  return passes;
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}

}  // namespace

Stmt lower_to_loop_nest(const Schedule& sch, const std::vector<Tensor>& args, std::vector<BufferArg>* buffer_args) {
  user_check(!args.empty()) << "lower: the function needs at least one argument";
  std::vector<std::pair<Tensor, Var>> binds;
  std::unordered_set<const void*> seen;
  for (auto& t : args) {
    user_check(sch.has_stage(t->op)) << "lower: argument '" << t.name() << "' is not part of the schedule";
    user_check(seen.insert(sch[t].node()).second) << "lower: argument '" << t.name() << "' is given twice";
    Tensor cur(sch.current_op(t));
    Var data = Var::handle(t.name(), cur.dtype());
    binds.emplace_back(t, data);
    if (buffer_args) {
      BufferArg a{data, t.name(), cur.dtype(), {}};
      for (auto& e : cur.shape()) a.shape.push_back(*as_const_int(e));
      buffer_args->push_back(a);
    }
  }
  for (auto& st : sch.stages()) {
    if (!st->is_placeholder) continue;
    bool read = false;
    for (auto& other : sch.stages())
      for (auto& in : input_tensors(other->op)) read |= sch[in].node() == st.node();
    user_check(!read || seen.count(st.node()))
        << "lower: input '" << st.name() << "' is read but is not among the function's arguments";
  }
  for (auto& t : sch.outputs())
    user_check(seen.count(sch[t].node())) << "lower: output '" << t.name() << "' is not among the function's arguments";
  BoundMap bm = infer_bounds(sch);
  return schedule_ops(sch, bm, binds);
}

namespace {

LoweredFunc run_passes(const Schedule& sch, const std::vector<Tensor>& args, const std::string& name, LowerDepth depth,
                       const std::vector<Pass>& pass_list) {
  user_check(!name.empty()) << "lower: the function needs a name";
  LoweredFunc f;
  f.name = name;
  Stmt stmt = lower_to_loop_nest(sch, args, &f.args);
  const bool debug = env_flag("KILN_DEBUG_LOWER");
#ifndef NDEBUG
  const bool verify = true;
#else
  const bool verify = env_flag("KILN_VERIFY_IR");
#endif
  std::vector<Var> free_vars;
  for (auto& a : f.args) free_vars.push_back(a.data);
  if (debug) std::cerr << "// ---- " << name << ": loop nest\n" << to_string(stmt) << "\n";
  for (const Pass& p : pass_list) {
    if (depth == LowerDepth::kAnnotatedLoops && p.vectorized_after) break;
    Stmt next = p.run(stmt);
    internal_assert(next.defined()) << "pass " << p.name << " removed the whole function body";
    if (verify) verify_ir(next, p.name, VerifyOptions{p.flattened_after, p.vectorized_after, free_vars});
    if (debug && !next.same_as(stmt))
      std::cerr << "// ---- " << name << ": after " << p.name << "\n" << to_string(next) << "\n";
    stmt = next;
  }
  f.body = stmt;
  return f;
}

}  // namespace

LoweredFunc lower(const Schedule& sch, const std::vector<Tensor>& args, const std::string& name, LowerDepth depth) {
  return run_passes(sch, args, name, depth, pass_list());
}

LoweredFunc lower_gpu(const Schedule& sch, const std::vector<Tensor>& args, const std::string& name,
                      const GpuLimits& limits, LowerDepth depth) {
  for (const Stage& s : sch.stages())
    user_check(!s->stream_stores) << "stream_stores (stage '" << s.name()
                                  << "') is a CPU primitive (non-temporal stores); a cuda target has none";
  LoweredFunc f = run_passes(sch, args, name, depth, gpu_pass_list());
  if (depth == LowerDepth::kFull) {
    gpu_kernels(f, limits);  // launch dimensions and resources within the limits
    passes::verify_thread_syncs(f.body);
  }
  return f;
}

}  // namespace kiln
