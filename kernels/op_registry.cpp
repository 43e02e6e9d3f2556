#include "kernels/op_registry.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "base/error.h"
#include "kernels/batch_matmul.h"
#include "kernels/conv2d.h"
#include "kernels/conv2d_nchwc.h"
#include "kernels/conv2d_winograd_nchwc.h"
#include "kernels/conv2d_nhwc.h"
#include "kernels/depthwise_conv2d.h"
#include "kernels/depthwise_conv2d_nchwc.h"
#include "kernels/dwsep_nchwc.h"
#include "kernels/dense.h"
#include "kernels/elemwise.h"
#include "kernels/layer_norm.h"
#include "kernels/matmul.h"
#include "kernels/matmul_packed_b.h"
#include "kernels/pool2d.h"
#include "kernels/pool2d_nchwc.h"
#include "kernels/qconv2d_nchwc.h"
#include "kernels/conv2d_nchwc_bf16.h"
#include "kernels/qgemm.h"
#include "kernels/softmax.h"
#include "kernels/winograd_weight_nchwc.h"

namespace kiln {

std::vector<Tensor> OpInstance::args() const {
  std::vector<Tensor> a = inputs;
  a.insert(a.end(), outputs.begin(), outputs.end());
  return a;
}

const std::vector<OpDef>& op_registry() {
  // One line per op family (kiln ops lists them in this order).
  static const std::vector<OpDef> ops = {
      matmul_op_def(),
      conv2d_op_def(),
      conv2d_nhwc_op_def(),
      conv2d_nchwc_op_def(),
      qconv2d_nchwc_op_def(), conv2d_nchwc_bf16_op_def(),
      conv2d_winograd_nchwc_op_def(), winograd_weight_nchwc_op_def(),
      conv2d_winograd_nhwc_op_def(), winograd_weight_nhwc_op_def(),
      depthwise_conv2d_op_def(),
      depthwise_conv2d_nchwc_op_def(),
      dwsep_nchwc_op_def(),
      max_pool2d_op_def(), avg_pool2d_op_def(),
      max_pool2d_nchwc_op_def(), avg_pool2d_nchwc_op_def(), global_avg_pool2d_nchwc_op_def(),
      batch_matmul_op_def(),
      dense_op_def(),
      qmatmul_op_def(), qdense_op_def(),
      matmul_packed_b_op_def(), qmatmul_packed_b_op_def(), pack_matmul_b_op_def(),
      softmax_op_def(),
      layer_norm_op_def(),
      elemwise_op_def(),
  };
  return ops;
}

ScheduledOp OpDef::default_schedule(const OpInstance& op, const CpuInfo& cpu) const {
  if (!define_space) {
    internal_assert(hand_schedule) << "op " << name << " has neither a schedule template nor a hand schedule";
    return hand_schedule(op, cpu);
  }
  auto space = define_space(op, cpu);
  return apply_config(op, default_config(op, cpu, *space));
}

const OpDef& find_op(const std::string& name) {
  for (auto& op : op_registry())
    if (op.name == name) return op;
  std::ostringstream known;
  for (auto& op : op_registry()) known << (&op == &op_registry().front() ? "" : ", ") << op.name;
  user_error() << "unknown op '" << name << "' (known ops: " << known.str() << ")";
}

namespace {

int64_t parse_int(const Workload& w, const OpParam& p, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  user_check(!v.empty() && end && *end == '\0' && errno == 0)
      << "workload '" << w.text << "': " << p.name << "='" << v << "' is not an integer";
  user_check(x >= p.min_value) << "workload '" << w.text << "': " << p.name << "=" << x << " must be at least "
                               << p.min_value;
  user_check(x <= (int64_t{1} << 30)) << "workload '" << w.text << "': " << p.name << "=" << x << " is too large";
  return x;
}

// Every tensor of the op must fit a 48-bit address space (256 TiB), which
// also keeps every element count and flat index far inside int64.
void check_tensor_sizes(const Workload& w, const OpInstance& inst) {
  constexpr int64_t kMaxBytes = int64_t{1} << 48;
  std::vector<Tensor> tensors = inst.inputs;
  tensors.insert(tensors.end(), inst.outputs.begin(), inst.outputs.end());
  for (auto& [name, t] : inst.parts) tensors.push_back(t);
  for (const Tensor& t : tensors) {
    int64_t bytes = t.dtype().bytes();
    std::ostringstream shape;
    for (const Expr& e : t.shape()) {
      const int64_t* n = as_const_int(e);
      internal_assert(n) << "tensor '" << t.name() << "' of op " << inst.op << " has a non-constant shape";
      shape << (shape.tellp() > 0 ? ", " : "") << *n;
      bytes = (*n != 0 && bytes > kMaxBytes / *n) ? kMaxBytes + 1 : bytes * *n;
    }
    user_check(bytes <= kMaxBytes) << "workload '" << w.text << "': tensor " << t.name() << " [" << shape.str()
                                   << "] of " << t.dtype().str()
                                   << " would take more than 256 TiB; kiln's tensors are limited to 2^48 bytes";
  }
}

}  // namespace

OpInstance build_workload(const Workload& w) {
  const OpDef& def = find_op(w.op);
  for (auto& [name, value] : w.params) {
    bool known = false;
    for (auto& p : def.params) known |= p.name == name;
    if (!known) {
      std::ostringstream names;
      for (auto& p : def.params) names << (&p == &def.params.front() ? "" : ", ") << p.name;
      user_error() << "workload '" << w.text << "': " << def.name << " has no parameter '" << name
                   << "' (parameters: " << names.str() << ")";
    }
  }
  std::map<std::string, int64_t> ints;
  DType dtype = DType::f32();
  std::ostringstream canon;
  canon << def.name << ":";
  bool first = true;
  for (auto& p : def.params) {
    const std::string* v = w.find(p.name);
    std::string value = v ? *v : p.default_value;
    user_check(!value.empty()) << "workload '" << w.text << "': missing parameter " << p.name << " (" << p.meaning
                               << ")";
    if (p.kind == OpParam::kDType) {
      dtype = parse_dtype(value);
      value = dtype.str();
    } else {
      OpParam q = p;
      if (p.kind == OpParam::kFlag) q.min_value = 0;
      int64_t x = parse_int(w, q, value);
      user_check(p.kind != OpParam::kFlag || x <= 1)
          << "workload '" << w.text << "': " << p.name << " is a flag and must be 0 or 1, got " << x;
      ints[p.name] = x;
      value = std::to_string(x);
      if (p.omit_when_default && !p.default_value.empty() && x == std::stoll(p.default_value)) continue;
    }
    canon << (first ? "" : ",") << p.name << "=" << value;
    first = false;
  }
  OpInstance inst = def.build(ints, dtype);
  inst.op = def.name;
  inst.ints = ints;
  inst.dtype = dtype;
  inst.canonical = canon.str();
  check_tensor_sizes(w, inst);
  return inst;
}

OpInstance build_workload(const std::string& text) { return build_workload(Workload::parse(text)); }

}  // namespace kiln
