// The order of a convolution's register tile: its output-channel blocks run
// innermost of the unrolled loops (tile_accumulator's channels_axis), so
// that consecutive updates of the accumulators read the same input value,
// which is broadcast once into one register. With the blocks outside, every
// input value of a block's row stays live until the last block uses it; a
// tile of 2 blocks x 14 columns then needed 44 vector registers and spilled.
// Checked on the lowered IR of the templates that take the rule:
// conv2d_nchwc (fp32), qconv2d_nchwc (VNNI calls) and the fused
// depthwise-separable pointwise. (The Winograd GEMM keeps its blocks
// outside: its tiles are narrow, and blocks innermost measured slower.)
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "compute/ir_functor.h"
#include "compute/printer.h"
#include "kernels/op_registry.h"
#include "schedule/lower.h"
#include "support/quantized_check.h"
#include "support/template_check.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

// In program order, the index of `input` each accumulator update reads:
// stores into a local buffer named *acc*, and tensor intrinsic calls (their
// operand on `input`).
std::vector<std::string> input_reads(const Stmt& body, const std::string& input) {
  std::vector<std::string> reads;
  post_order_visit(body, [&](const Ref<Object>& n) {
    if (n->kind() == NodeKind::Store) {
      auto* st = static_cast<const StoreNode*>(n.get());
      if (st->buffer->name.find("acc") == std::string::npos) return;
      std::string read;
      post_order_visit(st->value, [&](const Ref<Object>& m) {
        if (m->kind() != NodeKind::Load) return;
        auto* l = static_cast<const LoadNode*>(m.get());
        if (l->buffer->name == input) read = to_string(l->index);
      });
      if (!read.empty()) reads.push_back(read);
    } else if (n->kind() == NodeKind::TensorIntrinCall) {
      for (const auto& o : static_cast<const TensorIntrinCallNode*>(n.get())->operands)
        if (o.buffer->name == input) reads.push_back(to_string(o.offset));
    }
  });
  return reads;
}

// The first updates of the workload's kernel under `knobs`: with `blocks`
// channel blocks innermost, each run of `blocks` updates reads one input
// value, and the next run another.
void check_blocks_innermost(const std::string& workload, const nlohmann::json& knobs, const std::string& input,
                            int blocks, const CpuInfo& cpu = avx512_cpu()) {
  INFO(workload << " " << knobs.dump());
  OpInstance op = build_workload(workload);
  const OpDef& def = find_op(op.op);
  auto space = def.define_space(op, cpu);
  nlohmann::json j = def.default_config(op, cpu, *space).to_json();
  j.update(knobs);
  ScheduledOp so = def.apply_config(op, space->from_json(j));
  const std::vector<std::string> reads = input_reads(lower(*so.schedule, so.args, "k").body, input);
  REQUIRE(reads.size() >= static_cast<size_t>(2 * blocks));
  for (int b = 1; b < blocks; ++b) CHECK(reads[static_cast<size_t>(b)] == reads[0]);
  CHECK(reads[static_cast<size_t>(blocks)] != reads[0]);
}

}  // namespace

TEST_CASE("register tiles: channel blocks innermost, one input read per column", "[ops][conv][tile]") {
  check_blocks_innermost("conv2d_nchwc:N=1,C=32,H=8,W=8,K=64,R=1,S=1", {{"tile_kb", {2, 2}}, {"tile_ow", {2, 4}}},
                         "data", 2);
  check_blocks_innermost("conv2d_nchwc:N=1,C=16,H=9,W=9,K=64,R=3,S=3,pad=1",
                         {{"tile_kb", {1, 4}}, {"tile_ow", {3, 3}}, {"border", "clip"}}, "data", 4);
  check_blocks_innermost("dwsep_nchwc:N=1,C=32,H=8,W=8,K=64,R=3,S=3,pad=1", {{"tile_kb", {2, 2}}, {"tile_ow", {2, 4}}},
                         "dw", 2);
  // The VNNI calls: one 32-bit word of four u8 per column, for both blocks.
  check_blocks_innermost("qconv2d_nchwc:N=1,C=64,H=8,W=8,K=64,R=1,S=1",
                         {{"tile_kb", {2, 2}}, {"tile_ow", {2, 4}}, {"tensorize", "vnni"}}, "data", 2,
                         cpu_with(true, false));
}
