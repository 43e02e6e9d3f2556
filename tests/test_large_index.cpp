// 64-bit indices: a tensor of 2^31 elements or more is indexed in i64 (a
// fused axis that counts that many iterations loops in i64, and
// storage_flatten computes the flat index of such a buffer in i64), while
// smaller ones keep i32. The IR checks run everywhere; the "[.large]" case
// runs the kernels on 3 tensors of 2^31+ bytes each (about 6 GiB) and is
// labelled `large` (scripts/test.sh runs it with KILN_LARGE_TESTS=1).
#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>

#include "codegen/build.h"
#include "codegen/runtime_dtype.h"
#include "compute/ir_functor.h"
#include "compute/printer.h"
#include "kernels/elemwise.h"
#include "kernels/op_registry.h"
#include "runtime/ndarray.h"
#include "schedule/lower.h"
#include "support/skip.h"

using namespace kiln;

namespace {

// 65536 * 32771 = 2^31 + 196608 elements: past the i32 range, and 32771 is
// prime, so every vectorized schedule has a tail.
const char* kWorkload = "elemwise:M=65536,N=32771,dtype=i8";
constexpr int64_t kElements = int64_t{65536} * 32771;

CpuInfo cpu() {
  CpuInfo c;
  c.vector_bits = 512;
  c.num_threads = 2;
  return c;
}

// The default (hand) schedule of elemwise fuses the two axes into one of 2^31+ iterations.
ScheduledOp fused_schedule(const OpInstance& op) { return find_op(op.op).default_schedule(op, cpu()); }

// Rows in parallel, columns split by 64 and vectorized: no fused axis, so
// every loop is i32 and only the flat index (row * 32771 + col) needs i64.
ScheduledOp row_schedule(const OpInstance& op) {
  const Tensor& out = op.outputs[0];
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& s = *sch;
  s[op.parts.at("t1")].compute_inline();
  s[op.parts.at("t2")].compute_inline();
  Stage so = s[out];
  IterVar jo, ji;
  so.split(so.axis()[1], 64, &jo, &ji);
  so.parallel(so.axis()[0]);
  so.vectorize(ji);
  return ScheduledOp{sch, op.args()};
}

struct IndexTypes {
  std::vector<DType> loop_vars, load_indices, store_indices;
  int ramps = 0, accesses = 0;  // contiguous (ramp) accesses among the vector ones
};

IndexTypes index_types(const LoweredFunc& f) {
  IndexTypes t;
  post_order_visit(f.body, [&](const Ref<Object>& n) {
    if (auto* l = n.as<ForNode>()) t.loop_vars.push_back(l->loop_var.dtype());
    const Expr* index = nullptr;
    if (auto* l = n.as<LoadNode>()) {
      t.load_indices.push_back(l->index.dtype());
      index = &l->index;
    }
    if (auto* st = n.as<StoreNode>()) {
      t.store_indices.push_back(st->index.dtype());
      index = &st->index;
    }
    if (index && index->dtype().lanes > 1) {
      ++t.accesses;
      t.ramps += index->as<RampNode>() != nullptr;
    }
  });
  return t;
}

bool all_i64(const std::vector<DType>& ts) {
  return !ts.empty() && std::all_of(ts.begin(), ts.end(), [](DType t) { return t.element_of() == DType::i64(); });
}

// Deterministic inputs covering the whole i8 range, cheap for 2^31 elements.
int8_t input_a(int64_t k) { return static_cast<int8_t>((static_cast<uint64_t>(k) * 2654435761u) >> 13); }
int8_t input_b(int64_t k) { return static_cast<int8_t>((static_cast<uint64_t>(k) * 40503u + 7) >> 5); }

// The elemwise chain in i8 with wrap-around: relu(A*B+1) * 3 - A.
int8_t expected(int8_t a, int8_t b) {
  int8_t t1 = static_cast<int8_t>(a * b + 1);
  int8_t t2 = std::max<int8_t>(t1, 0);
  return static_cast<int8_t>(t2 * 3 - a);
}

int64_t available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

// Runs the schedule on the deterministic inputs; "" when every one of the
// 2^31+ output elements is right, else the first wrong one.
std::string run_and_check(const ScheduledOp& so) {
  LoweredFunc f = lower(*so.schedule, so.args, "kernel");
  auto jit = JitModule::compile({f}, Target::host());
  std::vector<rt::NDArray> arrays;
  std::vector<void*> ptrs;
  for (const BufferArg& a : f.args) {
    arrays.push_back(rt::NDArray::empty(a.shape, to_runtime_dtype(a.dtype)));
    ptrs.push_back(arrays.back().data());
  }
  REQUIRE(arrays[0].num_elements() == kElements);
  auto* A = static_cast<int8_t*>(ptrs[0]);
  auto* B = static_cast<int8_t*>(ptrs[1]);
  auto* out = static_cast<int8_t*>(ptrs[2]);
  for (int64_t k = 0; k < kElements; ++k) {
    A[k] = input_a(k);
    B[k] = input_b(k);
  }
  std::fill(out, out + kElements, int8_t{0x55});  // garbage: every element must be written
  int32_t rc = jit->get_function(f.name)(ptrs.data());
  if (rc != 0) return "kernel returned " + std::to_string(rc);
  for (int64_t k = 0; k < kElements; ++k)
    if (out[k] != expected(A[k], B[k]))
      return "out[" + std::to_string(k) + "] = " + std::to_string(out[k]) + ", expected " +
             std::to_string(expected(A[k], B[k]));
  return "";
}

}  // namespace

TEST_CASE("64-bit indices: a fused axis of 2^31 iterations or more loops and indexes in i64", "[index64]") {
  OpInstance op = build_workload(kWorkload);
  LoweredFunc f = lower(*fused_schedule(op).schedule, op.args(), "kernel");
  INFO(to_string(f));
  IndexTypes t = index_types(f);
  CHECK(all_i64(t.loop_vars));
  CHECK(all_i64(t.load_indices));
  CHECK(all_i64(t.store_indices));
  CHECK(t.accesses > 0);
  CHECK(t.ramps == t.accesses);  // still contiguous vector loads and stores
}

TEST_CASE("64-bit indices: i32 loops over a buffer of 2^31 elements or more get an i64 flat index", "[index64]") {
  OpInstance op = build_workload(kWorkload);
  LoweredFunc f = lower(*row_schedule(op).schedule, op.args(), "kernel");
  INFO(to_string(f));
  IndexTypes t = index_types(f);
  for (DType d : t.loop_vars) CHECK(d == DType::i32());
  CHECK(all_i64(t.load_indices));
  CHECK(all_i64(t.store_indices));
  CHECK(t.accesses > 0);
  CHECK(t.ramps == t.accesses);  // the widened index of the vector lanes stays a ramp
}

TEST_CASE("64-bit indices: buffers under 2^31 elements keep i32 indices", "[index64]") {
  // 2^31 - 1 elements would not fit a test's memory, but lowering does not
  // allocate: 46341 * 46340 = 2147441940 < 2^31.
  OpInstance op = build_workload("elemwise:M=46341,N=46340,dtype=i8");
  for (const ScheduledOp& so : {fused_schedule(op), row_schedule(op)}) {
    LoweredFunc f = lower(*so.schedule, op.args(), "kernel");
    INFO(to_string(f));
    IndexTypes t = index_types(f);
    for (DType d : t.loop_vars) CHECK(d == DType::i32());
    for (DType d : t.load_indices) CHECK(d.element_of() == DType::i32());
    for (DType d : t.store_indices) CHECK(d.element_of() == DType::i32());
  }
}

TEST_CASE("64-bit indices: kernels over 2^31+ elements compute every element", "[.large]") {
  constexpr int64_t kNeed = 7 * (int64_t{1} << 30);  // three 2 GiB tensors and some room
  if (available_memory_bytes() < kNeed)
    KILN_SKIP("needs " << (kNeed >> 30) << " GiB of available memory, the machine has "
                       << (available_memory_bytes() >> 30) << " GiB");
  OpInstance op = build_workload(kWorkload);
  SECTION("fused i64 axis") { CHECK(run_and_check(fused_schedule(op)) == ""); }
  SECTION("i32 loops, i64 flat index") { CHECK(run_and_check(row_schedule(op)) == ""); }
}
