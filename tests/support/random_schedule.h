// Draws a random (legal) schedule for a tensor-expression graph: random
// splits (factors that usually do not divide the extent), fuses, reorders,
// inline / root / compute_at decisions, cache_write, and vectorize / unroll /
// parallel annotations. Used by property tests that check every lowered
// kernel against the reference interpreter.
#pragma once

#include <algorithm>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "schedule/schedule.h"

namespace kiln::testing {

class RandomScheduler {
 public:
  explicit RandomScheduler(uint64_t seed) : rng_(seed) {}

  // Schedules `s` (built from `outputs`) at random and returns a readable
  // log of what was chosen, for failure messages.
  std::string apply(Schedule& s) {
    log_.str("");
    std::vector<Stage> stages = s.stages();
    // Maybe accumulate an output reduction in a local cache stage.
    for (auto& out : s.outputs()) {
      Stage st = s[out];
      if (!st.reduce_axis().empty() && coin(0.35)) {
        Tensor cache = s.cache_write(out, MemScope::kLocal);
        log_ << "cache_write(" << out.name() << ") ";
        stages = s.stages();
      }
    }
    // Consumers first, so that producers can attach to their final loops.
    for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
      Stage st = *it;
      if (st->is_placeholder) continue;
      std::vector<Stage> consumers = effective_consumers(s, st);
      if (!st->is_output) place(st, consumers);
      if (st->attach_type != AttachType::kInline) transform_loops(st);
    }
    return log_.str();
  }

 private:
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  int64_t factor() {
    static const int64_t kFactors[] = {1, 2, 3, 4, 5, 7, 8, 16};
    return kFactors[pick(8)];
  }

  // Non-inlined stages that read st's values (through inlined stages).
  std::vector<Stage> effective_consumers(Schedule& s, const Stage& st) {
    std::vector<Stage> out;
    for (auto& c : s.stages()) {
      if (c->is_placeholder || c == st) continue;
      bool reads = false;
      for (auto& in : input_tensors(c->op)) reads |= s[in] == st;
      if (!reads) continue;
      if (c->attach_type == AttachType::kInline) {
        for (auto& cc : effective_consumers(s, c))
          if (std::find(out.begin(), out.end(), cc) == out.end()) out.push_back(cc);
      } else if (std::find(out.begin(), out.end(), c) == out.end()) {
        out.push_back(c);
      }
    }
    return out;
  }

  void place(Stage& st, const std::vector<Stage>& consumers) {
    bool elementwise = st.reduce_axis().empty();
    int choice = pick(3);
    if (choice == 0 && elementwise) {
      st.compute_inline();
      log_ << st.name() << ".inline ";
    } else if (choice == 1 && consumers.size() == 1 && consumers[0]->attach_type != AttachType::kInline) {
      Stage c = consumers[0];
      const auto& leaves = c.leaf_iter_vars();
      IterVar at = leaves[pick(static_cast<int>(leaves.size()))];
      st.compute_at(c, at);
      log_ << st.name() << ".compute_at(" << c.name() << ", " << at->var->name << ") ";
    } else {
      log_ << st.name() << ".root ";
    }
  }

  void transform_loops(Stage& st) {
    // Splits.
    std::vector<IterVar> leaves = st.leaf_iter_vars();
    for (auto& iv : leaves) {
      if (!coin(0.5)) continue;
      IterVar o, i;
      int64_t f = factor();
      if (coin(0.8)) {
        st.split(iv, f, &o, &i);
        log_ << st.name() << ".split(" << iv->var->name << ", " << f << ") ";
      } else {
        st.split_nparts(iv, f, &o, &i);
        log_ << st.name() << ".split_nparts(" << iv->var->name << ", " << f << ") ";
      }
    }
    // Maybe fuse two adjacent axes of the same kind.
    const auto& cur = st.leaf_iter_vars();
    if (cur.size() >= 2 && coin(0.3)) {
      int p = pick(static_cast<int>(cur.size()) - 1);
      if (cur[p]->iter_kind == cur[p + 1]->iter_kind) {
        log_ << st.name() << ".fuse(" << cur[p]->var->name << ", " << cur[p + 1]->var->name << ") ";
        st.fuse(cur[p], cur[p + 1]);
      }
    }
    // Maybe reorder.
    std::vector<IterVar> order = st.leaf_iter_vars();
    if (order.size() >= 2 && coin(0.5)) {
      std::shuffle(order.begin(), order.end(), rng_);
      st.reorder(order);
      log_ << st.name() << ".reorder(";
      for (auto& iv : order) log_ << iv->var->name << " ";
      log_ << ") ";
    }
    // Annotations on distinct leaves.
    order = st.leaf_iter_vars();
    std::vector<IterVar> data_par;
    for (auto& iv : order)
      if (iv->iter_kind == IterKind::kDataPar) data_par.push_back(iv);
    IterVar vec, par;
    if (!data_par.empty() && coin(0.6)) {
      vec = coin(0.7) ? data_par.back() : data_par[pick(static_cast<int>(data_par.size()))];
      st.vectorize(vec);
      log_ << st.name() << ".vectorize(" << vec->var->name << ") ";
    }
    if (!data_par.empty() && coin(0.4)) {
      par = data_par[pick(static_cast<int>(data_par.size()))];
      if (par != vec) {
        st.parallel(par);
        log_ << st.name() << ".parallel(" << par->var->name << ") ";
      }
    }
    if (coin(0.4)) {
      IterVar u = order[pick(static_cast<int>(order.size()))];
      if (u != vec && u != par) {
        st.unroll(u);
        log_ << st.name() << ".unroll(" << u->var->name << ") ";
      }
    }
  }

  std::mt19937_64 rng_;
  std::ostringstream log_;
};

}  // namespace kiln::testing
