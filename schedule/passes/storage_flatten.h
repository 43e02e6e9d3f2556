// storage_flatten: multi-dimensional tensors -> flat buffers.
//
// Expects: the loop nest made by schedule_ops. Every intermediate tensor is
// materialized by a RealizeNode (bounds with constant extents; mins may use
// enclosing loop vars); the function arguments are announced by
// AttrStmt(node = TensorNode, key = "buffer_bind", value = handle Var) and
// are dense row-major over their full shape; ProvideNode / TensorReadNode
// index tensors in their full index space.
//
// Guarantees: no RealizeNode, ProvideNode, TensorReadNode or buffer_bind
// attribute remains.
//  - Realize(T) -> Allocate(handle "T" / "T.shared" / "T.local" by scope
//    (no second suffix when T's name already ends with it, as cache stages'
//    names do), T's dtype, one flat extent, scope). The layout is row-major over the
//    realized extents; storage_align (factor f, offset o) on dimension d pads
//    the stride of d so that stride % f == o (TVM semantics), and the
//    allocation covers the padded size.
//  - Provide/TensorRead -> Store/Load at sum_d (index_d - min_d) * stride_d,
//    where min_d is the realized region's min (0 for bound arguments).
//  - buffer_bind attributes are removed; their tensors use the bound handle.
//  - Any other AttrStmt whose node is a flattened tensor (e.g.
//    "double_buffer") now names the tensor's handle Var instead.
// A read or write of a tensor that is neither realized nor bound is an
// internal error.
#pragma once

#include "compute/stmt.h"

namespace kiln {
namespace passes {

constexpr const char* kBufferBind = "buffer_bind";

Stmt storage_flatten(const Stmt& s);

}  // namespace passes
}  // namespace kiln
