#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "compute/ir_functor.h"
#include "compute/printer.h"
#include "compute/simplify.h"
#include "schedule/verify.h"

namespace kiln {

namespace {

bool has_tokens(const Stmt& s) {
  bool found = false;
  post_order_visit(s, [&](const Ref<Object>& n) { found |= n->kind() == NodeKind::Token; });
  return found;
}

class TokenChecker {
 public:
  void run(const Stmt& s) {
    walk(s);
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
    if (!s.defined() || !has_tokens(s)) return;
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
    } else if (auto* at = s.as<AttrStmtNode>()) {
      walk(at->body);
    } else if (auto* t = s.as<TokenNode>()) {
      token(t);
    } else {
      user_error() << "pipeline tokens: a " << node_kind_name(s->kind()) << " statement holds tokens" << where()
                   << "; they may only sit in loops, sequences and conditions";
    }
  }

  void token(const TokenNode* t) {
    const int64_t n = eval(t->slot, "slot");
    Slot& s = slots_[{t->pipeline, n}];
    const std::string which = label(t->pipeline, n) + where();
    using Op = TokenNode::Op;
    using Queue = TokenNode::Queue;
    if (t->queue == Queue::kFree && t->op == Op::kPop) {
      user_check(s.free > 0) << which << ": the fill waits for the slot to be released (pop of its free token), "
                             << "but the compute still holds it and runs later: the pipeline would deadlock";
      --s.free;
      s.filling = true;
    } else if (t->queue == Queue::kFull && t->op == Op::kPush) {
      user_check(s.filling) << which << " is marked full without being taken for the fill (no pop of its free "
                            << "token first): it may be overwritten while the compute still reads it";
      user_check(s.full == 0) << which << " is marked full twice before the compute took it";
      s.filling = false;
      ++s.full;
    } else if (t->queue == Queue::kFull && t->op == Op::kPop) {
      user_check(s.full > 0) << which << ": the compute waits for the slot to be filled (pop of its full token), "
                             << "but no fill pushed it before: the pipeline would deadlock";
      --s.full;
      s.reading = true;
    } else {
      user_check(s.reading) << which << " is released (push of its free token) but the compute never took it";
      s.reading = false;
      ++s.free;
    }
  }

  std::vector<std::pair<const VarNode*, int64_t>> env_;
  std::map<std::pair<int, int64_t>, Slot> slots_;
};

}  // namespace

void verify_pipeline_tokens(const Stmt& s) { TokenChecker().run(s); }

}  // namespace kiln
