#include "compute/hw_instructions.h"

#include <cstdint>

#include "base/error.h"
#include "compute/printer.h"

namespace kiln {

namespace {

// mma.sync m16n8k16 with `t` inputs (f16 or bf16) into f32, and the
// ldmatrix loads of its operands from shared memory into fragments (warp
// scope: each lane holds its part in the PTX ISA's fragment layout).
std::vector<HwInstruction> cuda_mma_family(DType t) {
  const std::string n = t.str();
  const MemScope warp = MemScope::kWarp, shared = MemScope::kShared;
  auto load = [&](const std::string& name, int64_t extent, const std::string& what) {
    return HwInstruction{name,
                         "cuda",
                         "sm_80",
                         {{"frag", t, extent, true, false, warp}, {"src", t, extent, false, false, shared}},
                         what};
  };
  return {
      load("cuda.mma.load_a.mk." + n, 256,
           "frag = the 16 x 16 A operand of mma.m16n8k16, src[m * stride + k] (ldmatrix.x4 from shared memory)"),
      load("cuda.mma.load_a.km." + n, 256,
           "frag = the 16 x 16 A operand of mma.m16n8k16 stored k-major, src[k * stride + m] (ldmatrix.x4.trans)"),
      load("cuda.mma.load_b.kn." + n, 128,
           "frag = the 16 x 8 B operand of mma.m16n8k16, src[k * stride + n] (ldmatrix.x2.trans)"),
      load("cuda.mma.load_b.nk." + n, 128,
           "frag = the 16 x 8 B operand of mma.m16n8k16 stored n-major, src[n * stride + k] (ldmatrix.x2)"),
      {"cuda.mma.m16n8k16." + n,
       "cuda",
       "sm_80",
       {{"acc", DType::f32(), 128, true, false, warp}, {"a", t, 256, false, false, warp}, {"b", t, 128, false, false, warp}},
       "acc[16 x 8] += a[16 x 16] * b[16 x 8] in f32, the " + n +
           " products exact (mma.sync.aligned.m16n8k16.row.col.f32." + n + "." + n + ".f32; the tensor core's own summation order)"},
  };
}

// wgmma.mma_async m64nNk16 with `t` inputs into f32, both operands in
// shared memory in 8 x 8 tiles, as one warp of the warpgroup sees it.
// The .async form leaves the product in flight (cuda_wgmma_commit_wait).
std::vector<HwInstruction> cuda_wgmma_family(DType t) {
  std::vector<HwInstruction> l;
  for (int64_t n : cuda_wgmma_widths())
    for (bool async : {false, true}) {
      const std::string ns = std::to_string(n);
      const std::string when =
          async
              ? ", issued into the warpgroup's open group and not waited for: acc holds the sum, and the slots may be "
                "refilled, only once a cuda.wgmma_commit_wait retired that group"
              : ", then waited for";
      l.push_back(
          {cuda_wgmma_instruction(t, n, async),
           "cuda",
           "sm_90a",
           {{"acc", DType::f32(), 16 * n, true, false, MemScope::kWarp},
            {"a", t, 0, false, false, MemScope::kShared},
            {"b", t, 0, false, false, MemScope::kShared}},
           "acc[16 x " + ns + "] += A[16 x 16*steps] * B[16*steps x " + ns + "] in f32, the " + t.str() +
               " products exact (wgmma.mma_async.sync.aligned.m64n" + ns + "k16.f32." + t.str() + "." + t.str() + when +
               "; the tensor core's own summation order), acc being this warp's " + std::to_string(n / 8) +
               " fragments of 16 x 8 (as mma.m16n8k16's) and the 16 rows of A this warp's: " +
               "A(i, k) = a[(i/8)*a_m + (k/8)*a_k + (a_mn_major ? (k%8)*8 + i%8 : (i%8)*8 + k%8)], " +
               "B(k, j) = b[(k/8)*b_k + (j/8)*b_n + (b_mn_major ? (k%8)*8 + j%8 : (j%8)*8 + k%8)] (8 x 8 tiles, "
               "Stage::storage_tile); an operand with its _swizzle 1 is stored 128-byte swizzled instead "
               "(Stage::storage_swizzle, its array 1024-byte aligned), its offset the element's place before the "
               "swizzle: with W elements to 128 bytes, A(i, k) = a[(k/W)*a_k + (i/8)*a_m + (i%8)*W + k%W] (and "
               "(i/W)*a_m + (k/8)*a_k + (k%8)*W + i%W when MN-major), each 16-byte chunk then XORed with its row "
               "% 8, and B alike. All four warps of a warpgroup (warps 4g to 4g+3 of the block) make the call "
               "together, warp 4g+w with the A rows 16*w after warp 4g's",
           cuda_wgmma_scalars()});
    }
  l.push_back({kCudaWgmmaCommitWait,
               "cuda",
               "sm_90a",
               {{"acc", DType::f32(), 0, true, false, MemScope::kWarp}},
               "wgmma.commit_group closes the warpgroup's open group of .async products, then wgmma.wait_group "
               "in_flight waits until at most that many of its committed groups are in flight (0 to 7): the "
               "older ones' accumulators hold their sums and their tiles are read. acc is the whole warp-scope "
               "buffer the products accumulate into; no register of it moves across the wait. All four warps "
               "of the warpgroup make the call together",
               {"in_flight"}});
  return l;
}

// cp.async of 4, 8 or 16 bytes of `t` from global into shared memory.
std::vector<HwInstruction> cuda_cp_async_family(DType t) {
  std::vector<HwInstruction> l;
  for (int64_t bytes : {4, 8, 16}) {
    const int64_t lanes = bytes / t.bytes();
    if (lanes < 1) continue;
    l.push_back({cuda_cp_async_instruction(t, bytes),
                 "cuda",
                 "sm_80",
                 {{"dst", t, lanes, true, false, MemScope::kShared}, {"src", t, lanes, false}},
                 "dst[0 .. " + std::to_string(lanes) + ") = src[0 .. " + std::to_string(lanes) +
                     "), asynchronously (cp.async." + (bytes == 16 ? "cg" : "ca") + ".shared.global, " +
                     std::to_string(bytes) + " bytes, both aligned to them): the data lands by the issuing " +
                     "thread's cp.async.wait_group that covers its commit group; with a scalar, only where it " +
                     "holds, zeros elsewhere (src-size 0)"});
  }
  return l;
}

// The bulk copy of one run of `t` (its length is the call's extent).
HwInstruction cuda_bulk_copy_entry(DType t) {
  return {cuda_bulk_copy_instruction(t),
          "cuda",
          "sm_90",
          {{"dst", t, 0, true, false, MemScope::kShared}, {"src", t, 0, false, false, MemScope::kGlobal}},
          "dst[0 .. n) = src[0 .. n) for the operands' extent n (a multiple of 16 bytes, both addresses 16-byte "
          "aligned), asynchronously by the bulk copy engine (cp.async.bulk.shared::cluster.global.mbarrier::"
          "complete_tx::bytes): the data lands when the phase of the pipeline's full mbarrier for the slot (the "
          "scalar) completes",
          {"slot"}};
}

// The tensor copy of a box of rows of `t` (its shape is the operands').
HwInstruction cuda_tensor_copy_entry(DType t) {
  return {cuda_tensor_copy_instruction(t),
          "cuda",
          "sm_90",
          {{"dst", t, 0, true, false, MemScope::kShared}, {"src", t, 0, false, false, MemScope::kGlobal}},
          "for each of the n / L rows r of the box (n the operands' extent, L dst's stride): dst[r * L .. r * L + L) "
          "= src[start(r) .. start(r) + L), asynchronously by the copy engine through a tensor map of the source "
          "(cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes): the data lands when the "
          "phase of the pipeline's full mbarrier for the slot (the first scalar) completes. Without more scalars "
          "start(r) = r * S (S src's stride), a 2-D map; each further pair (count, distance) splits the rows into "
          "one more dimension: r = r1 + c1 * (r2 + c2 * (...)) with c2, c3.. the pairs' counts and c1 the rows "
          "they leave, and start(r) = r1 * S + r2 * distance2 + ..., a map of up to 5 dimensions. With swizzle 1 "
          "the rows are 128 bytes and land 128-byte swizzled (each 16-byte chunk c of row r at chunk c XOR r % 8, "
          "dst 1024-byte aligned and its offset the box's place before the swizzle)",
          {"slot", "swizzle"}};
}

// AMX: a 32 x 32 product in four tile registers over `steps` k steps of
// `k` elements (`s` per 32-bit pair or quad); acc's rows are `stride` apart
// (the call's row stride), a's rows its own stride apart, b dense rows of
// 32 columns x s. `name` adds to acc; `name`.set starts from zeroed tiles
// (tilezero, acc not read): a call that covers the whole reduction.
std::vector<HwInstruction> amx_family(const std::string& name, const std::string& feature, DType in_a, DType in_b,
                                      DType acc, int64_t k, int64_t s, const std::string& how) {
  const std::vector<HwOperand> operands = {
      {"acc", acc, 32 * 32, true}, {"a", in_a, 32 * k, false, true}, {"b", in_b, 16 * 32 * s, false, true}};
  const std::string ks = std::to_string(k), ss = std::to_string(s);
  const std::string sum =
      " sum over k < " + ks + "*steps of a[i][k] * b[k/" + ss + "][j][k%" + ss + "] for i, j < 32, " + how;
  return {{name, "llvm", feature, operands, "acc[i][j] +=" + sum},
          {name + ".set", "llvm", feature, operands,
           "acc[i][j] =" + sum + "; the tiles zeroed (tilezero) instead of loaded from acc"}};
}

// The AMX tile products over row groups (hw_instructions.h): a's rows
// (output pixels) and the k steps at the strides the call passes.
std::vector<HwInstruction> amx_tiles_family(const std::string& name, const std::string& feature, DType in_a, DType in_b,
                                            DType acc, int64_t k, int64_t s, const std::string& how) {
  const std::vector<HwOperand> operands = {{"acc", acc, 0, true}, {"a", in_a, 0, false}, {"b", in_b, 0, false}};
  const std::string ks = std::to_string(k), ss = std::to_string(s);
  const std::string sum = " sum over the steps (t1, t2, t3) and k < the scalar k (at most " + ks +
                          ") of a[t1, t2, t3][g][i][k] * b[t1, t2, t3][k/" + ss + "][j][k%" + ss +
                          "] for the rows i of each row group g (rows0, rows1) and j < 32 (b's rows 32 x " + ss +
                          " contiguous), " + how;
  return {{name, "llvm", feature, operands, "acc[g][i][j] +=" + sum, amx_tiles_scalars()},
          {name + ".set", "llvm", feature, operands,
           "acc[g][i][j] =" + sum + "; the tiles zeroed (tilezero) instead of loaded from acc", amx_tiles_scalars()}};
}

// The register transpose of 16 x 16 words of `t` (4 bytes each).
HwInstruction x86_transpose_entry(DType t) {
  const int64_t per_word = 4 / t.bytes();
  const int64_t extent = 16 * 16 * per_word;
  const std::string w = per_word == 1 ? "element" : std::to_string(per_word) + " " + t.str() + " elements";
  return {x86_transpose_instruction(t),
          "llvm",
          "avx512f",
          {{"dst", t, extent, true}, {"src", t, extent, false}},
          "dst[i * dst_stride + j * " + std::to_string(per_word) + " + e] = src[j * src_stride + i * " +
              std::to_string(per_word) + " + e] for i, j < 16 and e < " + std::to_string(per_word) +
              ": 16 rows of 16 words (each word " + w +
              ") loaded, transposed in registers (AVX-512 shuffles) and stored; the values are moved, not computed"};
}

// The interleave of 4 / bytes(t) rows of 16 elements into 16 words.
HwInstruction x86_interleave_entry(DType t) {
  const int64_t g = 4 / t.bytes();
  const std::string gs = std::to_string(g);
  return {x86_interleave_instruction(t),
          "llvm",
          "avx512f",
          {{"dst", t, 16 * g, true}, {"src", t, 16 * g, false}},
          "dst[j * " + gs + " + e] = src[e * src_stride + j] for j < 16 and e < " + gs + ": " + gs + " rows of 16 " +
              t.str() +
              " elements loaded, interleaved in registers (AVX-512 shuffles) into 16 words of one 64-byte block and "
              "stored; the values are moved, not computed"};
}

}  // namespace

std::string x86_interleave_instruction(DType t) { return "x86.interleave.16." + t.str(); }

const std::vector<DType>& x86_interleave_types() {
  static const std::vector<DType> types = {DType::bf16(), DType::i8(), DType::u8()};
  return types;
}

std::string x86_transpose_instruction(DType t) { return "x86.transpose.16x16." + t.str(); }

const std::vector<DType>& x86_transpose_types() {
  static const std::vector<DType> types = {DType::f32(), DType::bf16(), DType::i8(), DType::u8()};
  return types;
}

const std::vector<std::string>& amx_tiles_scalars() {
  static const std::vector<std::string> names = {"rows0",     "rows1",   "steps1",  "steps2",  "steps3",  "acc_row",
                                                 "acc_group", "a_row",   "a_group", "a_step1", "a_step2", "a_step3",
                                                 "b_row",     "b_step1", "b_step2", "b_step3", "k"};
  return names;
}

std::string cuda_cp_async_instruction(DType t, int64_t bytes) {
  return "cuda.cp_async." + t.str() + "." + std::to_string(bytes);
}

std::string cuda_bulk_copy_instruction(DType t) { return kCudaBulkCopyPrefix + t.str(); }
std::string cuda_tensor_copy_instruction(DType t) { return kCudaTensorCopyPrefix + t.str(); }

bool cuda_tensor_copy_swizzled(const TensorIntrinCallNode& copy) {
  const int64_t* s = copy.intrin.rfind(kCudaTensorCopyPrefix, 0) == 0 && copy.scalars.size() >= 2
                         ? as_const_int(copy.scalars[1])
                         : nullptr;
  return s && *s == 1;
}

const std::vector<DType>& cuda_cp_async_types() {
  static const std::vector<DType> types = {DType::f32(), DType::f16(), DType::bf16(),
                                           DType::i32(), DType::i8(),  DType::u8()};
  return types;
}

const std::vector<int64_t>& cuda_wgmma_widths() {
  static const std::vector<int64_t> n = {8, 16, 32, 64, 128, 256};
  return n;
}

std::string cuda_wgmma_instruction(DType input, int64_t n, bool async) {
  return kCudaWgmmaPrefix + std::string("m64n") + std::to_string(n) + "k16." + input.str() + (async ? ".async" : "");
}

std::string cuda_wgmma_async_form(const std::string& instruction) {
  internal_assert(instruction.rfind(kCudaWgmmaPrefix, 0) == 0 && !is_cuda_wgmma_async(instruction))
      << "not a synchronous wgmma: " << instruction;
  return instruction + ".async";
}

bool is_cuda_wgmma_async(const std::string& instruction) {
  const std::string tail = ".async";
  return instruction.rfind(kCudaWgmmaPrefix, 0) == 0 && instruction.size() > tail.size() &&
         instruction.compare(instruction.size() - tail.size(), tail.size(), tail) == 0;
}

const std::vector<std::string>& cuda_wgmma_scalars() {
  static const std::vector<std::string> names = {"a_m",        "a_k",       "a_mn_major", "b_k",  "b_n",
                                                 "b_mn_major", "a_swizzle", "b_swizzle",  "steps"};
  return names;
}

bool cuda_wgmma_reads_swizzled(const TensorIntrinCallNode& call, size_t operand) {
  internal_assert(operand == 1 || operand == 2) << "wgmma reads operands 1 (a) and 2 (b), not " << operand;
  return call.intrin.rfind(kCudaWgmmaPrefix, 0) == 0 && call.scalars.size() == cuda_wgmma_scalars().size() &&
         is_one(call.scalars[5 + operand]);
}

CudaMmaInstructions cuda_mma_instructions(DType input) {
  const std::string n = input.str();
  return {"cuda.mma.load_a.mk." + n, "cuda.mma.load_a.km." + n, "cuda.mma.load_b.kn." + n, "cuda.mma.load_b.nk." + n,
          "cuda.mma.m16n8k16." + n};
}

const std::vector<HwInstruction>& hw_instructions() {
  static const std::vector<HwInstruction> list = [] {
    std::vector<HwInstruction> l = {
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
      {kCudaMmaZero, "cuda", "sm_80", {{"acc", DType::f32(), 128, true, false, MemScope::kWarp}},
       "acc[16 x 8] = 0 (each lane its four accumulators)"},
      // Not warp scope: the destination is shared or global memory.
      {kCudaMmaStore, "cuda", "sm_80",
       {{"dst", DType::f32(), 128, true}, {"acc", DType::f32(), 128, false, false, MemScope::kWarp}},
       "dst[m * stride + n] = acc[m][n] for the 16 x 8 accumulator tile, each lane storing its four elements"},
    };
    // AMX, the transposes and interleaves after the broadcast dots, before the CUDA entries.
    std::vector<HwInstruction> amx = amx_family(
        "x86.amx.dpbusd.32x32", "amx-int8", DType::u8(), DType::i8(), DType::i32(), 64, 4,
        "in i32 (wrapping): four AMX tdpbusd tiles of 16 x 16 per k step of 64, the accumulators kept in tile "
        "registers across the steps");
    for (HwInstruction& h : amx_family("x86.amx.dpbf16ps.32x32", "amx-bf16", DType::bf16(), DType::bf16(),
                                       DType::f32(), 32, 2,
                                       "summed in f32 by AMX tdpbf16ps (its own order and rounding) over tiles of "
                                       "16 x 16 per k step of 32"))
      amx.push_back(std::move(h));
    for (HwInstruction& h : amx_tiles_family(kAmxTilesInt8, "amx-int8", DType::u8(), DType::i8(), DType::i32(), 64, 4,
                                             "in i32 (wrapping), by AMX tdpbusd"))
      amx.push_back(std::move(h));
    for (HwInstruction& h : amx_tiles_family(kAmxTilesBf16, "amx-bf16", DType::bf16(), DType::bf16(), DType::f32(), 32,
                                             2, "summed in f32 by AMX tdpbf16ps (its own order and rounding)"))
      amx.push_back(std::move(h));
    for (DType t : x86_transpose_types()) amx.push_back(x86_transpose_entry(t));
    for (DType t : x86_interleave_types()) amx.push_back(x86_interleave_entry(t));
    l.insert(l.begin() + 2, amx.begin(), amx.end());
    for (DType t : {DType::f16(), DType::bf16()})
      for (HwInstruction& h : cuda_mma_family(t)) l.push_back(std::move(h));
    for (DType t : {DType::f16(), DType::bf16()})
      for (HwInstruction& h : cuda_wgmma_family(t)) l.push_back(std::move(h));
    for (DType t : cuda_cp_async_types())
      for (HwInstruction& h : cuda_cp_async_family(t)) l.push_back(std::move(h));
    for (DType t : cuda_cp_async_types()) l.push_back(cuda_bulk_copy_entry(t));
    for (DType t : cuda_cp_async_types()) l.push_back(cuda_tensor_copy_entry(t));
    return l;
  }();
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
    int64_t e = 0;
    const bool constant = as_const_int(o.extent, &e);
    if (want.extent == 0) continue;  // laid out by the scalars
    if (want.steps) {
      if (!constant || e <= 0 || e % want.extent != 0)
        return which + " covers " + (constant ? std::to_string(e) : std::string("a non-constant number of")) +
               " elements, it needs a positive multiple of " + std::to_string(want.extent);
      if (e / want.extent != h->steps_of(call))
        return which + " covers " + std::to_string(e / want.extent) + " k steps, another operand " +
               std::to_string(h->steps_of(call));
    } else if (!constant || e != want.extent) {
      return which + " covers " + (constant ? std::to_string(e) : std::string("a non-constant number of")) +
             " elements, it needs " + std::to_string(want.extent);
    }
  }
  if (call.intrin.rfind(kCudaBulkCopyPrefix, 0) == 0) {
    // Both operands cover the same run, in whole 16-byte units.
    int64_t n = 0, m = 0;
    const int64_t bytes = h->operands[0].dtype.bytes();
    if (!as_const_int(call.operands[0].extent, &n) || !as_const_int(call.operands[1].extent, &m) || n != m || n <= 0 ||
        n * bytes % 16 != 0)
      return call.intrin + " copies " + to_string(call.operands[0].extent) + " elements into " +
             to_string(call.operands[1].extent) + " from the source: both need the same constant run, a positive " +
             "multiple of 16 bytes";
  }
  if (call.intrin.rfind(kCudaTensorCopyPrefix, 0) == 0) {
    // A box of whole 16-byte rows, within the tensor map's limits.
    int64_t n = 0, m = 0, len = 0, stride = 0;
    const int64_t bytes = h->operands[0].dtype.bytes();
    if (!as_const_int(call.operands[0].extent, &n) || !as_const_int(call.operands[1].extent, &m) || n != m || n <= 0)
      return call.intrin + " copies " + to_string(call.operands[0].extent) + " elements into " +
             to_string(call.operands[1].extent) + " from the source: both need the same positive constant";
    if (call.scalars.size() < 2 || call.scalars.size() % 2 != 0 || call.scalars.size() > 8)
      return call.intrin + " takes the slot, the swizzle and up to three (count, distance) pairs of further row " +
             "dimensions, the call passes " + std::to_string(call.scalars.size()) + " scalars";
    int64_t swizzle = 0;
    if (!as_const_int(call.scalars[1], &swizzle) || (swizzle != 0 && swizzle != 1))
      return call.intrin + " scalar swizzle is " + to_string(call.scalars[1]) + ", not 0 or 1";
    if (swizzle == 1 && (!as_const_int(call.operands[0].stride, &len) || len * bytes != 128))
      return call.intrin + " lands rows of " + to_string(call.operands[0].stride) + " elements swizzled; the " +
             "128-byte swizzle takes rows of 128 bytes (" + std::to_string(128 / bytes) + " elements)";
    // The rows' further dimensions: their counts divide the rows, each at
    // most 256, their distances whole 16-byte units.
    int64_t further = 1;
    for (size_t k = 2; k < call.scalars.size(); k += 2) {
      int64_t count = 0, distance = 0;
      if (!as_const_int(call.scalars[k], &count) || !as_const_int(call.scalars[k + 1], &distance) || count < 1 ||
          count > 256 || distance < 1 || distance * bytes % 16 != 0)
        return call.intrin + " splits its rows by (" + to_string(call.scalars[k]) + ", " +
               to_string(call.scalars[k + 1]) + "): a dimension of a box needs a constant count of 1 to 256 rows " +
               "and a positive constant distance in 16-byte units";
      further *= count;
    }
    if (!as_const_int(call.operands[0].stride, &len) || len <= 0 || n % len != 0 || len * bytes % 16 != 0 ||
        len > 256 || n / len / further > 256)
      return call.intrin + " copies a box of " + to_string(call.operands[0].stride) + "-element rows, " +
             std::to_string(n) + " elements in all: its rows need whole 16-byte units, at most 256 of at most 256 " +
             "elements in each dimension";
    if ((n / len) % further != 0)
      return call.intrin + " splits its " + std::to_string(n / len) + " rows into further dimensions of " +
             std::to_string(further) + " rows, which do not divide them";
    if (!as_const_int(call.operands[1].stride, &stride) || stride < len || stride * bytes % 16 != 0)
      return call.intrin + " reads rows " + to_string(call.operands[1].stride) + " elements apart in the source; " +
             "they need a constant distance of at least a row (" + std::to_string(len) + "), in 16-byte units";
    return "";
  }
  if (call.intrin.rfind(kCudaWgmmaPrefix, 0) == 0 && call.scalars.size() == h->scalars.size()) {
    // The descriptors' strides: whole 16-byte units below 2^18 bytes; the
    // majors 0 or 1.
    const int64_t bytes = h->operands[1].dtype.bytes();
    for (size_t k = 0; k + 1 < call.scalars.size(); ++k) {
      const std::string& n = h->scalars[k];
      int64_t v = 0;
      if (!as_const_int(call.scalars[k], &v)) return call.intrin + " scalar " + n + " is not a constant";
      if (n.find("major") != std::string::npos || n.find("swizzle") != std::string::npos) {
        if (v != 0 && v != 1) return call.intrin + " scalar " + n + " is " + std::to_string(v) + ", not 0 or 1";
      } else if (v <= 0 || v * bytes % 16 != 0 || v * bytes >= (int64_t{1} << 18)) {
        return call.intrin + " scalar " + n + " is " + std::to_string(v) + " elements: the tiles of a wgmma " +
               "operand need to be a positive multiple of 16 bytes apart, below 256 KiB";
      }
    }
    // A swizzled operand's strips and groups of 8 rows start at 1024-byte
    // boundaries, where the swizzle's pattern restarts.
    for (const auto& [first, operand] : {std::make_pair(0, size_t{1}), std::make_pair(3, size_t{2})})
      if (cuda_wgmma_reads_swizzled(call, operand))
        for (int k : {first, first + 1})
          if (*as_const_int(call.scalars[k]) * bytes % 1024 != 0)
            return call.intrin + " scalar " + h->scalars[k] + " is " + to_string(call.scalars[k]) +
                   " elements: a swizzled operand's strips and groups of 8 rows need to be a multiple of 1024 bytes "
                   "apart";
  }
  if (call.intrin == kCudaWgmmaCommitWait && call.scalars.size() == 1) {
    int64_t v = 0;
    if (!as_const_int(call.scalars[0], &v) || v < 0 || v > 7)
      return call.intrin + " scalar in_flight is " + to_string(call.scalars[0]) +
             ": wgmma.wait_group takes a constant count of 0 to 7 groups left in flight";
  }
  if (!h->scalars.empty()) {
    if (call.scalars.size() != h->scalars.size())
      return call.intrin + " takes " + std::to_string(h->scalars.size()) + " scalars, the call passes " +
             std::to_string(call.scalars.size());
    for (size_t k = 0; k < h->scalars.size(); ++k) {
      const std::string& n = h->scalars[k];
      if (n == "k") {
        // A tile row holds at most 64 bytes, in whole 4-byte words.
        int64_t v = 0;
        const int64_t bytes = call.operands[1].buffer->pointee.bytes();
        if (!as_const_int(call.scalars[k], &v)) return call.intrin + " scalar k is not a constant";
        if (v < 1 || v * bytes > 64 || v * bytes % 4 != 0)
          return call.intrin + " scalar k is " + std::to_string(v) + ": a's rows per product must be whole 4-byte " +
                 "words of at most 64 bytes";
        continue;
      }
      const bool rows = n.rfind("rows", 0) == 0, steps = n.rfind("steps", 0) == 0;
      if (!rows && !steps) continue;
      int64_t v = 0;
      if (!as_const_int(call.scalars[k], &v)) return call.intrin + " scalar " + n + " is not a constant";
      // A tile holds 1 to 16 rows; a second row group may be absent (0).
      const int64_t least = n == "rows1" ? 0 : 1, most = rows ? 16 : INT64_MAX;
      if (v < least || v > most)
        return call.intrin + " scalar " + n + " is " + std::to_string(v) + ", out of [" + std::to_string(least) + ", " +
               (rows ? "16" : "any") + "]";
    }
  }
  return "";
}

int64_t HwInstruction::steps_of(const TensorIntrinCallNode& call) const {
  for (size_t k = 0; k < operands.size() && k < call.operands.size(); ++k) {
    int64_t e = 0;
    if (operands[k].steps && as_const_int(call.operands[k].extent, &e)) return e / operands[k].extent;
  }
  return 1;
}

}  // namespace kiln
