#include "schedule/passes/storage_flatten.h"

#include <limits>
#include <unordered_map>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/ir_functor.h"
#include "compute/tensor.h"
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
};

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
  }
  return "";
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
    fb.dtype = t.dtype();
    std::string name = t.name(), suffix = scope_suffix(op->scope);
    bool has_suffix =
        name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    fb.handle = Var::handle(has_suffix ? name : name + suffix, fb.dtype);
    Stmt body = with_buffer(t->op.get(), fb, op->body);
    if (!body.defined()) return body;
    return AllocateNode::make(fb.handle, fb.dtype, {size}, op->scope, body);
  }

  Stmt mutate_Provide(const ProvideNode* op, const Stmt&) override {
    const FlatBuffer& fb = lookup(op->tensor, "written");
    Expr value = mutate(op->value);
    return StoreNode::make(fb.handle, value, flat_index(fb, op->indices));
  }

  Expr mutate_TensorRead(const TensorReadNode* op, const Expr&) override {
    const FlatBuffer& fb = lookup(op->tensor, "read");
    return LoadNode::make(fb.dtype, fb.handle, flat_index(fb, op->indices));
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

  Expr flat_index(const FlatBuffer& fb, const std::vector<Expr>& indices) {
    internal_assert(indices.size() == fb.strides.size()) << "index arity mismatch";
    Expr flat;
    for (size_t d = 0; d < indices.size(); ++d) {
      Expr term = (widen(mutate(indices[d]), fb.index_type) - widen(fb.mins[d], fb.index_type)) * fb.strides[d];
      flat = flat.defined() ? flat + term : term;
    }
    if (!flat.defined()) flat = make_zero(fb.index_type);  // a 0-d tensor
    return flat;
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
