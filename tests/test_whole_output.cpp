// Every tuning task carries its whole reference output: the interpreter's
// for small tasks, the default schedule's (checked against the interpreter
// on sampled elements, computed in a child process) for large ones.
#include <catch2/catch.hpp>
#include <cstring>

#include "codegen/runtime_dtype.h"
#include "compute/interpreter.h"
#include "runtime/ndarray.h"
#include "runtime/process_util.h"
#include "tasks/task_factory.h"

using namespace kiln;

namespace {

// The interpreter's value of `op`'s first output at `flat` for the task's inputs.
double interpreted_at(const std::string& workload, const Task& task, int64_t flat) {
  OpInstance op = build_workload(workload);
  std::vector<std::pair<Tensor, HostTensor>> inputs;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const BufferArg& a = task.args[i];
    rt::NDArray arr = rt::NDArray::empty(a.shape, to_runtime_dtype(a.dtype));
    arr.fill_random(task.input_seed + i);
    HostTensor h(a.dtype, a.shape);
    std::memcpy(h.bytes.data(), arr.data(), arr.nbytes());
    inputs.emplace_back(op.inputs[i], h);
  }
  const std::vector<int64_t>& shape = task.args[task.num_inputs].shape;
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return interpret_at(op.outputs[0], inputs, {idx}).get_float(0);
}

void check_whole(const std::string& workload) {
  const Task task = make_task(workload, Target::host());
  REQUIRE(task.reference.size() == 1);
  const ReferenceSample& ref = task.reference[0];
  CHECK(ref.whole());
  int64_t n = 1;
  for (int64_t d : task.args[task.num_inputs].shape) n *= d;
  REQUIRE(static_cast<int64_t>(ref.expected.size()) == n);
  for (int64_t flat : {int64_t{0}, n / 3, n - 1}) {
    INFO(workload << " element " << flat);
    const double want = interpreted_at(workload, task, flat);
    CHECK(std::fabs(ref.expected[static_cast<size_t>(flat)] - want) <= 1e-3 * (1 + std::fabs(want)));
  }
}

}  // namespace

TEST_CASE("a small task's reference is the interpreter's whole output") {
  check_whole("matmul:M=33,N=17,K=9,bias=1,relu=1");
  check_whole("conv2d:C=3,H=7,W=9,K=5,R=3,S=3,pad=1");
}

TEST_CASE("a large task's reference is the default schedule's whole output, computed outside this process") {
  check_whole("matmul:M=512,N=384,K=256");  // 1e8 FLOPs: beyond the interpreter's share
  CHECK(proc::count_threads() == 1);        // the tuning process may still fork
}
