#include "kernels/dot_conv2d_nchwc.h"

#include <algorithm>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d_common.h"
#include "kernels/conv2d_template.h"
#include "kernels/template_util.h"
#include "kernels/tensor_intrinsics.h"

namespace kiln {

namespace {

// Output channels per instruction call.
constexpr int64_t kLanes = 16;

// Output channels per AMX call.
constexpr int64_t kAmxColumns = 32;

bool offered(const DotConvKind& k, const Conv2dNchwcShape& s, const CpuInfo& cpu) {
  return k.has_instruction(cpu) && s.kb % kLanes == 0;
}

// The layer's blocks fit AMX: one k tile per input channel block (or, for
// narrow blocks like a stem's 4 channels, a kernel row's taps and the
// block's channels folded into one k tile), whole 32-channel calls per
// output block, no groups.
bool amx_blocks(const DotConvKind& k, const Conv2dNchwcShape& s) {
  const int64_t kt = 16 * k.steps;
  const bool folded = s.cb < kt && s.S > 1 && s.cb * s.S <= kt && s.dil == 1;
  return (s.cb == kt || folded) && s.kb % kAmxColumns == 0 && s.G == 1;
}

bool amx_offered(const DotConvKind& k, const Conv2dNchwcShape& s, const CpuInfo& cpu) {
  return k.has_amx(cpu) && amx_blocks(k, s);
}

// The largest divisor of n that is at most `most` (at least 1).
int64_t divisor_up_to(int64_t n, int64_t most) {
  for (int64_t d = std::min(n, std::max<int64_t>(1, most)); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

// The AMX call of a register tile of an AMX-tensorized config: `groups`
// output rows (1, or 2 where the tile_oh knob's rows and OH allow) of
// `pixels` output pixels (the largest divisor of OW up to the tile_ow
// knob's columns, at most 16 per row with two rows, 32 with one), and the
// tile's rows per middle step (ohm: the largest divisor of OH/groups up to
// the knob's).
// With `amx_rows` flat (stride 1): `groups` whole rows (the largest
// divisor of OH up to the tile_oh knob's middle rows, at least 2) of OW
// pixels as one run of tile rows (AmxConvTile::flat), one call per tile.
// `overlapping`: a flat run of more than 32 tile rows, not a multiple of
// 32, whose calls overlap and so must sum the whole reduction.
struct DotConvAmxTile {
  int64_t groups, pixels, ohm;
  bool flat = false, overlapping = false;
};

bool amx_flat_offered(const Conv2dNchwcShape& s) { return s.stride == 1 && s.OH >= 2 && s.OW >= 2 && s.OW <= 64; }

// The pitch of a stride-1 layer's input rows, in pixels: its (padded) width.
int64_t flat_pitch(const Conv2dNchwcShape& s) { return s.OW + (s.S - 1) * s.dil; }

DotConvAmxTile dot_conv_amx_tile(const Conv2dNchwcShape& s, const Config& cfg) {
  const std::vector<int64_t>& toh = cfg.split("tile_oh");
  if (amx_flat_offered(s) && cfg.has("amx_rows") && cfg.annotate("amx_rows") == "flat") {
    const int64_t rows = divisor_up_to(s.OH, std::max<int64_t>(2, toh[1]));
    const int64_t span = (rows - 1) * flat_pitch(s) + s.OW;
    if (rows >= 2) return DotConvAmxTile{rows, s.OW, 1, true, span > 32 && span % 32 != 0};
  }
  DotConvAmxTile t;
  t.groups = toh[2] >= 2 && s.OH % 2 == 0 ? 2 : 1;
  t.pixels = divisor_up_to(s.OW, std::min<int64_t>(cfg.split("tile_ow")[1], t.groups == 2 ? 16 : 32));
  t.ohm = divisor_up_to(s.OH / t.groups, toh[1]);
  return t;
}

// The sums tensorized with AMX: per register tile (kbi blocks x groups
// rows x pixels) and per block and 32 output channels, one call over the
// rows' pixels and the whole reduction (input channel blocks, kernel rows
// and columns; a loop of one iteration stays outside the call).
// `cin_outside`: the input channel blocks are the accumulator tile's
// outermost loop and each call covers one block's taps, so that the tile's
// calls for 32 output channels reuse that block's weights (18 KiB for a
// 3x3 kernel) from L1 rather than streaming the whole reduction's weights
// per call; the tile's sums are kept between blocks (reset and update).
void tensorize_amx(const DotConvKind& k, const Conv2dNchwcShape& s, Stage sb, int64_t kbi, const DotConvAmxTile& t,
                   bool cin_outside) {
  auto bx = sb.axis();
  auto br = sb.reduce_axis();
  IterVar ko, ki, oh_o, oh_g, ow_o, ow_p, k32o, k32i, cq, cs;
  sb.split(bx[1], kbi, &ko, &ki);
  sb.split(bx[2], t.groups, &oh_o, &oh_g);
  sb.split(bx[3], t.pixels, &ow_o, &ow_p);
  sb.split(bx[4], kAmxColumns, &k32o, &k32i);
  sb.split(br[3], k.steps, &cq, &cs);
  const int64_t blocks = s.Cg / s.cb;
  const bool blocks_in_call = blocks > 1 && !cin_outside;
  std::vector<IterVar> order{bx[0]}, inner;
  if (!blocks_in_call) order.push_back(br[0]);
  // Weights outside: a block's 32 output channels, then the tile's rows.
  const std::vector<IterVar> tile_loops =
      cin_outside ? std::vector<IterVar>{ko, ki, k32o, oh_o, ow_o} : std::vector<IterVar>{ko, oh_o, ow_o};
  order.insert(order.end(), tile_loops.begin(), tile_loops.end());
  (t.groups > 1 ? inner : order).push_back(oh_g);
  inner.push_back(ow_p);
  inner.push_back(k32i);
  if (blocks_in_call) inner.push_back(br[0]);
  (s.R > 1 ? inner : order).push_back(br[1]);
  (s.S > 1 ? inner : order).push_back(br[2]);
  if (!cin_outside)
    for (const IterVar& iv : {ki, k32o}) order.push_back(iv);
  inner.push_back(cq);
  inner.push_back(cs);
  order.insert(order.end(), inner.begin(), inner.end());
  sb.reorder(order);
  AmxConvTile tile;
  tile.groups = t.groups;
  tile.pixels = t.pixels;
  tile.steps_c = blocks_in_call ? blocks : 1;
  tile.steps_r = s.R;
  tile.steps_s = s.S;
  tile.stride = s.stride;
  tile.dilation = s.dil;
  tile.bf16 = k.acc == DType::f32();
  tile.cb = s.cb;
  tile.flat = t.flat;
  // Flat: the sums' rows get the input rows' pitch (its padded width).
  if (t.flat) sb.storage_align(2, flat_pitch(s) * s.kb, 0);
  sb.tensorize(inner.front(), x86_amx_conv(tile));
}

}  // namespace

void dot_conv_inputs(const DotConvKind& k, const Conv2dNchwcShape& s, OpInstance* op) {
  check_groups(k.op, s.C, s.K, s.G);
  check_window(k.op, s.H, s.W, s.R, s.S, s.pad, s.dil);
  user_check(s.cb > 0 && s.cb % k.steps == 0 && s.Cg % s.cb == 0)
      << k.op << ": the input channel block cb=" << s.cb << " must be a multiple of " << k.steps
      << " (the weights hold " << k.steps << " input channels innermost) dividing the input channels per group ("
      << s.Cg << ")";
  user_check(s.kb > 0 && s.Kg % s.kb == 0) << k.op << ": the output channel block kb=" << s.kb
                                           << " must divide the output channels per group (" << s.Kg << ")";
  Tensor data = placeholder({s.N, s.C / s.cb, s.H, s.W, s.cb}, k.data, "data");
  Tensor weight =
      placeholder({s.K / s.kb, s.Cg / s.cb, s.R, s.S, s.cb / k.steps, s.kb, k.steps}, k.weight, "weight");
  op->inputs = {data, weight};
}

Tensor dot_conv_sums(const DotConvKind& k, const Conv2dNchwcShape& s, const Tensor& padded, const Tensor& weight,
                     const std::string& name, bool clip) {
  IterVar rco = reduce_axis(static_cast<int>(s.Cg / s.cb), "rco"), rr = reduce_axis(static_cast<int>(s.R), "rr"),
          rs = reduce_axis(static_cast<int>(s.S), "rs"), rci = reduce_axis(static_cast<int>(s.cb), "rci");
  const int blocks_per_group = static_cast<int>(s.Cg / s.cb), blocks_per_out_group = static_cast<int>(s.Kg / s.kb);
  const int st = static_cast<int>(s.stride), dl = static_cast<int>(s.dil), steps = static_cast<int>(k.steps);
  const DType acc = k.acc;
  return compute(
      {s.N, s.K / s.kb, s.OH, s.OW, s.kb},
      [&](const std::vector<Var>& v) {
        Expr cblock = s.G > 1 ? floordiv(v[1], blocks_per_out_group) * blocks_per_group + rco->var : Expr(rco->var);
        Expr h = v[2] * st + rr->var * dl, w = v[3] * st + rs->var * dl;
        InputTap tap = clip ? input_tap(h, w, s.pad, s.H, s.W) : InputTap{h, w, Expr()};
        Expr x = padded(v[0], cblock, tap.h, tap.w, rci->var);
        Expr wt = weight(v[1], rco->var, rr->var, rs->var, floordiv(rci->var, steps), v[4], floormod(rci->var, steps));
        return sum(cast(acc, x) * cast(acc, wt), {rco, rr, rs, rci}, tap.inside);
      },
      name, k.op);
}

void dot_conv_define(const DotConvKind& k, OpInstance* op) {
  const Conv2dNchwcShape s = conv2d_nchwc_shape(*op);
  Tensor padded = pad_spatial(op->inputs[0], 2, 3, s.pad, make_zero(k.data));
  Tensor sums = dot_conv_sums(k, s, padded, op->inputs[1], "conv");
  op->parts[k.op] = sums;
  op->outputs = {k.epilogue(s, sums, *op, "out")};
  op->flops = 2.0 * s.N * s.K * s.OH * s.OW * s.Cg * s.R * s.S;
}

std::shared_ptr<ConfigSpace> dot_conv_space(const DotConvKind& k, const OpInstance& op, const CpuInfo& cpu) {
  const Conv2dNchwcShape c = conv2d_nchwc_shape(op);
  auto s = nchwc_tile_space(c, vector_lanes(cpu, k.acc));
  s->define_annotate("border", border_options(c.pad), true);  // configs stored before it: pad
  const bool dense_offered = unit_stride_offered(c.R, c.S, c.stride, c.pad);
  s->define_annotate("unit_stride", unit_stride_options(c.R, c.S, c.stride, c.pad), true);
  if (offered(k, c, cpu)) {
    std::vector<std::string> options{"none", k.tensorize};
    if (amx_offered(k, c, cpu)) options.push_back("amx");
    s->define_annotate("tensorize", options);
    // Where AMX calls sum the input channel blocks (tensorize_amx).
    const bool several_blocks = c.Cg / c.cb > 1;
    s->define_annotate("amx_cin",
                       several_blocks && amx_offered(k, c, cpu) ? std::vector<std::string>{"inside", "outside"}
                                                                : std::vector<std::string>{"inside"},
                       /*added_later=*/true);
    // Whole stride-1 rows as one run of AMX tile rows (dot_conv_amx_tile);
    // a strided 1x1 layer's rows once they are copied densely.
    const bool flat = amx_flat_offered(c) || (dense_offered && amx_flat_offered(unit_stride_shape(c)));
    s->define_annotate(
        "amx_rows",
        amx_offered(k, c, cpu) && flat ? std::vector<std::string>{"tile", "flat"} : std::vector<std::string>{"tile"},
        /*added_later=*/true);
  }
  return s;
}

Config dot_conv_default(const DotConvKind& k, const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
  const Conv2dNchwcShape c = conv2d_nchwc_shape(op);
  nlohmann::json j = nchwc_tile_default(c, k.acc, cpu, space);
  j["border"] = "pad";
  if (amx_offered(k, c, cpu)) {
    // One call per 32 output channels of up to 32 pixels: a whole row
    // (two where a row has at most 16). Small images take more output
    // channel blocks per tile (the pixels' data read once for all of
    // them), about 4096 pixel-blocks per tile; padded data is copied per
    // tile row band, where the tiles read it.
    j["tensorize"] = "amx";
    j["tile_ow"] = nearest_split(space, "tile_ow", {divisor_up_to(c.OW, 32)});
    j["tile_oh"] = nearest_split(space, "tile_oh", {1, c.OW <= 16 && c.OH % 2 == 0 ? 2 : 1});
    j["tile_kb"] = nearest_split(space, "tile_kb", {divisor_up_to(c.K / c.kb, std::max<int64_t>(1, 4096 / (c.OH * c.OW)))});
    // A narrow-block stem (its kernel rows folded into the calls) reads
    // R rows per output row: its padded copy is made once, before.
    const bool folded = c.cb < 16 * k.steps;
    if (c.pad > 0) j["data_at"] = folded ? -1 : 1;
    // Deep 3x3 layers sum the input blocks outside the calls (each block's
    // weights reused from L1 by the tile's calls); a 7x7 image is one tile
    // of all its rows, so that the weights are read once per block.
    const bool cin_outside = c.Cg / c.cb >= 4 && c.R * c.S > 1;
    j["amx_cin"] = cin_outside ? "outside" : "inside";
    // A stride-1 7x7 image: all its rows as one flat run of tile rows (61 of
    // 64 tile rows filled for a 3x3 layer rather than 7 of 16).
    // So is a strided 1x1 layer's 7x7 output, read from a dense copy made
    // once, before (1.39x over tiles of 7 rows on the resnet50 layer from
    // 14x14; AMX reads larger strided images in place as fast).
    const bool dense =
        unit_stride_offered(c.R, c.S, c.stride, c.pad) && amx_flat_offered(unit_stride_shape(c)) && c.OH * c.OW <= 64;
    if (dense) {
      j["unit_stride"] = "dense";
      j["data_at"] = -1;
    }
    const bool flat = amx_flat_offered(dense ? unit_stride_shape(c) : c) && c.OH * c.OW <= 64;
    j["amx_rows"] = flat ? "flat" : "tile";
    if ((cin_outside || flat) && c.OH * c.OW <= 64) {
      j["tile_oh"] = nearest_split(space, "tile_oh", {c.OH, 1});
      j["acc_at"] = 1;
    }
  } else if (offered(k, c, cpu)) {
    j["tensorize"] = k.tensorize;
  }
  return space.make(j);
}

ScheduledOp dot_conv_apply(const DotConvKind& k, const OpInstance& op, const Config& cfg) {
  user_check(op.op == k.op) << "the " << k.op << " template cannot schedule op '" << op.op << "'";
  // "dense": the strided pixels copied into data_dense, read as a 1x1
  // stride-1 layer over the output's extent (AMX's flat rows then apply).
  const NchwcRead read = nchwc_read(op, cfg);
  const Conv2dNchwcShape& s = read.shape;
  const Tensor& data = read.data;
  const Tensor& dense = read.dense;
  const int64_t kbi = cfg.split("tile_kb")[1];
  const std::vector<int64_t>& toh = cfg.split("tile_oh");
  const int64_t ohm = toh[1], ohi = toh[2], owi = cfg.split("tile_ow")[1];
  const int parallel = static_cast<int>(cfg.choice("parallel"));
  const std::string how = cfg.has("tensorize") ? cfg.annotate("tensorize") : "none";
  const bool tensorized = how == k.tensorize, amx = how == "amx";
  user_check(how == "none" || tensorized || amx)
      << k.op << " template: unknown tensorize option '" << how << "' (none, " << k.tensorize << " or amx)";
  user_check(!tensorized || s.kb % kLanes == 0) << k.op << " template: tensorize=" << k.tensorize
                                                << " needs output channel blocks of a multiple of 16, got kb=" << s.kb;
  user_check(!amx || amx_blocks(k, s))
      << k.op << " template: tensorize=amx needs input channel blocks of " << 16 * k.steps
      << " (one AMX k tile; or narrower blocks whose kernel row of taps fits one, dilation 1), output channel "
      << "blocks of a multiple of 32 and no groups; got cb=" << s.cb << ", kb=" << s.kb << ", groups=" << s.G;
  // AMX: the register tile is one call's rows and pixels, whole tiles of the output.
  const DotConvAmxTile amx_tile = amx ? dot_conv_amx_tile(s, cfg) : DotConvAmxTile{1, 1, 1};
  const int64_t tile_ohm = amx ? amx_tile.ohm : ohm, tile_ohi = amx ? amx_tile.groups : ohi;
  const int64_t tile_owi = amx ? amx_tile.pixels : owi;

  // "clip": the taps read the data where they fall inside it and skip
  // the padding, and loop partitioning leaves the interior unguarded. An
  // AMX call covers the whole window, so AMX reads the padded copy.
  const bool clip = s.pad > 0 && !amx && cfg.has("border") && cfg.annotate("border") == "clip";
  Tensor padded = clip ? data : pad_spatial(data, 2, 3, s.pad, make_zero(k.data));
  Tensor sums = dot_conv_sums(k, s, padded, op.inputs[1], "conv_acc", clip);
  Tensor out = k.epilogue(s, sums, op, "conv");

  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& sc = *sch;
  Stage so = sc[out];
  const ChannelTiles tiles = tile_nchwc_output(so, kbi, tile_ohm, tile_ohi, tile_owi, cfg);
  const LoopBand& band = tiles.band;
  const int acc_pos = tiles.acc_pos;

  // The accumulator: register tiles of kbi blocks x ohi x owi, kb lanes each.
  Stage sb = sc[sums];
  sb.set_scope(MemScope::kLocal);
  sb.compute_at(so, band.at(acc_pos));
  const int unroll_reduce = cfg.annotate("unroll_kw") == "unroll" ? 2 : -1;
  if (amx) {
    // Overlapping flat calls sum the whole reduction: the blocks stay inside.
    tensorize_amx(k, s, sb, kbi, amx_tile,
                  !amx_tile.overlapping && cfg.has("amx_cin") && cfg.annotate("amx_cin") == "outside");
  } else if (!tensorized) {
    tile_accumulator(sb, {0, kbi, ohi, owi, 0}, cfg.reorder("reduce_order"), 4, unroll_reduce, /*channels_axis=*/1);
  } else {
    // As tile_accumulator, with each 16 channels x `steps` input channels
    // below the tile's loops one call: the outer parts, the reduction (its
    // input channels in steps), the tile (unrolled; its channel blocks
    // innermost, as tile_accumulator's channels_axis), the 16-channel groups
    // of a block (unrolled), then the call's two loops.
    auto bx = sb.axis();
    auto br = sb.reduce_axis();
    IterVar ko, ki, oh_o, oh_i, ow_o, ow_i, k16o, k16i, cq, cs;
    sb.split(bx[1], kbi, &ko, &ki);
    sb.split(bx[2], ohi, &oh_o, &oh_i);
    sb.split(bx[3], owi, &ow_o, &ow_i);
    sb.split(bx[4], kLanes, &k16o, &k16i);
    sb.split(br[3], k.steps, &cq, &cs);
    const IterVar red[4] = {br[0], br[1], br[2], cq};
    std::vector<IterVar> order{bx[0], ko, oh_o, ow_o};
    for (int64_t r : cfg.reorder("reduce_order")) order.push_back(red[r]);
    for (const IterVar& iv : {oh_i, ow_i, ki, k16o, k16i, cs}) order.push_back(iv);
    sb.reorder(order);
    for (const IterVar& iv : {ki, oh_i, ow_i, k16o}) sb.unroll(iv);
    if (unroll_reduce >= 0) sb.unroll(br[2]);
    sb.tensorize(k16i, k.intrinsic());
  }
  if (s.pad > 0 && !clip)
    place_stage(sc[padded], so, band, static_cast<int>(cfg.choice("data_at")), acc_pos, parallel > 0, 4);
  if (dense.defined())
    place_stage(sc[dense], so, band, static_cast<int>(cfg.choice("data_at")), acc_pos, parallel > 0, 4);
  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

}  // namespace kiln
