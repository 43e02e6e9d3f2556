#include "kernels/activation.h"

#include "base/error.h"
#include "compute/expr_ops.h"

namespace kiln {

namespace {

constexpr Activation kFlagged[] = {Activation::kRelu, Activation::kRelu6, Activation::kHardSwish,
                                   Activation::kHardSigmoid};

int64_t flag(const std::map<std::string, int64_t>& ints, const char* name) {
  auto it = ints.find(name);
  return it == ints.end() ? 0 : it->second;
}

Expr relu6(const Expr& v) { return min(max(v, make_zero(v.dtype())), make_const(v.dtype(), int64_t{6})); }

}  // namespace

const char* activation_flag(Activation a) {
  switch (a) {
    case Activation::kNone:
      return "";
    case Activation::kRelu:
      return "relu";
    case Activation::kRelu6:
      return "relu6";
    case Activation::kHardSwish:
      return "hswish";
    case Activation::kHardSigmoid:
      return "hsigmoid";
  }
  return "";
}

Activation activation_from_flags(const std::string& op, const std::map<std::string, int64_t>& ints, DType dtype,
                                 const std::string& prefix) {
  Activation found = Activation::kNone;
  for (Activation a : kFlagged) {
    if (flag(ints, (prefix + activation_flag(a)).c_str()) == 0) continue;
    user_check(found == Activation::kNone) << op << ": " << prefix << activation_flag(found) << " and " << prefix
                                           << activation_flag(a) << " are exclusive activations: set at most one of them";
    found = a;
  }
  user_check(dtype.is_float() || (found != Activation::kHardSwish && found != Activation::kHardSigmoid))
      << op << ": " << prefix << activation_flag(found) << " needs a floating-point dtype, not " << dtype.str();
  return found;
}

Activation activation_of(const std::map<std::string, int64_t>& ints, const std::string& prefix) {
  for (Activation a : kFlagged)
    if (flag(ints, (prefix + activation_flag(a)).c_str()) != 0) return a;
  return Activation::kNone;
}

void set_activation_flags(Activation a, std::map<std::string, int64_t>* ints) {
  for (Activation f : kFlagged) (*ints)[activation_flag(f)] = a == f ? 1 : 0;
}

Expr apply_activation(Expr v, Activation a) {
  const DType t = v.dtype();
  switch (a) {
    case Activation::kNone:
      return v;
    case Activation::kRelu:
      return max(v, make_zero(t));
    case Activation::kRelu6:
      return relu6(v);
    case Activation::kHardSwish:
      return v * relu6(v + make_const(t, 3.0)) / make_const(t, 6.0);
    case Activation::kHardSigmoid:
      return relu6(v + make_const(t, 3.0)) / make_const(t, 6.0);
  }
  return v;
}

}  // namespace kiln
