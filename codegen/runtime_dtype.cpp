// DType <-> rt::DataType (see runtime_dtype.h). Both number their codes
// alike: int, uint, float, bfloat.
#include "codegen/runtime_dtype.h"

#include "base/error.h"

namespace kiln {

rt::DataType to_runtime_dtype(DType t) {
  user_check(t.is_scalar()) << "a runtime buffer holds scalars, not " << t.str();
  user_check(!t.is_handle()) << "a runtime buffer cannot hold handles";
  static_assert(static_cast<int>(DType::kInt) == static_cast<int>(rt::DataType::kInt) &&
                    static_cast<int>(DType::kUInt) == static_cast<int>(rt::DataType::kUInt) &&
                    static_cast<int>(DType::kFloat) == static_cast<int>(rt::DataType::kFloat) &&
                    static_cast<int>(DType::kBFloat) == static_cast<int>(rt::DataType::kBFloat),
                "DType and rt::DataType codes must agree");
  rt::DataType r(static_cast<rt::DataType::Code>(t.code), t.bits);
  user_check(r.is_supported()) << "the runtime has no buffers of type " << t.str();
  return r;
}

DType from_runtime_dtype(rt::DataType t) { return DType(static_cast<DType::Code>(t.code), t.bits); }

}  // namespace kiln
