// The CUDA C printer: tensor instructions (mma, wgmma, asynchronous, bulk
// and tensor copies) and the warp-scope fragments they use (see
// cuda_kernel_printer.h).
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "codegen/cuda_c_spelling.h"
#include "codegen/cuda_kernel_printer.h"
#include "codegen/cuda_wgmma_prelude.h"
#include "compute/expr_ops.h"
#include "compute/hw_instructions.h"
#include "compute/simplify.h"

namespace kiln {

using cuda_c::is_narrow_float;

// A warp-scope buffer: each lane holds 1/32 of its fragments, as 16-bit
// patterns or f32 (codegen/cuda_mma_prelude.h), in registers.
void CudaKernelPrinter::warp_fragments(const AllocateNode* op) {
  const int64_t elems = *as_const_int(op->extents[0]);
  user_check(op->dtype == DType::f32() || is_narrow_float(op->dtype))
      << "warp-scope buffer '" << op->buffer->name << "' holds " << op->dtype.str()
      << "; tensor-core fragments hold f16, bf16 or f32";
  const bool again = !declared_.insert(op->buffer.node()).second;
  if (again) {
    line() << "{\n";
    ++indent_;
  }
  line() << "__align__(16) " << (op->dtype == DType::f32() ? "float" : "unsigned short") << " "
         << name_of(op->buffer.node()) << "[" << elems / 32 << "];\n";
  stmt(op->body);
  if (again) {
    --indent_;
    line() << "}\n";
  }
}

// A tensor-core instruction (compute/hw_instructions.h) as a call of the
// mma prelude, every operand checked against the instruction's scopes.
void CudaKernelPrinter::intrin_call(const TensorIntrinCallNode* op) {
  const HwInstruction& h = find_hw_instruction(op->intrin);
  user_check(h.backend == "cuda") << "instruction '" << op->intrin << "' is for the " << h.backend
                                  << " backend, not cuda";
  // An architecture-specific feature (sm_90a) exists on that arch only.
  const bool specific = h.feature.back() == 'a';
  user_check(specific ? limits_.arch == h.feature : limits_.sm_version >= gpu_limits_for_arch(h.feature).sm_version)
      << "instruction '" << op->intrin << "' needs " << h.feature << (specific ? "" : " or later") << "; the target is "
      << limits_.arch;
  const std::string problem = hw_call_problem(*op);
  user_check(problem.empty()) << problem;
  std::vector<std::string> ptr(op->operands.size()), base(op->operands.size());
  for (size_t k = 0; k < op->operands.size(); ++k) {
    const TensorIntrinCallNode::Operand& o = op->operands[k];
    const VarNode* b = o.buffer.node();
    const MemScope scope = warp_.count(b)          ? MemScope::kWarp
                           : shared_vars_.count(b) ? MemScope::kShared
                           : local_.count(b)       ? MemScope::kLocal
                                                   : MemScope::kGlobal;
    const HwOperand& want = h.operands[k];
    user_check(want.scope ? scope == *want.scope : scope != MemScope::kWarp && scope != MemScope::kLocal)
        << "'" << op->intrin << "' operand " << k << " (" << want.role << ") is '" << o.buffer->name << "' in "
        << mem_scope_name(scope) << " memory; it needs "
        << (want.scope ? mem_scope_name(*want.scope) : "shared or global") << " memory";
    // A fragment is 1/32 per lane: its offset, a multiple of the fragment
    // size (storage_flatten's tiles), divided by the 32 lanes.
    ptr[k] = scope == MemScope::kWarp ? "(" + name_of(b) + " + (" + expr(o.offset) + ") / 32)" : name_of(b);
    base[k] = name_of(b) + ", " + expr(o.offset) + ", " + expr(o.stride);
  }
  const std::string& n = op->intrin;
  auto has = [&](const char* part) { return n.find(part) != std::string::npos; };
  if (n.rfind(kCudaCpAsyncPrefix, 0) == 0) {
    const std::string bytes = n.substr(n.rfind('.') + 1);
    // A scalar, when there is one: copy where it holds, zeros elsewhere.
    line() << "kiln_cp_async<" << bytes << ">(" << name_of(op->operands[0].buffer.node()) << ", "
           << expr(op->operands[0].offset) << ", " << name_of(op->operands[1].buffer.node()) << " + ("
           << expr(op->operands[1].offset) << ")" << (op->scalars.empty() ? std::string() : ", " + expr(op->scalars[0]))
           << ");\n";
  } else if (n.rfind(kCudaBulkCopyPrefix, 0) == 0) {
    internal_assert(region_) << "a bulk copy sits in a warp-specialized pipeline's producer";
    const int64_t bytes = *as_const_int(op->operands[0].extent) * op->operands[0].buffer->pointee.bytes();
    line() << "kiln_bulk_copy(" << name_of(op->operands[0].buffer.node()) << ", " << expr(op->operands[0].offset)
           << ", " << name_of(op->operands[1].buffer.node()) << " + (" << expr(op->operands[1].offset) << "), " << bytes
           << ", " << region_->full << ", " << expr(op->scalars[0]) << ");\n";
  } else if (n.rfind(kCudaTensorCopyPrefix, 0) == 0) {
    internal_assert(region_) << "a tensor copy sits in a warp-specialized pipeline's producer";
    // The box's first element's coordinates along the map's dimensions
    // (compute/tensor_copy_box.h): (at / distance) % extent, the farthest
    // dimension's unwrapped.
    const CudaTensorMapParam& m = tensor_maps_->of(*op);
    std::ostringstream coords;
    for (const TensorCopyDim& d : m.view)
      coords << ", (int)(" << expr(simplify(tensor_copy_coordinate(op->operands[1].offset, d))) << ")";
    line() << "kiln_tensor_copy_" << m.spec.rank << "d(" << name_of(op->operands[0].buffer.node()) << ", "
           << expr(op->operands[0].offset) << ", " << m.name << coords.str() << ", " << region_->full << ", "
           << expr(op->scalars[0]) << ");\n";
  } else if (n.rfind(kCudaWgmmaPrefix, 0) == 0) {
    // The prelude's function of this width and type (cuda_wgmma_prelude.h).
    const std::vector<Expr>& sc = op->scalars;
    auto constant = [&](size_t k) { return std::to_string(*as_const_int(sc[k])); };
    const auto [width, input] = cuda_wgmma_shape(n);
    line() << cuda_wgmma_function(width, input) << "<" << constant(2) << ", " << constant(5) << ", " << constant(6)
           << ", " << constant(7) << ", " << (is_cuda_wgmma_async(n) ? 1 : 0) << ">(" << ptr[0] << ", "
           << name_of(op->operands[1].buffer.node()) << ", " << expr(op->operands[1].offset) << ", " << constant(0)
           << ", " << constant(1) << ", " << name_of(op->operands[2].buffer.node()) << ", "
           << expr(op->operands[2].offset) << ", " << constant(3) << ", " << constant(4) << ", " << constant(8)
           << ");\n";
  } else if (n == kCudaWgmmaCommitWait) {
    // The whole accumulator array, whose registers it fences.
    line() << "kiln_wgmma_commit_wait<" << *as_const_int(op->scalars[0]) << ">("
           << name_of(op->operands[0].buffer.node()) << ");\n";
  } else if (n == kCudaMmaZero) {
    line() << "kiln_mma_zero(" << ptr[0] << ");\n";
  } else if (n == kCudaMmaStore) {
    line() << "kiln_mma_store(" << base[0] << ", " << ptr[1] << ");\n";
  } else if (has(".load_a.")) {
    line() << "kiln_mma_load_a<" << (has(".km.") ? 1 : 0) << ">(" << ptr[0] << ", " << base[1] << ");\n";
  } else if (has(".load_b.")) {
    line() << "kiln_mma_load_b<" << (has(".nk.") ? 1 : 0) << ">(" << ptr[0] << ", " << base[1] << ");\n";
  } else {
    internal_assert(has(".m16n8k16.")) << "no CUDA emission for " << n;
    line() << "kiln_mma_" << (has("bf16") ? "bf16" : "f16") << "(" << ptr[0] << ", " << ptr[1] << ", " << ptr[2]
           << ");\n";
  }
}

}  // namespace kiln
