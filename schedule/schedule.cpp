#include "schedule/schedule.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_set>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/ir_functor.h"

namespace kiln {

namespace {

const ComputeOpNode* as_compute(const Operation& op) { return op.as<ComputeOpNode>(); }

std::string axis_name(const IterVar& iv) { return iv->var->name; }

int leaf_position(const StageNode* s, const IterVar& iv) {
  for (size_t i = 0; i < s->leaf_iter_vars.size(); ++i)
    if (s->leaf_iter_vars[i] == iv) return static_cast<int>(i);
  return -1;
}

bool in_all(const StageNode* s, const IterVar& iv) {
  for (auto& x : s->all_iter_vars)
    if (x == iv) return true;
  return false;
}

void check_leaf(const StageNode* s, const IterVar& iv, const char* primitive) {
  user_check(iv.defined()) << primitive << ": undefined axis on stage '" << s->op->name << "'";
  if (leaf_position(s, iv) >= 0) return;
  if (in_all(s, iv))
    user_error() << primitive << ": axis '" << axis_name(iv) << "' of stage '" << s->op->name
                 << "' is not a leaf axis (it was already split or fused)";
  user_error() << primitive << ": axis '" << axis_name(iv) << "' does not belong to stage '" << s->op->name << "'";
}

void check_not_placeholder(const StageNode* s, const char* primitive) {
  user_check(!s->is_placeholder) << primitive << ": '" << s->op->name << "' is an input placeholder and has no loops";
}

// Split halves keep their parent's index type: an i64 axis (see fuse) may
// still have an outer part of 2^31 or more iterations.
IterVar derived_axis(const IterVar& from, const std::string& suffix) {
  return IterVar::make(Var(from->var->name + suffix, from->var->dtype), Range(), from->iter_kind);
}

int64_t saturating_mul(int64_t a, int64_t b) {
  return a > 0 && b > std::numeric_limits<int64_t>::max() / a ? std::numeric_limits<int64_t>::max() : a * b;
}

// An upper bound of the iteration count of an axis of the stage, from its
// constant root extents through its splits and fuses (the same arithmetic as
// bound inference); nullopt when a root extent is not a constant.
std::optional<int64_t> extent_bound(const StageNode* s, const IterVar& iv) {
  for (auto& r : s->root_iter_vars) {
    if (r != iv) continue;
    const int64_t* e = r->dom.extent.defined() ? as_const_int(r->dom.extent) : nullptr;
    return e ? std::optional<int64_t>(*e) : std::nullopt;
  }
  for (auto& rel : s->relations) {
    if (rel.kind == IterVarRelation::kFuse) {
      if (rel.fused != iv) continue;
      auto o = extent_bound(s, rel.outer), i = extent_bound(s, rel.inner);
      if (!o || !i) return std::nullopt;
      return saturating_mul(*o, *i);
    }
    if (rel.outer != iv && rel.inner != iv) continue;
    auto p = extent_bound(s, rel.parent);
    if (!p) return std::nullopt;
    int64_t inner = rel.factor > 0 ? std::min(*p, rel.factor) : (*p + rel.nparts - 1) / rel.nparts;
    int64_t outer = rel.factor > 0 ? (*p + rel.factor - 1) / rel.factor : std::min(*p, rel.nparts);
    return rel.outer == iv ? outer : inner;
  }
  return std::nullopt;
}

// Fresh copies of the op's axes, with a map from old vars to the new ones.
std::vector<IterVar> copy_axes(const std::vector<IterVar>& axes, const std::string& prefix, VarMap* vmap) {
  std::vector<IterVar> out;
  for (auto& iv : axes) {
    std::string n = iv->var->name;
    auto dot = n.rfind('.');
    std::string base = dot == std::string::npos ? n : n.substr(dot + 1);
    Var v(iv->iter_kind == IterKind::kReduce ? n : prefix + "." + base);
    (*vmap)[iv->var.node()] = v;
    out.push_back(IterVar::make(v, iv->dom, iv->iter_kind));
  }
  return out;
}

// Replaces TensorReads of given ops with reads of other tensors.
class ReadReplacer : public IRMutator {
 public:
  explicit ReadReplacer(const std::unordered_map<const OperationNode*, Tensor>& m) : m_(m) {}
  using IRMutator::mutate;

 protected:
  Expr mutate_TensorRead(const TensorReadNode* op, const Expr& self) override {
    Expr r = IRMutator::mutate_TensorRead(op, self);
    auto it = m_.find(op->tensor->op.get());
    if (it == m_.end()) return r;
    return TensorReadNode::make(it->second, r.as<TensorReadNode>()->indices);
  }

 private:
  const std::unordered_map<const OperationNode*, Tensor>& m_;
};

}  // namespace

// ------------------------------------------------------------------ Schedule

Schedule::Schedule(std::vector<Tensor> outputs) : outputs_(std::move(outputs)) {
  user_check(!outputs_.empty()) << "a schedule needs at least one output tensor";
  for (auto& op : post_dfs_order(outputs_)) add_stage(op, stages_.size());
  for (auto& t : outputs_) stage_map_.at(t->op.get())->is_output = true;
}

StageNode* Schedule::add_stage(const Operation& op, size_t insert_at) {
  auto node = std::make_unique<StageNode>();
  node->schedule = this;
  node->op = op;
  node->origin_op = op;
  node->is_placeholder = op.as<PlaceholderOpNode>() != nullptr;
  if (auto* c = as_compute(op)) {
    for (auto& iv : c->axis) node->root_iter_vars.push_back(iv);
    for (auto& iv : c->reduce_axis) node->root_iter_vars.push_back(iv);
  }
  node->all_iter_vars = node->root_iter_vars;
  node->leaf_iter_vars = node->root_iter_vars;
  node->storage_align.assign(op->output_shape().size(), {0, 0});
  node->storage_tile.assign(op->output_shape().size(), 0);
  StageNode* raw = node.get();
  stages_.insert(stages_.begin() + static_cast<long>(insert_at), std::move(node));
  stage_map_[op.get()] = raw;
  return raw;
}

size_t Schedule::position_of(const StageNode* s) const {
  for (size_t i = 0; i < stages_.size(); ++i)
    if (stages_[i].get() == s) return i;
  internal_error() << "stage not in schedule";
}

void Schedule::set_op(StageNode* s, const Operation& op) {
  replaced_ops_.push_back(s->op);  // callers still use the old op's node (and its stage_map_ key)
  s->op = op;
  stage_map_[op.get()] = s;  // old ops keep mapping to this stage too
}

Stage Schedule::operator[](const Operation& op) const {
  auto it = stage_map_.find(op.get());
  user_check(it != stage_map_.end()) << "'" << op->name << "' is not part of this schedule";
  return Stage(it->second);
}
Stage Schedule::operator[](const Tensor& t) const { return (*this)[t->op]; }
bool Schedule::has_stage(const Operation& op) const { return stage_map_.count(op.get()) != 0; }

std::vector<Stage> Schedule::stages() const {
  std::vector<Stage> out;
  for (auto& s : stages_) out.emplace_back(s.get());
  return out;
}

void Schedule::rewrite_readers(const std::vector<StageNode*>& readers,
                               const std::unordered_map<const OperationNode*, Tensor>& replace) {
  for (StageNode* r : readers) {
    auto* c = as_compute(r->op);
    if (!c) continue;
    Expr body = ReadReplacer(replace).mutate(c->body);
    if (body.same_as(c->body)) continue;
    set_op(r, Operation(new ComputeOpNode(c->name, c->tag, c->axis, c->reduce_axis, body)));
  }
}

Tensor Schedule::cache_read(const Tensor& t, MemScope scope, const std::vector<Operation>& readers) {
  StageNode* src = (*this)[t].node();
  user_check(!readers.empty()) << "cache_read of '" << t.name() << "' needs at least one reader";
  std::vector<StageNode*> reader_stages;
  for (auto& op : readers) {
    StageNode* r = (*this)[op].node();
    bool reads = false;
    for (auto& in : input_tensors(r->op)) reads |= (*this)[in].node() == src;
    user_check(reads) << "cache_read: '" << r->op->name << "' does not read '" << t.name() << "'";
    reader_stages.push_back(r);
  }
  Tensor cur(src->op);
  std::string name = src->op->name + "." + mem_scope_name(scope);
  Tensor cache = compute(cur.shape(), ComputeFn([&](const std::vector<Var>& v) {
                           std::vector<Expr> idx(v.begin(), v.end());
                           return cur(idx);
                         }),
                         name, "cache_read");
  StageNode* cs = add_stage(cache->op, position_of(src) + 1);
  cs->scope = scope;
  std::unordered_map<const OperationNode*, Tensor> replace;
  replace[src->op.get()] = cache;
  replace[src->origin_op.get()] = cache;
  rewrite_readers(reader_stages, replace);
  return cache;
}

Tensor Schedule::cache_write(const Tensor& t, MemScope scope) {
  StageNode* s = (*this)[t].node();
  auto* c = as_compute(s->op);
  user_check(c) << "cache_write: '" << t.name() << "' is a placeholder; only computed tensors can be cached";
  user_check(s->relations.empty() && s->attach_type == AttachType::kRoot)
      << "cache_write: apply it to '" << t.name() << "' before any other primitive on that stage";
  VarMap vmap;
  std::string name = c->name + "." + mem_scope_name(scope);
  std::vector<IterVar> axes = copy_axes(c->axis, name, &vmap);
  std::vector<IterVar> raxes = copy_axes(c->reduce_axis, name, &vmap);
  Expr body = substitute(c->body, vmap);
  if (auto* r = body.as<ReduceNode>()) body = ReduceNode::make(r->combiner, r->source, raxes, r->condition);
  Operation cache_op(new ComputeOpNode(name, c->tag, axes, raxes, body));
  Tensor cache(cache_op);
  // The original stage keeps its data-parallel axes and becomes a copy.
  std::vector<Expr> idx;
  for (auto& iv : c->axis) idx.push_back(iv->var);
  Operation copy(new ComputeOpNode(c->name, c->tag, c->axis, {}, cache(idx)));
  StageNode* cs = add_stage(cache_op, position_of(s));
  cs->scope = scope;
  set_op(s, copy);
  s->root_iter_vars = c->axis;
  s->all_iter_vars = c->axis;
  s->leaf_iter_vars = c->axis;
  return cache;
}

Tensor Schedule::rfactor(const Tensor& t, const IterVar& axis) {
  StageNode* s = (*this)[t].node();
  auto* c = as_compute(s->op);
  user_check(c && c->body.as<ReduceNode>()) << "rfactor: '" << t.name() << "' is not a reduction";
  check_leaf(s, axis, "rfactor");
  user_check(axis->iter_kind == IterKind::kReduce)
      << "rfactor: axis '" << axis_name(axis) << "' of '" << t.name() << "' is not a reduction axis";
  const IterVarRelation* rel = nullptr;
  for (auto& r : s->relations) {
    if (r.kind == IterVarRelation::kSplit && (r.outer == axis || r.inner == axis))
      rel = &r;
    else
      user_error() << "rfactor: apply it right after splitting one reduction axis of '" << t.name()
                   << "' (other splits or fuses on the stage are not supported)";
  }
  user_check(rel != nullptr) << "rfactor: axis '" << axis_name(axis)
                             << "' must come from splitting a reduction axis of '" << t.name() << "'";
  const ReduceNode* red = c->body.as<ReduceNode>();
  const IterVar& k = rel->parent;
  int64_t kext = *as_const_int(k->dom.extent);
  int64_t factor = rel->factor ? rel->factor : (kext + rel->nparts - 1) / rel->nparts;
  int64_t outer_ext = (kext + factor - 1) / factor;
  bool factored_inner = rel->inner == axis;
  std::string name = c->name + ".rf";
  VarMap vmap;
  std::vector<IterVar> axes = copy_axes(c->axis, name, &vmap);
  Var kf(name + "." + axis_name(axis));
  // i32 extents, like the axes' i32 vars (an int64_t would make an i64 immediate).
  IterVar kf_iv =
      IterVar::make(kf, Range(0, static_cast<int>(factored_inner ? factor : outer_ext)), IterKind::kDataPar);
  axes.insert(axes.begin(), kf_iv);
  Var kr(axis_name(factored_inner ? rel->outer : rel->inner));
  IterVar kr_iv = reduce_axis(Range(0, static_cast<int>(factored_inner ? outer_ext : factor)), kr->name);
  Expr ko = factored_inner ? Expr(kr_iv->var) : Expr(kf), ki = factored_inner ? Expr(kf) : Expr(kr_iv->var);
  Expr kval = ko * static_cast<int>(factor) + ki + k->dom.min;
  std::vector<IterVar> raxes{kr_iv};
  for (auto& r : red->axes) {
    if (r == k) continue;
    VarMap one;
    raxes.push_back(copy_axes({r}, name, &one)[0]);
    vmap.insert(one.begin(), one.end());
  }
  vmap[k->var.node()] = kval;
  Expr cond = red->condition.defined() ? substitute(red->condition, vmap) : Expr();
  if (kext % factor != 0) {
    Expr in_range = kval < k->dom.min + static_cast<int>(kext);
    cond = cond.defined() ? (cond && in_range) : in_range;
  }
  Expr body = ReduceNode::make(red->combiner, substitute(red->source, vmap), raxes, cond);
  Operation rf_op(new ComputeOpNode(name, c->tag, axes, raxes, body));
  Tensor rf(rf_op);
  // t now reduces rf over the factored axis.
  IterVar kk = reduce_axis(Range(0, static_cast<int>(*as_const_int(kf_iv->dom.extent))), axis_name(axis) + ".v");
  std::vector<Expr> idx{kk->var};
  for (auto& iv : c->axis) idx.push_back(iv->var);
  Operation combined(
      new ComputeOpNode(c->name, c->tag, c->axis, {kk}, ReduceNode::make(red->combiner, rf(idx), {kk}, Expr())));
  add_stage(rf_op, position_of(s));
  set_op(s, combined);
  s->root_iter_vars = c->axis;
  s->root_iter_vars.push_back(kk);
  s->all_iter_vars = s->root_iter_vars;
  s->leaf_iter_vars = s->root_iter_vars;
  s->relations.clear();
  s->iter_attrs.clear();
  return rf;
}

// ------------------------------------------------------------------ Stage

const std::vector<IterVar>& Stage::leaf_iter_vars() const { return node_->leaf_iter_vars; }
const std::string& Stage::name() const { return node_->op->name; }

std::vector<IterVar> Stage::axis() const {
  auto* c = as_compute(node_->op);
  return c ? c->axis : std::vector<IterVar>{};
}
std::vector<IterVar> Stage::reduce_axis() const {
  auto* c = as_compute(node_->op);
  return c ? c->reduce_axis : std::vector<IterVar>{};
}

static void do_split(StageNode* s, const IterVar& parent, int64_t factor, int64_t nparts, IterVar* outer,
                     IterVar* inner) {
  check_not_placeholder(s, "split");
  check_leaf(s, parent, "split");
  IterVar o = derived_axis(parent, ".outer"), i = derived_axis(parent, ".inner");
  IterVarRelation rel{IterVarRelation::kSplit, parent, o, i, factor, nparts, IterVar()};
  s->relations.push_back(rel);
  s->all_iter_vars.push_back(o);
  s->all_iter_vars.push_back(i);
  int pos = leaf_position(s, parent);
  s->leaf_iter_vars.erase(s->leaf_iter_vars.begin() + pos);
  s->leaf_iter_vars.insert(s->leaf_iter_vars.begin() + pos, {o, i});
  *outer = o;
  *inner = i;
}

void Stage::split(const IterVar& parent, int64_t factor, IterVar* outer, IterVar* inner) {
  user_check(factor > 0) << "split: factor for axis '" << (parent.defined() ? axis_name(parent) : "?") << "' of stage '"
                         << name() << "' must be positive, got " << factor;
  do_split(node_, parent, factor, 0, outer, inner);
}

void Stage::split_nparts(const IterVar& parent, int64_t nparts, IterVar* outer, IterVar* inner) {
  user_check(nparts > 0) << "split: nparts for axis '" << (parent.defined() ? axis_name(parent) : "?") << "' of stage '"
                         << name() << "' must be positive, got " << nparts;
  do_split(node_, parent, 0, nparts, outer, inner);
}

IterVar Stage::fuse(const IterVar& outer, const IterVar& inner) {
  check_not_placeholder(node_, "fuse");
  check_leaf(node_, outer, "fuse");
  check_leaf(node_, inner, "fuse");
  int po = leaf_position(node_, outer), pi = leaf_position(node_, inner);
  user_check(pi == po + 1) << "fuse: axes '" << axis_name(outer) << "' and '" << axis_name(inner) << "' of stage '"
                           << name() << "' must be adjacent, outer first";
  user_check(outer->iter_kind == inner->iter_kind)
      << "fuse: cannot fuse reduction and data-parallel axes ('" << axis_name(outer) << "', '" << axis_name(inner)
      << "') of stage '" << name() << "'";
  // Each root extent is at most 2^30, but a fused axis can count 2^31
  // iterations or more: then it (and what is split from it) indexes in 64 bits.
  auto eo = extent_bound(node_, outer), ei = extent_bound(node_, inner);
  bool wide = !eo || !ei || saturating_mul(*eo, *ei) > std::numeric_limits<int32_t>::max() ||
              outer->var->dtype.bits > 32 || inner->var->dtype.bits > 32;
  IterVar f = IterVar::make(Var(outer->var->name + "." + inner->var->name + ".fused", wide ? DType::i64() : DType::i32()),
                            Range(), outer->iter_kind);
  IterVarRelation rel{IterVarRelation::kFuse, IterVar(), outer, inner, 0, 0, f};
  node_->relations.push_back(rel);
  node_->all_iter_vars.push_back(f);
  node_->leaf_iter_vars.erase(node_->leaf_iter_vars.begin() + po, node_->leaf_iter_vars.begin() + po + 2);
  node_->leaf_iter_vars.insert(node_->leaf_iter_vars.begin() + po, f);
  return f;
}

IterVar Stage::fuse(const std::vector<IterVar>& axes) {
  user_check(!axes.empty()) << "fuse: no axes given for stage '" << name() << "'";
  IterVar acc = axes[0];
  for (size_t i = 1; i < axes.size(); ++i) acc = fuse(acc, axes[i]);
  return acc;
}

Stage& Stage::reorder(const std::vector<IterVar>& order) {
  check_not_placeholder(node_, "reorder");
  std::vector<int> pos;
  std::unordered_set<const IterVarNode*> seen;
  for (auto& iv : order) {
    check_leaf(node_, iv, "reorder");
    user_check(seen.insert(iv.get()).second)
        << "reorder: axis '" << axis_name(iv) << "' of stage '" << name() << "' appears twice";
    pos.push_back(leaf_position(node_, iv));
  }
  std::sort(pos.begin(), pos.end());
  for (size_t i = 0; i < order.size(); ++i) node_->leaf_iter_vars[pos[i]] = order[i];
  return *this;
}

void Stage::tile(const IterVar& x, const IterVar& y, int64_t xf, int64_t yf, IterVar* xo, IterVar* yo, IterVar* xi,
                 IterVar* yi) {
  split(x, xf, xo, xi);
  split(y, yf, yo, yi);
  reorder({*xo, *yo, *xi, *yi});
}

Stage& Stage::vectorize(const IterVar& iv) {
  check_not_placeholder(node_, "vectorize");
  check_leaf(node_, iv, "vectorize");
  user_check(iv->iter_kind != IterKind::kReduce)
      << "vectorize: axis '" << axis_name(iv) << "' of stage '" << name()
      << "' is a reduction axis; vectorize a data-parallel axis (or rfactor the reduction first)";
  node_->iter_attrs[iv.get()].for_kind = ForKind::kVectorized;
  return *this;
}

Stage& Stage::unroll(const IterVar& iv) {
  check_not_placeholder(node_, "unroll");
  check_leaf(node_, iv, "unroll");
  node_->iter_attrs[iv.get()].for_kind = ForKind::kUnrolled;
  return *this;
}

Stage& Stage::parallel(const IterVar& iv) {
  check_not_placeholder(node_, "parallel");
  check_leaf(node_, iv, "parallel");
  user_check(iv->iter_kind != IterKind::kReduce) << "parallel: axis '" << axis_name(iv) << "' of stage '" << name()
                                                 << "' is a reduction axis; its iterations depend on each other";
  node_->iter_attrs[iv.get()].for_kind = ForKind::kParallel;
  return *this;
}

Stage& Stage::bind(const IterVar& iv, const std::string& tag) {
  check_not_placeholder(node_, "bind");
  check_leaf(node_, iv, "bind");
  static const char* const kTags[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                      "threadIdx.x", "threadIdx.y", "threadIdx.z"};
  bool ok = false;
  for (auto* k : kTags) ok |= tag == k;
  user_check(ok) << "bind: unknown thread tag '" << tag << "' (expected blockIdx.x/y/z or threadIdx.x/y/z)";
  if (iv->iter_kind == IterKind::kReduce) {
    user_check(tag.rfind("threadIdx.", 0) == 0)
        << "bind: axis '" << axis_name(iv) << "' of stage '" << name() << "' is a reduction axis and cannot be bound "
        << "to " << tag << ": the blocks of a kernel cannot combine their results; bind it to a threadIdx (a "
        << "reduction across the block's threads), or rfactor the reduction and bind the factored axis";
    for (auto& other : node_->leaf_iter_vars) {
      auto it = node_->iter_attrs.find(other.get());
      user_check(other == iv || other->iter_kind != IterKind::kReduce || it == node_->iter_attrs.end() ||
                 it->second.for_kind != ForKind::kThreadBinding)
          << "bind: stage '" << name() << "' already reduces across threads along '" << axis_name(other)
          << "'; kiln binds at most one reduction axis per stage to a thread index (fuse the reduction axes first)";
    }
  }
  auto& a = node_->iter_attrs[iv.get()];
  a.for_kind = ForKind::kThreadBinding;
  a.thread_tag = tag;
  return *this;
}

Stage& Stage::pragma(const IterVar& iv, const std::string& pname, Expr value) {
  check_not_placeholder(node_, "pragma");
  check_leaf(node_, iv, "pragma");
  user_check(!pname.empty()) << "pragma: empty pragma name on stage '" << name() << "'";
  node_->iter_attrs[iv.get()].pragmas.emplace_back(pname, value);
  return *this;
}

Stage& Stage::tensorize(const IterVar& iv, const TensorIntrin& intrin) {
  check_not_placeholder(node_, "tensorize");
  check_leaf(node_, iv, "tensorize");
  user_check(intrin != nullptr) << "tensorize: no intrinsic given for axis '" << axis_name(iv) << "' of stage '"
                                << name() << "'";
  for (auto& [leaf, attr] : node_->iter_attrs)
    user_check(!attr.tensor_intrin || leaf == iv.get())
        << "tensorize: stage '" << name() << "' is already tensorized at axis '" << leaf->var->name
        << "' (one tensorized nest per stage)";
  node_->iter_attrs[iv.get()].tensor_intrin = intrin;
  return *this;
}

Stage& Stage::pipeline(const IterVar& iv, int stages, int producer_warps, BulkCopies bulk_copies, BulkCopyForm form) {
  check_not_placeholder(node_, "pipeline");
  check_leaf(node_, iv, "pipeline");
  user_check(stages >= 1 && stages <= kMaxPipelineStages)
      << "pipeline: axis '" << axis_name(iv) << "' of stage '" << name() << "' asks for " << stages
      << " stages; a pipeline has 1 to " << kMaxPipelineStages;
  user_check(producer_warps >= 0 && producer_warps <= kMaxProducerWarps)
      << "pipeline: axis '" << axis_name(iv) << "' of stage '" << name() << "' asks for " << producer_warps
      << " producer warps; warp specialization takes 1 to " << kMaxProducerWarps << " (0: none)";
  node_->iter_attrs[iv.get()].pipeline_stages = stages;
  user_check(bulk_copies == BulkCopies::kOff || producer_warps > 0)
      << "pipeline: axis '" << axis_name(iv) << "' of stage '" << name() << "' asks for bulk copies without "
      << "producer warps; the producer warps issue them, so give it 1 to " << kMaxProducerWarps;
  node_->iter_attrs[iv.get()].producer_warps = producer_warps;
  node_->iter_attrs[iv.get()].bulk_copies = bulk_copies;
  node_->iter_attrs[iv.get()].bulk_copy_form = bulk_copies == BulkCopies::kOff ? BulkCopyForm::kRows : form;
  // Products stay in flight only in such a pipeline (mma_in_flight).
  if (producer_warps == 0 || stages < 2) node_->iter_attrs[iv.get()].mma_in_flight = 0;
  return *this;
}

Stage& Stage::mma_in_flight(const IterVar& iv, int iterations) {
  check_not_placeholder(node_, "mma_in_flight");
  check_leaf(node_, iv, "mma_in_flight");
  user_check(iterations == 0 || iterations == 1)
      << "mma_in_flight: axis '" << axis_name(iv) << "' of stage '" << name() << "' asks for " << iterations
      << " iterations of products in flight; kiln keeps 0 or 1";
  IterVarAttr& a = node_->iter_attrs[iv.get()];
  user_check(iterations == 0 || (a.producer_warps > 0 && a.pipeline_stages >= 2))
      << "mma_in_flight: axis '" << axis_name(iv) << "' of stage '" << name() << "' is "
      << (a.producer_warps > 0 ? "pipelined with 1 stage" : "not pipelined with producer warps")
      << "; products stay in flight in a warp-specialized pipeline of 2 or more stages (pipeline(axis, stages >= 2, "
         "producer_warps >= 1) first), where the slot they read can stay taken";
  a.mma_in_flight = iterations;
  return *this;
}

Stage& Stage::prefetch(const Tensor& t, const IterVar& iv, int distance) {
  check_not_placeholder(node_, "prefetch");
  check_leaf(node_, iv, "prefetch");
  user_check(distance >= 1) << "prefetch: axis '" << axis_name(iv) << "' of stage '" << name() << "' asks for distance "
                            << distance << "; a prefetch looks at least 1 iteration ahead";
  user_check(t.defined()) << "prefetch: no tensor given for axis '" << axis_name(iv) << "' of stage '" << name() << "'";
  const Schedule& sch = *node_->schedule;
  bool read = false;
  if (sch.has_stage(t->op))
    for (const Tensor& in : input_tensors(node_->op)) read |= sch.has_stage(in->op) && sch[in].node() == sch[t].node();
  user_check(read) << "prefetch: stage '" << name() << "' does not read '" << t.name()
                   << "'; prefetch a tensor the stage reads";
  node_->iter_attrs[iv.get()].prefetch.emplace_back(t, distance);
  return *this;
}

Stage& Stage::stream_stores() {
  check_not_placeholder(node_, "stream_stores");
  node_->stream_stores = true;
  return *this;
}

Stage& Stage::double_buffer() {
  check_not_placeholder(node_, "double_buffer");
  user_check(node_->attach_type == AttachType::kScope && node_->attach_stage)
      << "double_buffer: stage '" << name()
      << "' is not computed at a loop of another stage (compute_at it inside the loop it should load ahead of)";
  Stage(node_->attach_stage).pipeline(node_->attach_ivar, 2);
  return *this;
}

Stage& Stage::storage_align(int axis, int64_t factor, int64_t offset) {
  check_not_placeholder(node_, "storage_align");
  int nd = static_cast<int>(node_->storage_align.size());
  user_check(axis >= 0 && axis < nd) << "storage_align: stage '" << name() << "' has " << nd << " dimensions, axis "
                                     << axis << " is out of range";
  user_check(factor > 0 && offset >= 0 && offset < factor)
      << "storage_align: need factor > 0 and 0 <= offset < factor, got factor " << factor << ", offset " << offset;
  node_->storage_align[axis] = {factor, offset};
  return *this;
}

Stage& Stage::storage_tile(int64_t rows, int64_t cols) {
  check_not_placeholder(node_, "storage_tile");
  const size_t nd = node_->storage_tile.size();
  user_check(nd >= 2) << "storage_tile: stage '" << name() << "' has " << nd
                      << " dimension(s); it tiles the last two of a buffer";
  user_check(rows > 0 && cols > 0) << "storage_tile: need tiles of at least 1 x 1 elements, got " << rows << " x "
                                   << cols;
  node_->storage_tile[nd - 2] = rows;
  node_->storage_tile[nd - 1] = cols;
  return *this;
}

Stage& Stage::storage_swizzle(int64_t row_bytes) {
  check_not_placeholder(node_, "storage_swizzle");
  const size_t nd = node_->storage_tile.size();
  user_check(nd >= 2) << "storage_swizzle: stage '" << name() << "' has " << nd
                      << " dimension(s); it swizzles the last two of a buffer";
  user_check(row_bytes == 128) << "storage_swizzle: kiln swizzles rows of 128 bytes (Hopper's 128-byte swizzle), got "
                               << row_bytes;
  const int64_t elem = node_->op->output_dtype().bytes();
  user_check(elem >= 1 && 16 % elem == 0) << "storage_swizzle: stage '" << name() << "' has elements of " << elem
                                          << " bytes; the swizzle moves 16-byte chunks of whole elements";
  node_->storage_swizzle = row_bytes;
  return *this;
}

Stage& Stage::compute_at(const Stage& parent, const IterVar& iv) {
  check_not_placeholder(node_, "compute_at");
  user_check(parent.defined() && parent != *this)
      << "compute_at: stage '" << name() << "' cannot be computed at itself";
  user_check(!node_->is_output) << "compute_at: '" << name()
                                << "' is an output of the schedule; it must be computed at the root";
  check_leaf(parent.node(), iv, "compute_at");
  node_->attach_type = AttachType::kScope;
  node_->attach_stage = parent.node();
  node_->attach_ivar = iv;
  return *this;
}

Stage& Stage::compute_inline() {
  check_not_placeholder(node_, "compute_inline");
  user_check(!node_->is_output) << "compute_inline: '" << name() << "' is an output of the schedule";
  auto* c = as_compute(node_->op);
  user_check(c && !c->body.as<ReduceNode>())
      << "compute_inline: '" << name() << "' is a reduction; only element-wise stages can be inlined";
  node_->attach_type = AttachType::kInline;
  node_->attach_stage = nullptr;
  return *this;
}

Stage& Stage::compute_root() {
  check_not_placeholder(node_, "compute_root");
  node_->attach_type = AttachType::kRoot;
  node_->attach_stage = nullptr;
  return *this;
}

Stage& Stage::set_scope(MemScope scope) {
  check_not_placeholder(node_, "set_scope");
  node_->scope = scope;
  return *this;
}

IterVar find_axis(const Stage& s, const std::string& name) {
  for (auto& iv : s->all_iter_vars)
    if (iv->var->name == name) return iv;
  user_error() << "stage '" << s.name() << "' has no axis named '" << name << "'";
}

}  // namespace kiln
