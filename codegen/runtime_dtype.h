// Conversions between the compiler's DType and the runtime's rt::DataType
// (runtime/ cannot see compute/, so codegen bridges the two).
#pragma once

#include "compute/dtype.h"
#include "runtime/data_type.h"

namespace kiln {

// A scalar, non-handle DType as a runtime type; anything else is a user error.
rt::DataType to_runtime_dtype(DType t);
DType from_runtime_dtype(rt::DataType t);

}  // namespace kiln
