// Draws a random (legal) schedule for a tensor-expression graph: rfactor of
// a split reduction, cache_write, cache_read (for some or all readers),
// random splits (factors that usually do not divide the extent), fuses,
// reorders, inline / root / compute_at decisions (also of stages with several
// consumers, at a loop that encloses all of them), storage_align, and
// vectorize / unroll / parallel annotations. Used by property tests that
// check every lowered kernel against the reference interpreter.
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
    // Maybe factor a reduction: split one of its reduction axes and move
    // one part into a new data-parallel dimension of a new stage.
    for (Stage st : s.stages()) {
      if (st->is_placeholder || st.reduce_axis().empty() || !coin(0.25)) continue;
      std::vector<IterVar> raxes = st.reduce_axis();
      IterVar k = raxes[pick(static_cast<int>(raxes.size()))];
      IterVar ko, ki;
      int64_t f = factor();
      bool nparts = coin(0.3);
      if (nparts)
        st.split_nparts(k, f, &ko, &ki);
      else
        st.split(k, f, &ko, &ki);
      bool inner = coin(0.5);
      std::string name = st.name();
      s.rfactor(Tensor(st->op), inner ? ki : ko);
      log_ << "rfactor(" << name << ", " << (nparts ? "split_nparts(" : "split(") << k->var->name << ", " << f
           << ")." << (inner ? "inner" : "outer") << ") ";
    }
    // Maybe accumulate an output reduction in a local cache stage.
    for (auto& out : s.outputs()) {
      Stage st = s[out];
      if (!st.reduce_axis().empty() && coin(0.35)) {
        s.cache_write(out, MemScope::kLocal);
        log_ << "cache_write(" << out.name() << ") ";
      }
    }
    // Maybe copy an input (or intermediate) into a cache read by some or all
    // of its readers.
    for (int n = 0; n < 2; ++n) {
      if (!coin(0.35)) continue;
      std::vector<Tensor> read;  // tensors that stages read, by op
      for (auto& c : s.stages()) {
        if (c->is_placeholder) continue;
        for (auto& in : input_tensors(c->op)) {
          if (s[in]->is_output) continue;
          bool seen = false;
          for (auto& t : read) seen |= s[t] == s[in];
          if (!seen) read.push_back(in);
        }
      }
      if (read.empty()) continue;
      Tensor t = read[pick(static_cast<int>(read.size()))];
      std::vector<Operation> readers;
      for (auto& c : s.stages()) {
        if (c->is_placeholder) continue;
        bool reads = false;
        for (auto& in : input_tensors(c->op)) reads |= s[in] == s[t];
        if (reads) readers.push_back(c->op);
      }
      std::vector<Operation> chosen;
      for (auto& r : readers)
        if (coin(0.7)) chosen.push_back(r);
      if (chosen.empty()) chosen.push_back(readers[pick(static_cast<int>(readers.size()))]);
      MemScope scope = coin(0.5) ? MemScope::kLocal : MemScope::kGlobal;
      std::string tname = s[t].name();
      s.cache_read(t, scope, chosen);
      log_ << "cache_read(" << tname << ", " << mem_scope_name(scope) << ", {";
      for (auto& r : chosen) log_ << r->name << " ";
      log_ << "}) ";
    }
    std::vector<Stage> stages = s.stages();
    // Consumers first, so that producers can attach to their final loops.
    for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
      Stage st = *it;
      if (st->is_placeholder) continue;
      std::vector<Stage> consumers = effective_consumers(s, st);
      if (!st->is_output) place(st, consumers);
      if (st->attach_type != AttachType::kInline) transform_loops(st);
      if (!st->is_output && st->attach_type != AttachType::kInline && !st->storage_align.empty() && coin(0.3)) {
        int axis = pick(static_cast<int>(st->storage_align.size()));
        static const int64_t kAlign[] = {2, 4, 8, 16};
        int64_t f = kAlign[pick(4)];
        int64_t off = pick(static_cast<int>(f));
        st.storage_align(axis, f, off);
        log_ << st.name() << ".storage_align(" << axis << ", " << f << ", " << off << ") ";
      }
    }
    return log_.str();
  }

  // What apply() has chosen so far (also after it threw).
  std::string log() const { return log_.str(); }

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

  // The position, among host's leaves, of the loop of `host` in which `c`
  // runs: c's own leaves (-1 = c is host itself, any loop of host encloses
  // it), the attach point of c or of a stage c is attached in; -2 when c does
  // not run inside host.
  static int pos_in(const Stage& c, const Stage& host) {
    if (c == host) return -1;
    for (StageNode* p = c.node(); p->attach_type == AttachType::kScope; p = p->attach_stage) {
      if (p->attach_stage == host.node()) {
        const auto& leaves = host.leaf_iter_vars();
        return static_cast<int>(std::find(leaves.begin(), leaves.end(), p->attach_ivar) - leaves.begin());
      }
    }
    return -2;
  }

  void place(Stage& st, const std::vector<Stage>& consumers) {
    bool elementwise = st.reduce_axis().empty();
    int choice = pick(3);
    if (consumers.size() > 1 && coin(0.5)) choice = 1;  // exercise compute_at with several consumers more often
    if (choice == 0 && elementwise) {
      st.compute_inline();
      log_ << st.name() << ".inline ";
      return;
    }
    if (choice == 1 && !consumers.empty()) {
      // A consumer inside whose loops all the others run; attach at a loop
      // that encloses every one of them (with several consumers: at or
      // outside the loops the others are attached at).
      std::vector<Stage> hosts = consumers;
      std::shuffle(hosts.begin(), hosts.end(), rng_);
      for (const Stage& host : hosts) {
        const auto& leaves = host.leaf_iter_vars();
        int limit = static_cast<int>(leaves.size()) - 1;
        for (const Stage& c : consumers) {
          int p = pos_in(c, host);
          if (p == -2) limit = -1;
          if (p >= 0) limit = std::min(limit, p);
        }
        if (limit < 0) continue;
        IterVar at = leaves[pick(limit + 1)];
        st.compute_at(host, at);
        log_ << st.name() << ".compute_at(" << host.name() << ", " << at->var->name << ")";
        if (consumers.size() > 1) log_ << "[" << consumers.size() << " consumers]";
        log_ << " ";
        return;
      }
    }
    log_ << st.name() << ".root ";
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
