#include "schedule/passes/bulk_copy.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/error.h"
#include "compute/analyzer.h"
#include "compute/expr_ops.h"
#include "compute/hw_instructions.h"
#include "compute/ir_functor.h"
#include "compute/printer.h"
#include "compute/simplify.h"
#include "compute/tensor_copy_box.h"
#include "schedule/passes/pass_util.h"

namespace kiln {
namespace passes {

namespace {

using Values = std::unordered_map<const VarNode*, int64_t>;

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

// The value of an integer index expression at `v`; nullopt when it uses
// anything else (a load, a variable without a value, a division by zero).
std::optional<int64_t> eval(const Expr& e, const Values& v) {
  if (auto* i = e.as<IntImmNode>()) return i->value;
  if (auto* x = e.as<VarNode>()) {
    auto it = v.find(x);
    return it == v.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  if (auto* c = e.as<CastNode>())
    return c->value.dtype().is_int() || c->value.dtype().is_uint() ? eval(c->value, v) : std::nullopt;
  if (auto* n = e.as<NotNode>()) {
    auto a = eval(n->a, v);
    return a ? std::optional<int64_t>(!*a) : std::nullopt;
  }
  if (auto* s = e.as<SelectNode>()) {
    auto c = eval(s->condition, v);
    return c ? eval(*c ? s->true_value : s->false_value, v) : std::nullopt;
  }
  if (!is_binary_kind(e->kind())) return std::nullopt;
  auto* b = static_cast<const BinaryNode*>(e.get());
  auto x = eval(b->a, v), y = eval(b->b, v);
  if (!x || !y) return std::nullopt;
  switch (e->kind()) {
    case NodeKind::Add:
      return *x + *y;
    case NodeKind::Sub:
      return *x - *y;
    case NodeKind::Mul:
      return *x * *y;
    case NodeKind::Div:
      return *y == 0 ? std::nullopt : std::optional<int64_t>(*x / *y);
    case NodeKind::Mod:
      return *y == 0 ? std::nullopt : std::optional<int64_t>(*x % *y);
    case NodeKind::FloorDiv:
      return *y == 0 ? std::nullopt : std::optional<int64_t>(floor_div(*x, *y));
    case NodeKind::FloorMod:
      return *y == 0 ? std::nullopt : std::optional<int64_t>(*x - floor_div(*x, *y) * *y);
    case NodeKind::Min:
      return std::min(*x, *y);
    case NodeKind::Max:
      return std::max(*x, *y);
    case NodeKind::EQ:
      return *x == *y;
    case NodeKind::NE:
      return *x != *y;
    case NodeKind::LT:
      return *x < *y;
    case NodeKind::LE:
      return *x <= *y;
    case NodeKind::GT:
      return *x > *y;
    case NodeKind::GE:
      return *x >= *y;
    case NodeKind::And:
      return *x && *y;
    case NodeKind::Or:
      return *x || *y;
    default:
      return std::nullopt;
  }
}

// An index as the sum of a part in the fill's own variables and a part in
// the variables outside it (each term signed).
struct SplitIndex {
  std::vector<std::pair<int, Expr>> inner, outer;  // (sign, term)
};

void add_terms(const Expr& e, int sign, std::vector<std::pair<int, Expr>>* terms) {
  if (auto* a = e.as<AddNode>()) {
    add_terms(a->a, sign, terms);
    add_terms(a->b, sign, terms);
  } else if (auto* s = e.as<SubNode>()) {
    add_terms(s->a, sign, terms);
    add_terms(s->b, -sign, terms);
  } else {
    terms->emplace_back(sign, e);
  }
}

// Splits `index` into its inner and outer parts; "" or why it cannot.
std::string split_index(const Expr& index, const std::unordered_set<const VarNode*>& own, SplitIndex* out) {
  std::vector<std::pair<int, Expr>> terms;
  add_terms(index, 1, &terms);
  for (const auto& [sign, t] : terms) {
    bool in = false, other = false;
    post_order_visit(t, [&](const Ref<Object>& n) {
      if (n->kind() != NodeKind::Var) return;
      (own.count(static_cast<const VarNode*>(n.get())) ? in : other) = true;
    });
    if (in && other) return "its index term " + to_string(t) + " mixes the fill's loops with the loops around it";
    (other ? out->outer : out->inner).emplace_back(sign, t);
  }
  return "";
}

Expr sum(const std::vector<std::pair<int, Expr>>& terms, DType t) {
  Expr s = make_const(t, int64_t{0});
  for (const auto& [sign, e] : terms) s = sign > 0 ? s + e : s - e;
  return s;
}

std::optional<int64_t> eval_sum(const std::vector<std::pair<int, Expr>>& terms, const Values& v) {
  int64_t s = 0;
  for (const auto& [sign, e] : terms) {
    auto x = eval(e, v);
    if (!x) return std::nullopt;
    s += sign * *x;
  }
  return s;
}

// A fill's loop nest around its one copy of `vec` elements (a cp.async, or
// a store of a load).
struct FillNest {
  struct Level {
    const VarNode* var;
    int64_t min, extent;
  };
  std::vector<Level> loops;  // outer to inner
  std::vector<Expr> guards;
  Var dst, src;  // buffers
  Expr dst_offset, src_offset;
  int64_t vec = 0;
  Var lane_tag_loop;  // the loop bound to threadIdx.x
  int64_t lanes = 0;
};

// The first element of a store's or load's index: a scalar, or a ramp of
// stride 1 (undefined otherwise).
Expr first_element(const Expr& index) {
  auto* r = index.as<RampNode>();
  if (!r) return index.dtype().lanes == 1 ? index : Expr();
  return is_one(r->stride) ? r->base : Expr();
}

// Walks the nest; "" or why it is not a plain nest around one copy.
std::string read_nest(const Stmt& s, FillNest* n) {
  if (auto* f = s.as<ForNode>()) {
    const int64_t* mn = as_const_int(f->min);
    const int64_t* ex = as_const_int(f->extent);
    if (!mn || !ex) return "its loop '" + f->loop_var->name + "' has bounds that are not constant";
    if (f->for_kind == ForKind::kThreadBinding) {
      if (f->thread_tag != "threadIdx.x")
        return "its loop '" + f->loop_var->name + "' is bound to " + f->thread_tag + "; the producer's lanes issue " +
               "bulk copies along threadIdx.x";
      if (n->lanes) return "it has two loops bound to threadIdx.x";
      n->lanes = *ex;
      n->lane_tag_loop = f->loop_var;
    }
    n->loops.push_back({f->loop_var.node(), *mn, *ex});
    return read_nest(f->body, n);
  }
  if (auto* i = s.as<IfThenElseNode>()) {
    if (i->else_case.defined()) return "it branches on " + to_string(i->condition);
    n->guards.push_back(i->condition);
    return read_nest(i->then_case, n);
  }
  if (auto* a = s.as<AttrStmtNode>()) return read_nest(a->body, n);
  if (auto* c = s.as<TensorIntrinCallNode>()) {
    if (c->intrin.rfind(kCudaCpAsyncPrefix, 0) != 0) return "it calls " + c->intrin + ", not a cp.async copy";
    if (!c->scalars.empty())
      return "its copies are predicated (zeros where the tile overhangs '" + c->operands[1].buffer->name +
             "'; bulk copies have no predicate)";
    if (!as_const_int(c->operands[0].extent, &n->vec)) return "its copies have no constant length";
    n->dst = c->operands[0].buffer;
    n->src = c->operands[1].buffer;
    n->dst_offset = c->operands[0].offset;
    n->src_offset = c->operands[1].offset;
    return "";
  }
  if (auto* st = s.as<StoreNode>()) {
    auto* ld = st->value.as<LoadNode>();
    if (!ld && st->value.as<SelectNode>())
      return "it stores zeros where a condition fails (a tile that overhangs its source, or padding); bulk copies "
             "have no predicate";
    if (!ld) return "it stores computed values, not copies";
    if (st->predicate.defined() || ld->predicate.defined()) return "its stores or loads are predicated";
    if (ld->buffer->pointee != st->buffer->pointee)
      return "it converts " + ld->buffer->pointee.str() + " to " + st->buffer->pointee.str();
    n->dst_offset = first_element(st->index);
    n->src_offset = first_element(ld->index);
    if (!n->dst_offset.defined() || !n->src_offset.defined()) return "its vector accesses are strided";
    n->dst = st->buffer;
    n->src = ld->buffer;
    n->vec = st->value.dtype().lanes;
    return "";
  }
  return std::string("it holds a statement of kind ") + node_kind_name(s->kind());
}

struct Run {
  int64_t dst, src, len;
};

class BulkFills {
 public:
  BulkFills(const Var& warp, int64_t consumers, int64_t producers, bool tensor_maps)
      : warp_(warp), consumers_(consumers), producers_(producers), tensor_maps_(tensor_maps) {}

  // One fill: its bulk-copy form, or undefined with `why` set.
  Stmt convert(const Stmt& fill, const Expr& slot, std::string* why) {
    FillNest n;
    *why = read_nest(fill, &n);
    if (!why->empty()) return Stmt();
    if (!n.dst.defined()) return *why = "it copies nothing", Stmt();
    if (!n.lanes) return *why = "it has no loop bound to threadIdx.x to issue the copies from", Stmt();
    const int64_t vec = n.vec;

    std::unordered_set<const VarNode*> own{warp_.node()};
    for (const auto& l : n.loops) own.insert(l.var);
    SplitIndex d, s;
    *why = split_index(n.dst_offset, own, &d);
    if (why->empty()) *why = split_index(n.src_offset, own, &s);
    for (const Expr& g : n.guards) {
      bool outer = false;
      post_order_visit(g, [&](const Ref<Object>& x) {
        outer |= x->kind() == NodeKind::Var && !own.count(static_cast<const VarNode*>(x.get()));
      });
      if (outer && why->empty()) *why = "it is guarded by " + to_string(g) + ", which depends on the loops around it";
    }
    if (!why->empty()) return Stmt();

    // Every element the fill's producer threads copy, from where.
    std::vector<Run> copies;
    int64_t points = 1;
    for (const auto& l : n.loops) points *= l.extent;
    if (points * producers_ > (1 << 20)) return *why = "it runs more than 2^20 copies", Stmt();
    Values v;
    std::function<bool(size_t)> walk = [&](size_t level) -> bool {
      if (level == n.loops.size()) {
        for (const Expr& g : n.guards) {
          auto ok = eval(g, v);
          if (!ok) return false;
          if (!*ok) return true;
        }
        auto di = eval_sum(d.inner, v), si = eval_sum(s.inner, v);
        if (!di || !si) return false;
        copies.push_back({*di, *si, vec});
        return true;
      }
      const auto& l = n.loops[level];
      for (int64_t x = l.min; x < l.min + l.extent; ++x) {
        v[l.var] = x;
        if (!walk(level + 1)) return false;
      }
      return true;
    };
    for (int64_t w = consumers_; w < consumers_ + producers_; ++w) {
      v[warp_.node()] = w;
      if (!walk(0)) return *why = "its indices or guards use something other than integer arithmetic", Stmt();
    }
    std::vector<Run> runs;
    *why = merge_runs(copies, &runs);
    if (!why->empty()) return Stmt();

    const DType et = n.dst->pointee;
    const auto& types = cuda_cp_async_types();
    if (std::find(types.begin(), types.end(), et) == types.end())
      return *why = "it copies " + et.str() + ", which bulk copies are not offered for", Stmt();
    const int64_t bytes = et.bytes(), len = runs[0].len, rows = static_cast<int64_t>(runs.size());
    for (const Run& x : runs)
      if (x.len != len) *why = "its rows are not evenly spaced runs of one length";
    if (why->empty() && len * bytes % 16 != 0)
      *why = "its rows are runs of " + std::to_string(len * bytes) + " bytes; a bulk copy moves a multiple of 16 bytes";
    const DType it = n.dst_offset.dtype(), st = n.src_offset.dtype();
    const Expr dst_outer = simplify(sum(d.outer, it)), src_outer = simplify(sum(s.outer, st));
    const DType lt = n.lane_tag_loop.dtype();
    auto c = [&](int64_t x) { return make_const(lt, x); };
    const std::string part = n.lane_tag_loop->name + ".tma_part";
    Stmt box = tensor_maps_ && why->empty()
                   ? tensor_copy(dst_outer, src_outer, s.outer, runs, n.dst, n.src, slot, part, false)
                   : Stmt();
    // A slot stored 128-byte swizzled (Stage::storage_swizzle): its
    // copies, unswizzled, may be a box whose rows land swizzled. This is
    // tried on any fill that is no plain box: whatever the layout, a box
    // found so lands every element where the fill put it. Without tensor
    // maps it only names why such a fill stays.
    std::vector<Run> swizzled_rows;
    if (!box.defined() && (tensor_maps_ || !why->empty()) && unswizzled_rows(copies, bytes, &swizzled_rows)) {
      if (tensor_maps_) box = tensor_copy(dst_outer, src_outer, s.outer, swizzled_rows, n.dst, n.src, slot, part, true);
      if (!box.defined())
        *why = tensor_maps_ ? "it fills a slot stored 128-byte swizzled, whose rows form no box that a tensor copy "
                              "lands swizzled (each box needs a start 1024-byte aligned, whatever the loops around "
                              "the fill, in a tensor map of the source)"
                            : "it fills a slot stored 128-byte swizzled, whose rows only tensor copies land (bulk "
                              "copies with tensor maps); a bulk copy lands a row as it is";
    }
    if (box.defined()) {
      Var lane(n.lane_tag_loop->name + ".tma", lt);
      int64_t elements = 0;
      for (const Run& x : runs) elements += x.len;
      return on_first_producer(IfThenElseNode::make(lane == c(0), box), lane, n.lanes, elements * bytes);
    }
    if (!why->empty()) return Stmt();

    const int64_t dstep = rows > 1 ? runs[1].dst - runs[0].dst : 0, sstep = rows > 1 ? runs[1].src - runs[0].src : 0;
    for (int64_t r = 0; r < rows; ++r) {
      const Run& x = runs[static_cast<size_t>(r)];
      if (x.dst != runs[0].dst + r * dstep || x.src != runs[0].src + r * sstep)
        return *why = "its rows are not evenly spaced runs of one length", Stmt();
    }
    auto aligned = [&](const Expr& outer, int64_t first, int64_t step) {
      Analyzer an;
      const ModularSet m = an.modular_set(outer);
      auto ok = [&](int64_t elems) { return elems * bytes % 16 == 0; };
      return ok(m.coeff) && ok(m.base + first) && (rows == 1 || ok(step));
    };
    const std::string where =
        " are not all 16-byte aligned (the first row's offset or the distance between rows "
        "is not a multiple of 16 bytes)";
    if (!aligned(dst_outer, runs[0].dst, dstep)) return *why = "its rows in '" + n.dst->name + "'" + where, Stmt();
    if (!aligned(src_outer, runs[0].src, sstep)) return *why = "its rows in '" + n.src->name + "'" + where, Stmt();

    // The first producer warp's lanes issue the rows in turn.
    Var lane(n.lane_tag_loop->name + ".bulk", lt), round(n.lane_tag_loop->name + ".bulk_round", lt);
    const int64_t rounds = (rows + n.lanes - 1) / n.lanes;
    const Expr row = rounds == 1 ? Expr(lane) : round * c(n.lanes) + lane;
    Stmt copy = TensorIntrinCallNode::make(
        cuda_bulk_copy_instruction(et),
        {{n.dst, simplify(dst_outer + make_const(it, runs[0].dst) + cast(it, row) * make_const(it, dstep)),
          make_const(it, len), make_const(it, int64_t{1})},
         {n.src, simplify(src_outer + make_const(st, runs[0].src) + cast(st, row) * make_const(st, sstep)),
          make_const(st, len), make_const(st, int64_t{1})}},
        {slot});
    if (rows % n.lanes != 0) copy = IfThenElseNode::make(row < c(rows), copy);
    return on_first_producer(rounds == 1 ? copy : ForNode::make(round, c(0), c(rounds), ForKind::kSerial, copy), lane,
                             n.lanes, rows * len * bytes);
  }

  // The loops around the fill within the producer, whose ranges bound its
  // first element's place in the source (ProducerLoop binds them).
  Analyzer& loops() { return loops_; }

 private:
  // `body` run by the first producer warp's `lanes` lanes (the loop `lane`
  // bound to threadIdx.x), under the attribute that counts its `bytes`.
  Stmt on_first_producer(Stmt body, const Var& lane, int64_t lanes, int64_t bytes) const {
    if (producers_ > 1) body = IfThenElseNode::make(warp_ == make_const(warp_.dtype(), consumers_), body);
    body = ForNode::make(lane, make_const(lane.dtype(), int64_t{0}), make_const(lane.dtype(), lanes),
                         ForKind::kThreadBinding, body, "threadIdx.x");
    return AttrStmtNode::make(Ref<Object>(), attr::kBulkCopyBytes, make_const(DType::i32(), bytes), body);
  }

  // The fill as tensor copies of a box, in parts along its outermost
  // dimension where that has more than a box's 256 rows, when its rows land
  // one after another in the slot from a 128-byte aligned start (1024-byte
  // when `swizzled`: `runs` are then the rows' places before the swizzle,
  // which the copies land swizzled) and their starts in the source split
  // into up to four dimensions (count, distance), innermost first, that a
  // tensor map views with no coordinate passing its dimension, whatever the
  // loops around the fill (compute/tensor_copy_box.h); undefined when they
  // do not.
  Stmt tensor_copy(const Expr& dst_outer, const Expr& src_outer, const std::vector<std::pair<int, Expr>>& src_terms,
                   const std::vector<Run>& runs, const Var& dst, const Var& src, const Expr& slot,
                   const std::string& part_name, bool swizzled) {
    const int64_t len = runs[0].len, rows = static_cast<int64_t>(runs.size()), bytes = dst->pointee.bytes();
    if (rows < 2) return Stmt();
    for (int64_t r = 0; r < rows; ++r)
      if (runs[static_cast<size_t>(r)].dst != runs[0].dst + r * len) return Stmt();
    auto src_of = [&](int64_t r) { return runs[static_cast<size_t>(r)].src; };
    // The rows' dimensions, each the longest stretch of evenly spaced
    // blocks of the previous ones that divides them.
    std::vector<std::pair<int64_t, int64_t>> row_dims;
    for (int64_t block = 1; block < rows;) {
      const int64_t blocks = rows / block, step = src_of(block) - src_of(0);
      if (step <= 0 || step > INT32_MAX) return Stmt();
      int64_t count = 2;
      while (count < blocks && src_of(count * block) - src_of((count - 1) * block) == step) ++count;
      while (blocks % count != 0) --count;
      if (count < 2) return Stmt();
      row_dims.emplace_back(count, step);
      block *= count;
    }
    if (row_dims.size() > 4 || row_dims[0].second < len) return Stmt();
    for (int64_t r = 0; r < rows; ++r) {
      int64_t at = src_of(0), rest = r;
      for (const auto& [count, distance] : row_dims) at += rest % count * distance, rest /= count;
      if (src_of(r) != at) return Stmt();
    }
    // Parts along the outermost dimension, each a box of at most 256 rows
    // there, starting 128-byte aligned (1024-byte swizzled).
    const int64_t align = swizzled ? 1024 : 128;
    const auto [outer_count, outer_distance] = row_dims.back();
    int64_t parts = (outer_count + 255) / 256;
    while (parts <= outer_count && (outer_count % parts != 0 || (parts > 1 && rows / parts * len * bytes % align != 0)))
      ++parts;
    if (parts > outer_count) return Stmt();
    row_dims.back().first /= parts;
    const int64_t part_rows = rows / parts, part_step = row_dims.back().first * outer_distance;
    std::vector<std::pair<int64_t, int64_t>> box{{len, 1}};
    box.insert(box.end(), row_dims.begin(), row_dims.end());
    std::vector<TensorCopyDim> view;
    if (!tensor_copy_map_dims(box, int64_t{1} << 60, &view).empty()) return Stmt();

    Analyzer& an = loops_;
    // A swizzled box's rows were unswizzled by their offsets within the
    // fill, which is the swizzle of the whole offset only when the part
    // outside the fill is a multiple of 1024 bytes itself.
    const ModularSet d = an.modular_set(dst_outer);
    if (d.coeff * bytes % align != 0 || (d.base + runs[0].dst) * bytes % align != 0) return Stmt();
    if (swizzled && (d.base * bytes % align != 0 || runs[0].dst * bytes % align != 0)) return Stmt();
    const DType it = dst_outer.dtype(), st = src_outer.dtype();
    Var p(part_name, it);
    Analyzer::VarScope part_scope(&an, p);
    an.bind(p, Range(make_const(it, int64_t{0}), make_const(it, parts)));
    // The first element's place in the source: its terms, and over all of
    // them base + coeff * t for any t.
    std::vector<std::pair<int, Expr>> terms = src_terms;
    if (parts > 1) terms.emplace_back(1, cast(st, p) * make_const(st, part_step));
    const ModularSet s = an.modular_set(src_outer);
    const int64_t coeff = parts > 1 ? std::gcd(s.coeff, part_step) : s.coeff, base = s.base + runs[0].src;
    auto mod = [](int64_t a, int64_t b) { return ((a % b) + b) % b; };
    for (const TensorCopyDim& v : view) {
      if (v.farthest) continue;
      // The largest residue modulo the next dimension's distance, whose
      // quotient by this one's distance is the coordinate along it: from
      // the ranges of the terms that do not vanish modulo it where their
      // sum stays within one period, else from the modular set alone.
      const int64_t next = v.distance * v.extent;
      Expr rest = make_const(st, runs[0].src);
      for (const auto& [sign, t] : terms) {
        const ModularSet m = an.modular_set(t);
        if (m.coeff % next == 0 && m.base % next == 0) continue;
        rest = sign > 0 ? rest + t : rest - t;
      }
      const ConstIntBound b = an.const_int_bound(simplify(rest));
      int64_t last = 0;
      if (b.min_value >= 0 && b.max_value < next) {
        last = b.max_value;
      } else if (coeff == 0 || coeff % next == 0) {
        last = mod(base, next);
      } else if (next % coeff == 0) {
        last = next - coeff + mod(base, coeff);
      } else {
        return Stmt();
      }
      if (last / v.distance + v.box > v.extent) return Stmt();
    }

    const Expr at = parts == 1 ? make_const(it, int64_t{0}) : Expr(p);
    std::vector<Expr> scalars{slot, make_const(DType::i32(), int64_t{swizzled ? 1 : 0})};
    for (size_t k = 1; k < row_dims.size(); ++k) {
      scalars.push_back(make_const(DType::i32(), row_dims[k].first));
      scalars.push_back(make_const(DType::i32(), row_dims[k].second));
    }
    Stmt copy = TensorIntrinCallNode::make(
        cuda_tensor_copy_instruction(dst->pointee),
        {{dst, simplify(dst_outer + make_const(it, runs[0].dst) + at * make_const(it, part_rows * len)),
          make_const(it, part_rows * len), make_const(it, len)},
         {src, simplify(src_outer + make_const(st, runs[0].src) + cast(st, at) * make_const(st, part_step)),
          make_const(st, part_rows * len), make_const(st, row_dims[0].second)}},
        scalars);
    // What the instruction itself requires (16-byte distances, boxes of at
    // most 256 along each dimension): a fill that passes the rest but not
    // this keeps its copies.
    if (!hw_call_problem(*copy.as<TensorIntrinCallNode>()).empty()) return Stmt();
    if (parts > 1) copy = ForNode::make(p, make_const(it, int64_t{0}), make_const(it, parts), ForKind::kSerial, copy);
    return copy;
  }

  // The copies of a fill into a slot stored 128-byte swizzled, at their
  // places before the swizzle, as `rows` of 128 bytes; false when a copy
  // crosses a 16-byte chunk (the swizzle moves chunks) or they make no
  // whole rows. The swizzle of an offset within 1024 bytes is its own
  // inverse, and the same on the slot's offsets as on shared addresses when
  // the slot's start is 1024-byte aligned, which tensor_copy requires.
  static bool unswizzled_rows(std::vector<Run> copies, int64_t bytes, std::vector<Run>* rows) {
    const int64_t row = 128 / bytes;
    for (Run& x : copies) {
      const int64_t at = x.dst * bytes;
      if (at < 0 || at % 16 + x.len * bytes > 16) return false;
      x.dst = (at ^ (((at >> 7) & 7) << 4)) / bytes;
    }
    std::vector<Run> merged;
    if (!merge_runs(std::move(copies), &merged).empty()) return false;
    for (const Run& m : merged) {
      if (m.dst % row != 0 || m.len % row != 0) return false;
      for (int64_t k = 0; k < m.len; k += row) rows->push_back({m.dst + k, m.src + k, row});
    }
    return true;
  }

  // Sorts the copies by slot element and joins neighbours contiguous in
  // both; "" or why they overlap.
  static std::string merge_runs(std::vector<Run> copies, std::vector<Run>* runs) {
    std::sort(copies.begin(), copies.end(),
              [](const Run& a, const Run& b) { return a.dst != b.dst ? a.dst < b.dst : a.src < b.src; });
    for (const Run& x : copies) {
      if (!runs->empty()) {
        Run& last = runs->back();
        // Each producer warp of a fill without a warp loop copies it all: the same copy again.
        if (x.dst >= last.dst && x.dst + x.len <= last.dst + last.len && x.src - x.dst == last.src - last.dst) continue;
        if (x.dst < last.dst + last.len) return "it writes some elements twice, from different places";
        if (x.dst == last.dst + last.len && x.src == last.src + last.len) {
          last.len += x.len;
          continue;
        }
      }
      runs->push_back(x);
    }
    if (runs->empty()) return "it copies nothing";
    return "";
  }

  Var warp_;
  int64_t consumers_, producers_;
  bool tensor_maps_;
  Analyzer loops_;
};

// The producer's loop over the pipeline's iterations: its body's fills sit
// between the pop of the free token and the push of the full one.
class ProducerLoop : public IRMutator {
 public:
  ProducerLoop(BulkFills& b) : bulk_(b) {}
  int converted = 0;
  std::string reasons;

 protected:
  Stmt mutate_For(const ForNode* op, const Stmt& self) override {
    Analyzer::VarScope scope(&bulk_.loops(), op->loop_var);
    bulk_.loops().bind(op->loop_var, Range(op->min, op->extent));
    return IRMutator::mutate_For(op, self);
  }
  Stmt mutate_Seq(const SeqNode* op, const Stmt& self) override {
    const TokenNode* push = producer_full_push(op);
    if (!push) return IRMutator::mutate_Seq(op, self);
    std::vector<Stmt> out;
    for (const Stmt& s : op->seq) {
      if (s.as<TokenNode>()) {
        out.push_back(s);
        continue;
      }
      std::string why;
      Stmt b = bulk_.convert(s, push->slot, &why);
      if (b.defined()) {
        ++converted;
        out.push_back(b);
        continue;
      }
      std::string name = "a fill";
      post_order_visit(s, [&](const Ref<Object>& n) {
        if (n->kind() == NodeKind::TensorIntrinCall)
          name = "the fill of '" + static_cast<const TensorIntrinCallNode*>(n.get())->operands[0].buffer->name + "'";
        if (n->kind() == NodeKind::Store)
          name = "the fill of '" + static_cast<const StoreNode*>(n.get())->buffer->name + "'";
      });
      reasons += (reasons.empty() ? "" : "; ") + name + " cannot move by them: " + why;
      out.push_back(s);
    }
    return SeqNode::make(out);
  }

 private:
  BulkFills& bulk_;
};

}  // namespace

Stmt bulk_copy_fills(const Stmt& producer, const Var& warp, int64_t consumer_warps, int64_t producer_warps,
                     bool every_fill, bool tensor_maps, const std::string& loop_name) {
  BulkFills bulk(warp, consumer_warps, producer_warps, tensor_maps);
  ProducerLoop p(bulk);
  Stmt out = p.mutate(producer);
  user_check(!every_fill || p.reasons.empty())
      << "pipeline of loop '" << loop_name << "': bulk copies were asked for every fill, but " << p.reasons
      << "; a bulk copy moves rows of whole 16-byte multiples, copied as they are";
  return out;
}

}  // namespace passes
}  // namespace kiln
