// Cast simplification for the simplifier (see simplify_cast.h).
#include "compute/simplify_cast.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "compute/analyzer.h"
#include "compute/expr_ops.h"

namespace kiln {

Expr simplify_cast(Analyzer* an, DType to, const Expr& v) {
  DType from = v.dtype();
  if (from == to) return v;
  if (auto* b = v.as<BroadcastNode>())
    return BroadcastNode::make(simplify_cast(an, to.element_of(), b->value), b->lanes);
  // Widening back what was narrowed: exact when the value fits the narrow
  // type (a fused i64 axis gives its i32 parts their values this way).
  if (auto* c = v.as<CastNode>(); c && c->value.dtype() == to && from.is_int() && to.is_int() && from.bits < to.bits) {
    ConstIntBound vb = an->const_int_bound(c->value), fb = type_bound(from.element_of());
    if (vb.min_value >= fb.min_value && vb.max_value <= fb.max_value) return c->value;
  }
  // Widening a ramp of indices (storage_flatten casts the indices of a
  // buffer of 2^31 elements or more to i64) keeps it a ramp when no lane
  // can wrap in the narrow type, so the access stays contiguous.
  if (auto* r = v.as<RampNode>(); r && from.is_int() && to.is_int() && to.bits > from.bits) {
    const int64_t* s = as_const_int(r->stride);
    ConstIntBound bb = an->const_int_bound(r->base), tb = type_bound(from.element_of());
    const bool finite = bb.min_value != ConstIntBound::kNegInf && bb.max_value != ConstIntBound::kPosInf;
    if (s && finite && *s >= INT32_MIN && *s <= INT32_MAX) {
      int64_t span = *s * (r->lanes - 1);  // at most 2^31 * 2^16: no int64 overflow
      if (bb.min_value + std::min<int64_t>(span, 0) >= tb.min_value &&
          bb.max_value + std::max<int64_t>(span, 0) <= tb.max_value)
        return RampNode::make(simplify_cast(an, to.element_of(), r->base), make_const(to.element_of(), *s), r->lanes);
    }
  }
  if (to.is_scalar()) {
    if (auto* i = v.as<IntImmNode>()) {
      bool u64_high = from.is_uint() && from.bits >= 64 && i->value < 0;
      if (to.is_int() || to.is_uint()) return make_const(to, wrap_to_type(to, i->value));
      if (!u64_high && to == DType::f32()) return make_const(to, static_cast<double>(static_cast<float>(i->value)));
      if (!u64_high && to == DType::f64()) return make_const(to, static_cast<double>(i->value));
    }
    // f16/bf16 immediates may hold more precision than their type: not folded.
    auto* f = v.as<FloatImmNode>();
    if (f && (from == DType::f32() || from == DType::f64())) {
      if (to == DType::f32()) return make_const(to, static_cast<double>(static_cast<float>(f->value)));
      if (to == DType::f64()) return make_const(to, f->value);
      if (to.is_bool()) return make_const(to, int64_t(f->value != 0));
      if (to.is_int() || to.is_uint()) {
        ConstIntBound tb = type_bound(to);
        double tv = std::trunc(f->value);
        // Only in-range values have a defined C conversion.
        if (std::isfinite(tv) && tv >= static_cast<double>(tb.min_value) && tv <= static_cast<double>(tb.max_value) &&
            std::fabs(tv) < 9.2e18)
          return make_const(to, static_cast<int64_t>(tv));
      }
    }
  }
  return CastNode::make(to, v);
}

}  // namespace kiln
