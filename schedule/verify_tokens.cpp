#include <algorithm>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "compute/hw_instructions.h"
#include "compute/ir_functor.h"
#include "compute/printer.h"
#include "compute/simplify.h"
#include "schedule/verify.h"

namespace kiln {

namespace {

bool is_commit_wait(const Ref<Object>& n) {
  return n->kind() == NodeKind::TensorIntrinCall &&
         static_cast<const TensorIntrinCallNode*>(n.get())->intrin == kCudaWgmmaCommitWait;
}

// Tokens, or wgmma commit-and-waits: the walk runs the loops and conditions
// around both.
bool has_tokens(const Stmt& s) {
  bool found = false;
  post_order_visit(s, [&](const Ref<Object>& n) { found |= n->kind() == NodeKind::Token || is_commit_wait(n); });
  return found;
}

class TokenChecker {
 public:
  void run(const Stmt& s) {
    post_order_visit(s, [&](const Ref<Object>& n) {
      if (n->kind() == NodeKind::TensorIntrinCall)
        async_products_ |= is_cuda_wgmma_async(static_cast<const TensorIntrinCallNode*>(n.get())->intrin);
    });
    walk(s);
    size_t in_flight = products_.open.size();
    for (const auto& g : products_.groups) in_flight += g.size();
    user_check(in_flight == 0) << "pipeline tokens: " << in_flight << " issue(s) of wgmma products are still in flight "
                               << "at the end: no wgmma commit-and-wait retires them";
    for (auto& [key, slot] : slots_) {
      const std::string which = label(key.first, key.second);
      user_check(slot.full == 0) << which << " is filled (a full token pushed) but never read: no pop takes it";
      user_check(!slot.filling) << which << " is taken for a fill (its free token popped) that never completes";
      user_check(!slot.reading) << which << " is read (its full token popped) but never released";
    }
  }

 private:
  struct Slot {
    int free = 1, full = 0;
    bool filling = false, reading = false;
    int64_t fills = 0, reads = 0, releases = 0;  // uses of the slot so far, for the phases
  };

  static std::string label(int pipeline, int64_t slot) {
    return "pipeline " + std::to_string(pipeline) + ": slot " + std::to_string(slot);
  }

  std::string where() const {
    if (env_.empty()) return "";
    std::string s = " (at ";
    for (size_t i = 0; i < env_.size(); ++i)
      s += (i ? ", " : "") + env_[i].first->name + " = " + std::to_string(env_[i].second);
    return s + ")";
  }

  int64_t eval(const Expr& e, const char* what) const {
    VarMap vm;
    for (auto& [v, value] : env_) vm[v] = make_const(Var(v).dtype(), value);
    Expr r = simplify(substitute(e, vm));
    const int64_t* c = as_const_int(r);
    user_check(c) << "pipeline tokens: the " << what << " " << to_string(e)
                  << " does not reduce to a constant given the loops around it" << where()
                  << "; the tokens can only be checked under loops of constant bounds";
    return *c;
  }

  void walk(const Stmt& s) {
    if (!s.defined()) return;
    if (!has_tokens(s)) return products(s);
    if (auto* seq = s.as<SeqNode>()) {
      for (const Stmt& c : seq->seq) walk(c);
    } else if (auto* f = s.as<ForNode>()) {
      if (f->for_kind == ForKind::kThreadBinding) return walk(f->body);
      const int64_t lo = eval(f->min, "loop start"), n = eval(f->extent, "loop extent");
      env_.emplace_back(f->loop_var.node(), 0);
      for (int64_t i = 0; i < n; ++i) {
        env_.back().second = lo + i;
        walk(f->body);
      }
      env_.pop_back();
    } else if (auto* i = s.as<IfThenElseNode>()) {
      walk(eval(i->condition, "condition") ? i->then_case : i->else_case);
    } else if (auto* l = s.as<LetStmtNode>()) {
      walk(l->body);
    } else if (auto* a = s.as<AllocateNode>()) {
      walk(a->body);
    } else if (auto* at = s.as<AttrStmtNode>(); at && at->key == attr::kWarpSpecialized) {
      auto* sides = at->body.as<IfThenElseNode>();
      internal_assert(sides && !record_) << "a warp-specialized region is if (producer warp) ... else ...";
      std::vector<Event> producer, consumer;
      record_ = &producer;
      walk(sides->then_case);
      record_ = &consumer;
      walk(sides->else_case);
      record_ = nullptr;
      run_side_by_side(producer, consumer);
      last_full_.reset();  // what follows reads no slot of the region
    } else if (auto* at = s.as<AttrStmtNode>()) {
      walk(at->body);
    } else if (auto* t = s.as<TokenNode>()) {
      token(t);
    } else if (is_commit_wait(s)) {
      const auto* c = s.as<TensorIntrinCallNode>();
      user_check(c->scalars.size() == 1) << "pipeline tokens: a wgmma commit-and-wait takes one scalar" << where();
      record(Event{nullptr, 0, 0, where(), false, eval(c->scalars[0], "count of wgmma groups left in flight")});
    } else {
      user_error() << "pipeline tokens: a " << node_kind_name(s->kind()) << " statement holds tokens" << where()
                   << "; they may only sit in loops, sequences and conditions";
    }
  }

  // A token met on the walk, with its slot and phase evaluated; or, with no
  // token, wgmma products issued asynchronously (`issue`), or a
  // commit-and-wait that leaves `groups_left` groups of them in flight.
  struct Event {
    const TokenNode* token;
    int64_t slot, phase;
    std::string where;
    bool issue = false;
    int64_t groups_left = 0;
  };

  void token(const TokenNode* t) {
    record(Event{t, eval(t->slot, "slot"), t->phase.defined() ? eval(t->phase, "phase") : 0, where()});
  }
  void record(Event e) {
    if (record_)
      record_->push_back(std::move(e));
    else
      apply(e);
  }

  // The asynchronous wgmma products of a statement without tokens or
  // commit-and-waits (one issue stands for all: they join the same group).
  void products(const Stmt& s) {
    if (!async_products_) return;
    bool issues = false;
    post_order_visit(s, [&](const Ref<Object>& n) {
      issues |= n->kind() == NodeKind::TensorIntrinCall &&
                is_cuda_wgmma_async(static_cast<const TensorIntrinCallNode*>(n.get())->intrin);
    });
    if (issues) record(Event{nullptr, 0, 0, where(), true});
  }

  // wgmma products in flight, by the slots they read: those of the open
  // group, then the committed groups, oldest first. A product reads the slot
  // whose full token the compute took last (inject_pipeline issues them
  // right after).
  using SlotKey = std::pair<int, int64_t>;
  struct Products {
    std::vector<SlotKey> open;
    std::vector<std::vector<SlotKey>> groups;
  };
  void products_event(const Event& e) {
    if (e.issue) {
      products_.open.push_back(last_full_ ? *last_full_ : SlotKey{-1, -1});  // -1: no slot
      return;
    }
    products_.groups.push_back(std::move(products_.open));
    products_.open.clear();
    const size_t keep = static_cast<size_t>(std::max<int64_t>(e.groups_left, 0));
    if (products_.groups.size() > keep)
      products_.groups.erase(products_.groups.begin(), products_.groups.end() - static_cast<long>(keep));
  }
  bool read_in_flight(const SlotKey& key) const {
    for (const SlotKey& k : products_.open)
      if (k == key) return true;
    for (const auto& g : products_.groups)
      for (const SlotKey& k : g)
        if (k == key) return true;
    return false;
  }

  // Whether `e` may run now, with the other warps' tokens as they stand.
  bool ready(const Event& e) {
    if (!e.token) return true;
    const Slot& s = slots_[{e.token->pipeline, e.slot}];
    using Op = TokenNode::Op;
    if (e.token->op != Op::kPop) return true;
    return e.token->queue == TokenNode::Queue::kFree ? s.free > 0 : s.full > 0;
  }

  // The producer warps' and the compute warps' tokens of a warp-specialized
  // region, run side by side: each goes on while its next token is ready.
  void run_side_by_side(const std::vector<Event>& producer, const std::vector<Event>& consumer) {
    size_t p = 0, c = 0;
    while (p < producer.size() || c < consumer.size()) {
      bool moved = false;
      for (; p < producer.size() && ready(producer[p]); ++p, moved = true) apply(producer[p]);
      for (; c < consumer.size() && ready(consumer[c]); ++c, moved = true) apply(consumer[c]);
      if (moved) continue;
      auto at = [&](const std::vector<Event>& ev, size_t i) {
        if (i == ev.size()) return std::string("are done");
        return std::string("wait for the ") + (ev[i].token->queue == TokenNode::Queue::kFull ? "full" : "free") +
               " token of " + label(ev[i].token->pipeline, ev[i].slot) + ev[i].where;
      };
      user_error() << "pipeline tokens: the warp-specialized pipeline would deadlock: the producer warps "
                   << at(producer, p) << ", and the compute warps " << at(consumer, c);
    }
  }

  void apply(const Event& e) {
    if (!e.token) return products_event(e);
    const TokenNode* t = e.token;
    Slot& s = slots_[{t->pipeline, e.slot}];
    const std::string which = label(t->pipeline, e.slot) + e.where;
    const bool phased = t->phase.defined();
    // A phased token names the use of the slot it belongs to: the GPU waits
    // on that phase's parity, so a wrong one waits for another use.
    auto phase_is = [&](int64_t want, const char* what) {
      user_check(!phased || e.phase == want)
          << which << ": the " << what << " names phase " << e.phase << " of the slot, but it is phase " << want
          << " there; a parity wait on the wrong phase returns early or never";
    };
    using Op = TokenNode::Op;
    using Queue = TokenNode::Queue;
    if (t->op == Op::kWait) {
      user_check(s.free > 0 && !s.reading) << which << ": the drain waits for the slot's release, but the compute "
                                           << "still holds it";
      phase_is(s.releases - 1, "drain");
    } else if (t->queue == Queue::kFree && t->op == Op::kPop) {
      user_check(s.free > 0) << which << ": the fill waits for the slot to be released (pop of its free token), "
                             << "but the compute still holds it and runs later: the pipeline would deadlock";
      phase_is(s.fills - 1, "fill's wait for the slot's release");
      --s.free;
      ++s.fills;
      s.filling = true;
    } else if (t->queue == Queue::kFull && t->op == Op::kPush) {
      user_check(s.filling) << which << " is marked full without being taken for the fill (no pop of its free "
                            << "token first): it may be overwritten while the compute still reads it";
      user_check(s.full == 0) << which << " is marked full twice before the compute took it";
      phase_is(s.fills - 1, "fill's arrival");
      s.filling = false;
      ++s.full;
    } else if (t->queue == Queue::kFull && t->op == Op::kPop) {
      user_check(s.full > 0) << which << ": the compute waits for the slot to be filled (pop of its full token), "
                             << "but no fill pushed it before: the pipeline would deadlock";
      phase_is(s.reads, "compute's wait for the fill");
      --s.full;
      ++s.reads;
      s.reading = true;
      last_full_ = SlotKey{t->pipeline, e.slot};
    } else {
      user_check(s.reading) << which << " is released (push of its free token) but the compute never took it";
      user_check(!read_in_flight({t->pipeline, e.slot}))
          << which << " is released (push of its free token) while wgmma products that read it are in flight: "
          << "the producer could refill it under them; a wgmma commit-and-wait must retire them first";
      phase_is(s.releases, "release");
      s.reading = false;
      ++s.releases;
      ++s.free;
    }
  }

  std::vector<Event>* record_ = nullptr;  // inside a warp-specialized region: the side being walked
  bool async_products_ = false;           // the statement issues asynchronous wgmma products
  Products products_;
  std::optional<SlotKey> last_full_;
  std::vector<std::pair<const VarNode*, int64_t>> env_;
  std::map<std::pair<int, int64_t>, Slot> slots_;
};

}  // namespace

void verify_pipeline_tokens(const Stmt& s) { TokenChecker().run(s); }

}  // namespace kiln
