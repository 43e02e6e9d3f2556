#include "schedule/passes/storage_flatten.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "base/error.h"
#include "compute/analyzer.h"
#include "compute/expr_ops.h"
#include "compute/ir_functor.h"
#include "compute/printer.h"
#include "compute/tensor.h"
#include "compute/tensor_intrin.h"
#include "schedule/passes/pass_util.h"

namespace kiln {
namespace passes {

namespace {

struct FlatBuffer {
  Var handle;
  DType dtype;
  DType index_type;           // i32, or i64 for 2^31 elements or more

  std::vector<Expr> mins;     // per dimension, subtracted from the index
  std::vector<Expr> strides;  // per dimension, in elements
  MemScope scope = MemScope::kGlobal;
  // A warp-scope buffer is stored in tiles of its fragment's shape (one
  // tile per intrinsic call, its elements contiguous): index i of dimension
  // d goes to tile i / tile[d], element i % tile[d] of it. `strides` then
  // step from tile to tile, `tile_strides` within one.
  std::vector<int64_t> tile;
  std::vector<Expr> tile_strides;
  // A buffer stored 128-byte swizzled (Stage::storage_swizzle): its last
  // two dimensions hold `swizzle_rows` rows in strips of `swizzle_width`
  // elements (128 bytes), `strides` of the outer dimensions step over
  // whole R x C matrices; 0 for other buffers.
  int64_t swizzle_width = 0, swizzle_rows = 0;
};

// a ^ b for 0 <= a, b < 8, in arithmetic the analyzer bounds and every
// backend prints: bit by bit, the parity of the two bits' sum.
Expr xor3(const Expr& a, const Expr& b) {
  Expr r;
  for (int64_t bit = 1; bit < 8; bit *= 2) {
    const Expr w = make_const(a.dtype(), bit), two = make_const(a.dtype(), int64_t{2});
    const Expr parity = floormod(floordiv(a, w) + floordiv(b, w), two);
    r = r.defined() ? r + parity * w : parity;
  }
  return r;
}

// The type flat indices into a buffer are computed in: i32 while the whole
// buffer, storage_align padding included, holds fewer than 2^31 elements,
// else i64 (and i64 whenever an extent is not a constant). Per-dimension
// indices stay in their own type; only their flat combination is widened.
DType index_type_for(const std::vector<Expr>& extents, const std::vector<RealizeNode::Align>& align) {
  constexpr int64_t kLimit = std::numeric_limits<int32_t>::max();
  int64_t size = 1;
  for (size_t i = extents.size(); i-- > 0;) {
    const int64_t* e = as_const_int(extents[i]);
    if (!e || *e < 0) return DType::i64();
    if (i < align.size() && align[i].factor != 0) size += align[i].factor;  // an upper bound of the padding
    if (*e != 0 && size > kLimit / *e) return DType::i64();
    size *= *e;
  }
  return size > kLimit ? DType::i64() : DType::i32();
}

Expr widen(const Expr& e, DType t) { return e.dtype().bits < t.bits ? cast(t, e) : e; }

// Row-major strides over `extents`, padded by storage_align, in `index_type`;
// `*size` gets the number of elements to allocate.
std::vector<Expr> make_strides(const std::vector<Expr>& extents, const std::vector<RealizeNode::Align>& align,
                               DType index_type, Expr* size) {
  std::vector<Expr> strides(extents.size());
  Expr stride = make_const(index_type, int64_t{1});
  for (size_t i = extents.size(); i-- > 0;) {
    if (i < align.size() && align[i].factor != 0) {
      int64_t f = align[i].factor, o = align[i].offset;
      internal_assert(f > 0 && o >= 0 && o < f) << "storage_align factor " << f << " offset " << o;
      Expr fe = make_const(stride.dtype(), f), oe = make_const(stride.dtype(), o);
      // stride += (f + o - stride % f) % f, which makes stride % f == o.
      stride = stride + floormod(fe + oe - floormod(stride, fe), fe);
    }
    strides[i] = stride;
    stride = stride * widen(extents[i], index_type);
  }
  *size = stride;
  return strides;
}

const char* scope_suffix(MemScope s) {
  switch (s) {
    case MemScope::kGlobal:
      return "";
    case MemScope::kShared:
      return ".shared";
    case MemScope::kLocal:
      return ".local";
    case MemScope::kWarp:
      return ".warp";
  }
  return "";
}

// What the intrinsic's operand `operand` asks of the buffer bound to it
// (IntrinRequirement): a user error in schedule terms otherwise.
void check_intrin_requirement(const TensorIntrinDecl& in, size_t operand, const Tensor& t, const IntrinBuffer& b) {
  const IntrinRequirement& req = in.requirements.at(operand);
  const std::string declared = operand < in.inputs.size() ? in.inputs[operand].name() : in.output.name();
  const std::string who = "tensorize with '" + in.name + "': '" + t.name() + "', bound to the intrinsic's '" +
                          declared + "',";
  user_check(!req.scope || *req.scope == b.scope)
      << who << " lives in " << mem_scope_name(b.scope) << " memory; the intrinsic needs it in "
      << mem_scope_name(*req.scope) << " memory (cache it there first)";
  Analyzer ana;
  if (req.offset_factor > 1) {
    const ModularSet m = ana.modular_set(ana.simplify(b.offset));
    user_check(m.coeff % req.offset_factor == 0 && m.base % req.offset_factor == 0)
        << who << " starts at element `" << to_string(ana.simplify(b.offset))
        << "`, which kiln cannot prove is a multiple of " << req.offset_factor
        << " (the alignment the intrinsic needs): tile so that each call starts at a multiple";
  }
  if (b.swizzle_bytes > 0) {
    user_check(req.core > 0 && req.swizzle_ok)
        << who << " is stored swizzled (storage_swizzle), which the intrinsic does not read; drop storage_swizzle on "
        << "that stage";
    const int64_t chunk = 16 / b.dtype.bytes(), width = b.swizzle_bytes / b.dtype.bytes();
    const ModularSet m = ana.modular_set(ana.simplify(b.offset));
    user_check(m.coeff % chunk == 0 && m.base % chunk == 0)
        << who << " starts at element `" << to_string(ana.simplify(b.offset)) << "` of its swizzled layout, which "
        << "kiln cannot prove is the start of a 16-byte chunk";
    // The intrinsic's two dimensions are the buffer's last two, in order:
    // rows of a strip, then along them.
    const int64_t* rows = b.strides.size() == 2 ? as_const_int(ana.simplify(b.strides[0])) : nullptr;
    const int64_t* along = b.strides.size() == 2 ? as_const_int(ana.simplify(b.strides[1])) : nullptr;
    user_check(rows && along && *rows == width && *along == 1)
        << who << " is stored swizzled (storage_swizzle) and the intrinsic's dimensions are not its last two in "
        << "order; tensorize so that they are (its rows, then along them)";
    return;
  }
  // Other intrinsics address their operands with one stride per
  // dimension, which a tiled buffer does not have past one tile.
  if (req.core == 0 && !b.tile.empty()) {
    bool within = true;
    for (size_t d = 0; d < b.shape.size(); ++d) within = within && b.shape[d] <= b.tile[d];
    user_check(within) << who << " is stored in tiles (storage_tile), which the intrinsic does not read as such; "
                       << "its data spans more than one tile (drop storage_tile on that stage)";
  }
  if (req.core > 0) {
    bool tiled = b.tile.size() == b.shape.size();
    for (size_t d = 0; tiled && d < b.shape.size(); ++d) tiled = b.tile[d] == req.core || b.shape[d] == 1;
    user_check(tiled) << who << " is not stored in tiles of " << req.core << " x " << req.core
                      << " elements; the intrinsic reads it as such tiles (storage_tile(" << req.core << ", "
                      << req.core << ") on its stage)";
    const ModularSet m = ana.modular_set(ana.simplify(b.offset));
    const int64_t block = req.core * req.core;
    user_check(m.coeff % block == 0 && m.base % block == 0)
        << who << " starts at element `" << to_string(ana.simplify(b.offset)) << "`, which kiln cannot prove is "
        << "the corner of one of its " << req.core << " x " << req.core << " tiles";
  }
  auto stride = [&](size_t d) -> int64_t {
    int64_t v = -1;
    return as_const_int(ana.simplify(b.strides[d]), &v) ? v : -1;
  };
  std::string strides;
  for (size_t d = 0; d < b.strides.size(); ++d) strides += (d ? ", " : "") + to_string(ana.simplify(b.strides[d]));
  if (req.stride_factor > 1)
    for (size_t d = 0; d < b.strides.size(); ++d) {
      const int64_t v = stride(d);
      if (v == 1 && d + 1 == b.strides.size()) continue;
      user_check(v >= 0 && v % req.stride_factor == 0)
          << who << " is accessed with strides (" << strides << ") in the intrinsic's dimensions; the intrinsic "
          << "needs every row stride to be a multiple of " << req.stride_factor
          << " elements (aligned rows): pad the rows with storage_align to a multiple of it";
    }
  if (req.unit_inner && !b.shape.empty() && b.shape.back() > 1)
    user_check(stride(b.shape.size() - 1) == 1)
        << who << " is accessed with strides (" << strides
        << ") in the intrinsic's dimensions; the intrinsic needs the innermost one to be 1";
  const size_t dense_dims =
      req.dense ? b.shape.size() : std::min(b.shape.size(), static_cast<size_t>(std::max(0, req.dense_inner)));
  if (dense_dims > 0) {
    int64_t want = 1;
    std::string dense;
    bool ok = true;
    for (size_t d = b.shape.size(); d-- > b.shape.size() - dense_dims;) {
      ok = ok && (b.shape[d] == 1 || stride(d) == want);
      dense = std::to_string(want) + (dense.empty() ? "" : ", ") + dense;
      want *= b.shape[d];
    }
    const std::string needs =
        req.dense ? "one dense block" : "its innermost " + std::to_string(dense_dims) + " to be contiguous rows";
    user_check(ok) << who << " is accessed with strides (" << strides << ") in the intrinsic's dimensions; the "
                   << "intrinsic needs " << needs << ", strides (" << dense
                   << "): pack or cache the data in that layout first";
  }
}

class Flattener : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  Stmt mutate_AttrStmt(const AttrStmtNode* op, const Stmt& self) override {
    auto* tn = op->node.defined() && op->node->kind() == NodeKind::Tensor
                   ? static_cast<const TensorNode*>(op->node.get())
                   : nullptr;
    if (op->key == kBufferBind) {
      internal_assert(tn) << "buffer_bind attribute must name a tensor";
      auto* h = op->value.as<VarNode>();
      internal_assert(h && h->dtype.is_handle()) << "buffer_bind of '" << tn->op->name << "' must bind a handle Var";
      Tensor t{Ref<TensorNode>(tn)};
      FlatBuffer fb;
      fb.handle = Var(h);
      fb.dtype = t.dtype();
      std::vector<Expr> shape = t.shape();
      Expr size;
      fb.index_type = index_type_for(shape, {});
      fb.strides = make_strides(shape, {}, fb.index_type, &size);
      fb.mins.assign(shape.size(), make_zero(fb.index_type));
      return with_buffer(tn->op.get(), fb, op->body);
    }
    if (tn) {
      auto it = buffers_.find(tn->op.get());
      if (it != buffers_.end()) {
        Stmt body = mutate(op->body);
        if (!body.defined()) return body;
        return AttrStmtNode::make(it->second.handle, op->key, mutate(op->value), body);
      }
    }
    return IRMutator::mutate_AttrStmt(op, self);
  }

  Stmt mutate_Realize(const RealizeNode* op, const Stmt&) override {
    Tensor t{op->tensor};
    std::vector<Expr> extents;
    FlatBuffer fb;
    for (auto& r : op->bounds) {
      fb.mins.push_back(mutate(r.min));
      extents.push_back(mutate(r.extent));
    }
    internal_assert(static_cast<int>(extents.size()) == t.ndim())
        << "realize of '" << t.name() << "' has " << extents.size() << " bounds for " << t.ndim() << " dimensions";
    Expr size;
    fb.index_type = index_type_for(extents, op->align);
    fb.strides = make_strides(extents, op->align, fb.index_type, &size);
    if (op->scope == MemScope::kWarp) {
      user_check(op->align.empty() || !op->align.back().swizzle)
          << "'" << t.name() << "' is in warp scope (tensor-core fragments, laid out by the intrinsics); "
          << "storage_swizzle is for shared and global buffers";
      tile_warp_buffer(t, op->body, extents, &fb, &size);
    } else if (!op->align.empty() && op->align.back().swizzle) {
      swizzle(t, op->align, extents, &fb, &size);
    } else if (std::any_of(op->align.begin(), op->align.end(), [](const RealizeNode::Align& a) { return a.tile; })) {
      std::vector<int64_t> tile;
      for (const RealizeNode::Align& a : op->align) {
        user_check(a.factor == 0) << "'" << t.name() << "' has both storage_tile and storage_align; its tiles are "
                                  << "contiguous blocks, which leave no rows to pad";
        tile.push_back(std::max<int64_t>(1, a.tile));
      }
      lay_out_in_tiles(t, tile, extents, &fb, &size,
                       {true, "storage_tile", "tiles", "pick tiles that divide the buffer's extents"});
    }
    fb.dtype = t.dtype();
    std::string name = t.name(), suffix = scope_suffix(op->scope);
    bool has_suffix =
        name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    fb.handle = Var::handle(has_suffix ? name : name + suffix, fb.dtype);
    fb.scope = op->scope;
    Stmt body = with_buffer(t->op.get(), fb, op->body);
    if (!body.defined()) return body;
    return AllocateNode::make(fb.handle, fb.dtype, {size}, op->scope, body);
  }

  Stmt mutate_Provide(const ProvideNode* op, const Stmt&) override {
    const FlatBuffer& fb = lookup(op->tensor, "written");
    user_check(fb.scope != MemScope::kWarp) << warp_only(op->tensor, "written");
    Expr value = mutate(op->value);
    return StoreNode::make(fb.handle, value, flat_index(fb, op->indices));
  }

  Expr mutate_TensorRead(const TensorReadNode* op, const Expr&) override {
    const FlatBuffer& fb = lookup(op->tensor, "read");
    user_check(fb.scope != MemScope::kWarp) << warp_only(op->tensor, "read");
    return LoadNode::make(fb.dtype, fb.handle, flat_index(fb, op->indices));
  }

  // The intrinsic's lowering of the phase, on its operands' flat buffers.
  Stmt mutate_Tensorize(const TensorizeNode* op, const Stmt&) override {
    const TensorIntrinDecl& in = *op->intrin;
    std::vector<IntrinBuffer> operands;
    for (size_t k = 0; k < op->regions.size(); ++k) {
      const TensorizeNode::Region& r = op->regions[k];
      const size_t operand = op->phase == IntrinPhase::kReset ? in.inputs.size() : k;
      const FlatBuffer& fb = lookup(r.tensor, "used by a tensor intrinsic");
      IntrinBuffer b;
      b.data = fb.handle;
      b.dtype = fb.dtype;
      b.scope = fb.scope;
      b.offset = flat_index(fb, r.base, /*unswizzled=*/true);
      b.shape = in.shape_of(operand);
      if (fb.swizzle_width > 0) {
        b.swizzle_bytes = fb.swizzle_width * fb.dtype.bytes();
        b.swizzle_strip = make_const(fb.index_type, fb.swizzle_rows * fb.swizzle_width);
      }
      const std::vector<Expr>& strides = fb.tile.empty() ? fb.strides : fb.tile_strides;
      for (int d : r.dims) b.strides.push_back(d < 0 ? make_zero(fb.index_type) : strides[static_cast<size_t>(d)]);
      if (!fb.tile.empty() && fb.scope != MemScope::kWarp)
        for (int d : r.dims) {
          b.tile.push_back(d < 0 ? 1 : fb.tile[static_cast<size_t>(d)]);
          b.tile_steps.push_back(d < 0 ? make_zero(fb.index_type) : fb.strides[static_cast<size_t>(d)]);
        }
      check_intrin_requirement(in, operand, Tensor(r.tensor), b);
      operands.push_back(std::move(b));
    }
    return in.lower(op->phase, operands);
  }

 private:
  // Mutates body with `op` mapped to fb, restoring any outer mapping after.
  Stmt with_buffer(const OperationNode* op, const FlatBuffer& fb, const Stmt& body) {
    auto it = buffers_.find(op);
    bool had = it != buffers_.end();
    FlatBuffer saved = had ? it->second : FlatBuffer();
    buffers_[op] = fb;
    Stmt r = mutate(body);
    if (had)
      buffers_[op] = saved;
    else
      buffers_.erase(op);
    return r;
  }

  const FlatBuffer& lookup(const Ref<TensorNode>& t, const char* what) const {
    auto it = buffers_.find(t->op.get());
    internal_assert(it != buffers_.end()) << "storage_flatten: tensor '" << t->op->name << "' is " << what
                                          << " but neither realized nor bound as an argument";
    return it->second;
  }

  // The element's flat index; of a swizzled buffer, with `unswizzled`, its
  // place before the swizzle (FlatBuffer::swizzle_width).
  Expr flat_index(const FlatBuffer& fb, const std::vector<Expr>& indices, bool unswizzled = false) {
    internal_assert(indices.size() == fb.strides.size()) << "index arity mismatch";
    Expr flat;
    const size_t n = indices.size();
    for (size_t d = 0; d < n; ++d) {
      Expr i = widen(mutate(indices[d]), fb.index_type) - widen(fb.mins[d], fb.index_type);
      if (fb.swizzle_width > 0 && d + 2 == n) {
        const Expr col = widen(mutate(indices[d + 1]), fb.index_type) - widen(fb.mins[d + 1], fb.index_type);
        const Expr term = swizzled_index(fb, i, col, unswizzled);
        return flat.defined() ? flat + term : term;
      }
      Expr term = i * fb.strides[d];
      if (!fb.tile.empty()) {
        const Expr t = make_const(fb.index_type, fb.tile[d]);
        term = floordiv(i, t) * fb.strides[d] + floormod(i, t) * fb.tile_strides[d];
      }
      flat = flat.defined() ? flat + term : term;
    }
    if (!flat.defined()) flat = make_zero(fb.index_type);  // a 0-d tensor
    return flat;
  }

  // Row `row`, column `col` of a swizzled buffer's last two dimensions: in
  // strip col / W, row `row` of it, 16-byte chunk (col % W) / chunk, XORed
  // with row % 8 unless `unswizzled`. Written over the chunk q = col / chunk
  // so that a vector of a chunk's elements stays one run.
  static Expr swizzled_index(const FlatBuffer& fb, const Expr& row, const Expr& col, bool unswizzled) {
    const DType t = fb.index_type;
    const int64_t chunk = 16 / fb.dtype.bytes(), per_row = fb.swizzle_width / chunk;
    auto c = [&](int64_t v) { return make_const(t, v); };
    const Expr q = floordiv(col, c(chunk));
    const Expr in_row = floormod(q, c(per_row));
    const Expr moved = unswizzled ? in_row : xor3(in_row, floormod(row, c(per_row)));
    return floordiv(q, c(per_row)) * c(fb.swizzle_rows * fb.swizzle_width) + row * c(fb.swizzle_width) +
           moved * c(chunk) + floormod(col, c(chunk));
  }

  // Lays a swizzled buffer out (FlatBuffer::swizzle_width): its last two
  // extents must be constant, the rows a multiple of 8 and the columns of
  // a strip's 128 bytes.
  static void swizzle(const Tensor& t, const std::vector<RealizeNode::Align>& align, const std::vector<Expr>& extents,
                      FlatBuffer* fb, Expr* size) {
    for (const RealizeNode::Align& a : align)
      user_check(a.factor == 0 && a.tile == 0)
          << "'" << t.name() << "' has storage_swizzle and " << (a.factor ? "storage_align" : "storage_tile")
          << "; the swizzle places every element itself, so the buffer takes one layout only";
    const size_t n = extents.size();
    const int64_t bytes = align.back().swizzle, elem = t.dtype().bytes();
    internal_assert(bytes == 128 && n >= 2 && 16 % elem == 0) << "storage_swizzle of '" << t.name() << "'";
    const int64_t width = bytes / elem;
    int64_t rows = 0, cols = 0;
    user_check(as_const_int(extents[n - 2], &rows) && rows % 8 == 0)
        << "'" << t.name() << "' (storage_swizzle) spans " << extents[n - 2] << " rows, not a constant multiple of 8: "
        << "the swizzle permutes the chunks of each 8 rows";
    user_check(as_const_int(extents[n - 1], &cols) && cols % width == 0)
        << "'" << t.name() << "' (storage_swizzle) has rows of " << extents[n - 1] << " elements, not a constant "
        << "multiple of " << width << " (128 bytes of " << t.dtype().str() << "): the swizzle moves whole strips of "
        << "128-byte rows";
    std::vector<Expr> outer(extents.begin(), extents.end() - 2);
    outer.push_back(make_const(fb->index_type, rows * cols));
    fb->strides = make_strides(outer, {}, fb->index_type, size);
    fb->strides.pop_back();
    fb->strides.push_back(make_const(fb->index_type, width));  // within a strip (IntrinBuffer::strides)
    fb->strides.push_back(make_const(fb->index_type, int64_t{1}));
    fb->swizzle_width = width;
    fb->swizzle_rows = rows;
  }

  // Lays a warp-scope buffer out in tiles of the fragment the tensor
  // intrinsics using it declare (see FlatBuffer::tile).
  static void tile_warp_buffer(const Tensor& t, const Stmt& body, const std::vector<Expr>& extents, FlatBuffer* fb,
                               Expr* size) {
    std::vector<int64_t> tile;
    std::string first;
    post_order_visit(body, [&](const Ref<Object>& n) {
      if (n->kind() != NodeKind::Tensorize) return;
      auto* tz = static_cast<const TensorizeNode*>(n.get());
      for (size_t k = 0; k < tz->regions.size(); ++k) {
        const TensorizeNode::Region& r = tz->regions[k];
        if (r.tensor->op.get() != t->op.get()) continue;
        const size_t operand = tz->phase == IntrinPhase::kReset ? tz->intrin->inputs.size() : k;
        const std::vector<int64_t> shape = tz->intrin->shape_of(operand);
        // An operand is one fragment, or a row of fragments of the shape
        // its requirement names (wgmma's 16 x N accumulators).
        const std::vector<IntrinRequirement>& reqs = tz->intrin->requirements;
        const std::vector<int64_t>& frag =
            operand < reqs.size() && !reqs[operand].fragment.empty() ? reqs[operand].fragment : shape;
        std::vector<int64_t> mine(extents.size(), 1);
        for (size_t j = 0; j < r.dims.size(); ++j)
          if (r.dims[j] >= 0) mine[static_cast<size_t>(r.dims[j])] *= frag[j];
        if (tile.empty()) {
          tile = mine;
          first = tz->intrin->name;
        }
        user_check(tile == mine) << "'" << t.name() << "' is in warp scope, where each intrinsic call owns one "
                                 << "fragment, but '" << first << "' and '" << tz->intrin->name
                                 << "' use fragments of different shapes";
      }
    });
    user_check(!tile.empty()) << "'" << t.name() << "' is in warp scope (a tensor-core fragment) but no tensorized "
                              << "stage reads or writes it; warp scope is for tensor intrinsics' operands";
    int64_t elems = 1;
    for (int64_t e : tile) elems *= e;
    user_check(elems % 32 == 0) << "'" << t.name() << "' (warp scope) has fragments of " << elems
                                << " elements, which the 32 lanes of a warp cannot share evenly";
    lay_out_in_tiles(t, tile, extents, fb, size,
                     {false, "warp scope", "fragments", "tile the axes by the intrinsic's shape"});
  }

  // How lay_out_in_tiles orders the tiles, and names them in its message.
  struct TileOrder {
    bool column_major;  // of the last two dimensions: a column of tiles one after another
    const char* why;    // what tiles the buffer ("warp scope", "storage_tile")
    const char* tiles;  // what a tile is called ("fragments", "tiles")
    const char* hint;   // how to fix extents that are no multiple
  };

  // Stores fb in tiles of `tile` (see FlatBuffer::tile): the extents must
  // be constant multiples of it.
  static void lay_out_in_tiles(const Tensor& t, const std::vector<int64_t>& tile, const std::vector<Expr>& extents,
                               FlatBuffer* fb, Expr* size, const TileOrder& order) {
    std::vector<Expr> counts;
    int64_t elems = 1;
    for (size_t d = 0; d < extents.size(); ++d) {
      int64_t e = 0;
      user_check(as_const_int(extents[d], &e) && e % tile[d] == 0)
          << "'" << t.name() << "' (" << order.why << ") spans " << extents[d] << " elements along dimension " << d
          << ", not a whole number of its " << order.tiles << "' " << tile[d] << ": " << order.hint;
      counts.push_back(make_const(fb->index_type, e / tile[d]));
      elems *= tile[d];
    }
    const size_t n = counts.size();
    const bool swap = order.column_major && n >= 2;
    if (swap) std::swap(counts[n - 2], counts[n - 1]);
    Expr tiles_size;
    fb->strides = make_strides(counts, {}, fb->index_type, &tiles_size);
    if (swap) std::swap(fb->strides[n - 2], fb->strides[n - 1]);
    for (Expr& s : fb->strides) s = s * make_const(fb->index_type, elems);
    std::vector<Expr> tile_extents;
    for (int64_t e : tile) tile_extents.push_back(make_const(fb->index_type, e));
    Expr one_tile;
    fb->tile_strides = make_strides(tile_extents, {}, fb->index_type, &one_tile);
    fb->tile = tile;
    *size = tiles_size * make_const(fb->index_type, elems);
  }

  static std::string warp_only(const Ref<TensorNode>& t, const char* how) {
    return "'" + t->op->name + "' is in warp scope (a tensor-core fragment, spread over a warp's lanes) and is " +
           how + " element by element here; only tensor intrinsics may access it (tensorize the stage)";
  }

  std::unordered_map<const OperationNode*, FlatBuffer> buffers_;
};

}  // namespace

Stmt storage_flatten(const Stmt& s) {
  Stmt r = Flattener().mutate(s);
  return r.defined() ? r : make_no_op();
}

}  // namespace passes
}  // namespace kiln
