// The hardware instructions tensor intrinsics' lowerings may call
// (TensorIntrinCallNode), listed explicitly per target. Each entry says
// what its operands hold; the IR verifier checks calls against it, and the
// backends (codegen/) emit each for the targets that have the feature.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compute/dtype.h"
#include "compute/stmt.h"
#include "compute/tensor.h"

namespace kiln {

struct HwOperand {
  HwOperand(std::string r, DType t, int64_t e, bool w, bool st = false, std::optional<MemScope> sc = {})
      : role(std::move(r)), dtype(t), extent(e), written(w), steps(st), scope(sc) {}
  std::string role;    // "acc", "a", "b"
  DType dtype;         // the element type of the buffer it points into
  int64_t extent;      // elements read (and written) from its offset on
  bool written;        // the instruction writes it (read-modify-write)
  // The call covers a positive multiple of `extent` (a loop of steps the
  // instruction runs inside, e.g. the k steps of an AMX tile product), the
  // same multiple for every such operand of the call.
  bool steps = false;
  // Where the buffer must live (any scope when empty): tensor-core fragments
  // are warp scope, ldmatrix reads shared memory.
  std::optional<MemScope> scope;
};

struct HwInstruction {
  std::string name;     // "x86.vpdpbusd.512"
  std::string backend;  // "llvm" or "cuda"
  std::string feature;  // what the target must have: an LLVM CPU feature ("avx512vnni") or a cuda arch ("sm_80")
  // Operands of extent 0 are laid out by the call's scalars (rows, steps
  // and strides), not a number of elements.
  std::vector<HwOperand> operands;
  std::string semantics;  // what it computes, in terms of the operands
  // The scalars a call passes, by name, when the instruction fixes them
  // (empty: any, as an optional predicate). Those named rows* and steps*
  // are constants: rows 1 to 16 (rows1 may be 0), steps at least 1.
  std::vector<std::string> scalars = {};
  // The number of k steps a call covers (1 without `steps` operands).
  int64_t steps_of(const TensorIntrinCallNode& call) const;
};

// The tensor-core instructions of one 16-bit input type (f16 or bf16).
struct CudaMmaInstructions {
  std::string load_a_mk, load_a_km, load_b_kn, load_b_nk, mma;
};
CudaMmaInstructions cuda_mma_instructions(DType input);
// The accumulator fragment's reset and store (f32, any input type).
constexpr const char* kCudaMmaZero = "cuda.mma.zero.16x8";
constexpr const char* kCudaMmaStore = "cuda.mma.store.16x8";

// The AMX tile products of a tile group of rows (a convolution's output
// pixels): "x86.amx.dpbusd.tiles" (u8 x i8 into i32) and
// "x86.amx.dpbf16ps.tiles" (bf16 into f32), each with a ".set" form that
// starts from zeroed tiles. Their scalars, in order (amx_tiles_scalars):
// rows0 and rows1 (the rows of the two row groups, 1 to 16; rows1 0 for
// one group), steps1, steps2 and steps3 (the k steps, three nested loops,
// steps3 innermost), then the strides in elements: acc's row and group,
// a's row, group and per step loop, b's row and per step loop; last, k: the
// elements of a's rows per product (64 bytes, a full tile row, or fewer:
// a 7-tap kernel row of 4 channels is 28), b's rows per step k / (4 /
// bytes), one b row stride apart.
constexpr const char* kAmxTilesInt8 = "x86.amx.dpbusd.tiles";
constexpr const char* kAmxTilesBf16 = "x86.amx.dpbf16ps.tiles";
const std::vector<std::string>& amx_tiles_scalars();

// The 16 x 16 transpose of 32-bit words of `t` (f32; bf16 pairs; i8 or u8
// quads): dst row i, word j = src row j, word i. Each operand is 16 rows of
// 16 words (64 bytes), its row stride (the call's stride, in elements) apart;
// every word moves whole. Sixteen row loads, the transpose in registers,
// sixteen row stores.
std::string x86_transpose_instruction(DType t);
const std::vector<DType>& x86_transpose_types();
// The interleave of g = 4 / bytes(t) rows of 16 elements of `t` (bf16 pairs;
// i8 or u8 quads) into 16 words: dst[j * g + e] = src[e * stride + j] for
// j < 16, e < g. src's rows are the call's stride apart; dst is one
// contiguous 64-byte block. Row loads, shuffles, one store.
std::string x86_interleave_instruction(DType t);
const std::vector<DType>& x86_interleave_types();

constexpr const char* kCudaWgmmaPrefix = "cuda.wgmma.";
// Hopper's warpgroup tensor-core product (wgmma.mma_async, sm_90a only),
// m64nNk16 with f16 or bf16 inputs into f32, both operands read from shared
// memory through descriptors. Declared per warp: acc is the warp's 16 x N
// accumulators, N / 8 fragments of mma.m16n8k16's layout one after another
// (wgmma's register layout is that, warp by warp); a the warp's 16 rows of
// A. The four warps of a warpgroup call it together and the printer hands
// the hardware the group's first row. Both operands are stored in 8 x 8
// tiles (Stage::storage_tile(8, 8)); the scalars (cuda_wgmma_scalars) give
// the distance in elements between tiles along A's m and k and B's k and n,
// whether each tile holds A's m (B's n) along its rows (MN-major; else K
// runs along them), whether each operand is stored 128-byte swizzled
// instead (Stage::storage_swizzle: the distances are then between strips
// and between groups of 8 rows) and the number of k steps of 16 the call
// makes.
// With `async` (the name's ".async" form), the call issues the product into
// the warpgroup's open group of wgmma operations and returns: the
// accumulators and the tiles stay the tensor cores' until a call of
// kCudaWgmmaCommitWait (scalar in_flight, 0 to 7) commits the open group and
// waits until at most in_flight groups are left in flight. A pipeline keeps
// one k tile's products in flight so (schedule/passes/inject_pipeline.h).
std::string cuda_wgmma_instruction(DType input, int64_t n, bool async = false);
bool is_cuda_wgmma_async(const std::string& instruction);
// The async form of a (synchronous) wgmma instruction's name.
std::string cuda_wgmma_async_form(const std::string& instruction);
constexpr const char* kCudaWgmmaCommitWait = "cuda.wgmma_commit_wait";
const std::vector<int64_t>& cuda_wgmma_widths();  // the N offered: 8 to 256, powers of two
const std::vector<std::string>& cuda_wgmma_scalars();
// Whether a wgmma call reads its operand `operand` (1: a, 2: b) 128-byte
// swizzled (its a_swizzle or b_swizzle scalar is 1).
bool cuda_wgmma_reads_swizzled(const TensorIntrinCallNode& call, size_t operand);

constexpr const char* kCudaCpAsyncPrefix = "cuda.cp_async.";
// The asynchronous copy of `bytes` (4, 8 or 16) of `t` from global to shared
// memory (cp.async, sm_80 and later), and the element types it is offered for.
std::string cuda_cp_async_instruction(DType t, int64_t bytes);
const std::vector<DType>& cuda_cp_async_types();

constexpr const char* kCudaBulkCopyPrefix = "cuda.bulk_copy.";
// The bulk copy of a run of `t` from global to shared memory by Hopper's
// copy engine (cp.async.bulk, sm_90), one instruction per run of elements
// (the operands' equal extents, a multiple of 16 bytes, both ends 16-byte
// aligned). Its one scalar is the slot of the warp-specialized pipeline
// whose `full` mbarrier counts the bytes (codegen/cuda_mbarrier_prelude.h);
// the element types are cp.async's.
std::string cuda_bulk_copy_instruction(DType t);

constexpr const char* kCudaTensorCopyPrefix = "cuda.tensor_copy.";
// The tensor copy of a box of rows of `t` from global to shared memory by
// Hopper's copy engine through a tensor map (cp.async.bulk.tensor, sm_90):
// both operands cover the box's n elements; dst's stride is the box's row
// length L (its rows land one after another, 128-byte aligned), src's
// stride S the distance between the box's rows in the source. Its first
// scalar is the pipeline slot whose `full` mbarrier counts the bytes, as for
// bulk copies; its second `swizzle` is 1 when the rows land 128-byte
// swizzled (rows of 128 bytes, each 16-byte chunk at chunk XOR row % 8,
// Stage::storage_swizzle's layout from a 1024-byte aligned dst, whose
// offset is then the box's place before the swizzle), else 0; up to three
// more (count, distance) pairs split the rows into further dimensions
// (compute/tensor_copy_box.h), for a map of up to 5. L, S and the
// distances are whole 16-byte units, the box at most 256 along each
// dimension. The printer passes a tensor map of the source as those
// dimensions (without pairs: S-element rows), swizzling when the copy does.
std::string cuda_tensor_copy_instruction(DType t);
// Whether a tensor copy lands 128-byte swizzled (its swizzle scalar is 1).
bool cuda_tensor_copy_swizzled(const TensorIntrinCallNode& copy);

// Every instruction, in a fixed order.
const std::vector<HwInstruction>& hw_instructions();
// The instruction of that name; user_error listing the known ones otherwise.
const HwInstruction& find_hw_instruction(const std::string& name);

// What is wrong with a call of an instruction (an unknown name, the number
// of operands, an operand's element type or a non-constant or different
// extent), or "" when it matches the instruction's entry.
std::string hw_call_problem(const TensorIntrinCallNode& call);

}  // namespace kiln
