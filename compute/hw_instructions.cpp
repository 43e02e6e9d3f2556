#include "compute/hw_instructions.h"

#include "base/error.h"

namespace kiln {

const std::vector<HwInstruction>& hw_instructions() {
  static const std::vector<HwInstruction> list = {
      {"x86.vpdpbusd.512",
       "llvm",
       "avx512vnni",
       {{"acc", DType::i32(), 16, true}, {"a", DType::u8(), 4, false}, {"b", DType::i8(), 64, false}},
       "acc[i] += a[0]*b[4i] + a[1]*b[4i+1] + a[2]*b[4i+2] + a[3]*b[4i+3] for i < 16, in i32 (wrapping): "
       "the 4 unsigned bytes of a against each lane's 4 signed bytes of b (AVX512-VNNI vpdpbusd, a broadcast)"},
      {"x86.vdpbf16ps.512",
       "llvm",
       "avx512bf16",
       {{"acc", DType::f32(), 16, true}, {"a", DType::bf16(), 2, false}, {"b", DType::bf16(), 32, false}},
       "acc[i] = (acc[i] + a[1]*b[2i+1]) + a[0]*b[2i] for i < 16: the products exact in f32, each sum rounded to "
       "nearest even with subnormal inputs and results flushed to zero (AVX512-BF16 vdpbf16ps, a broadcast)"},
  };
  return list;
}

const HwInstruction& find_hw_instruction(const std::string& name) {
  for (const HwInstruction& h : hw_instructions())
    if (h.name == name) return h;
  std::string known;
  for (const HwInstruction& h : hw_instructions()) known += (known.empty() ? "" : ", ") + h.name;
  user_error() << "unknown hardware instruction '" << name << "' (kiln knows " << known << ")";
  return hw_instructions().front();
}

std::string hw_call_problem(const TensorIntrinCallNode& call) {
  const HwInstruction* h = nullptr;
  for (const HwInstruction& i : hw_instructions())
    if (i.name == call.intrin) h = &i;
  if (!h) return "'" + call.intrin + "' is not a hardware instruction kiln knows";
  if (call.operands.size() != h->operands.size())
    return call.intrin + " takes " + std::to_string(h->operands.size()) + " operands, the call passes " +
           std::to_string(call.operands.size());
  for (size_t k = 0; k < h->operands.size(); ++k) {
    const HwOperand& want = h->operands[k];
    const TensorIntrinCallNode::Operand& o = call.operands[k];
    const std::string which = call.intrin + " operand " + std::to_string(k) + " (" + want.role + ")";
    if (!o.buffer.defined() || !o.buffer.dtype().is_handle()) return which + " is not a buffer";
    if (o.buffer->pointee != want.dtype)
      return which + " points into '" + o.buffer->name + "' of " + o.buffer->pointee.str() + ", it needs " +
             want.dtype.str();
    const int64_t* e = as_const_int(o.extent);
    if (!e || *e != want.extent)
      return which + " covers " + (e ? std::to_string(*e) : std::string("a non-constant number of")) +
             " elements, it needs " + std::to_string(want.extent);
  }
  return "";
}

}  // namespace kiln
