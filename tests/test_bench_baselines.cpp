// The baseline contenders of `kiln bench` (baselines/): oneDNN, OpenBLAS
// and the Halide helper process compute the same values as kiln's
// reference interpreter on every op family of the smoke suite, including
// transposed operands, fused epilogues, groups, NHWC and pooling padding.
#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>

#include "bench/contenders/baselines.h"
#include "bench/contenders/halide_client.h"
#include "bench/bench_common.h"
#include "bench/bench_suite.h"
#include "tasks/reference_check.h"
#include "codegen/runtime_dtype.h"
#include "base/error.h"
#include "support/temp_dir.h"
#include "support/skip.h"

using namespace kiln;

namespace {

struct Arrays {
  std::vector<rt::NDArray> inputs;
  rt::NDArray out;
};

std::vector<int64_t> shape_of(const Tensor& t) {
  std::vector<int64_t> s;
  for (auto& e : t.shape()) s.push_back(*as_const_int(e));
  return s;
}

Arrays arrays_for(const OpInstance& op) {
  Arrays a;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    a.inputs.push_back(rt::NDArray::empty(shape_of(op.inputs[i]), to_runtime_dtype(op.inputs[i].dtype())));
    fill_bench_input(a.inputs.back(), i);
  }
  a.out = rt::NDArray::empty(shape_of(op.outputs[0]), to_runtime_dtype(op.outputs[0].dtype()));
  return a;
}

std::vector<OpInstance> smoke_ops() {
  std::vector<OpInstance> ops;
  for (auto& w : load_suite("smoke").workloads) ops.push_back(build_workload(w.text));
  // A stride in W of its own (oneDNN gets both strides).
  ops.push_back(build_workload("depthwise_conv2d:C=8,H=11,W=9,R=3,S=3,stride=2,stride_w=1,pad=1,bias=1"));
  return ops;
}

bool reads_bf16(const OpInstance& op) {
  for (const Tensor& t : op.inputs)
    if (t.dtype() == DType::bf16()) return true;
  return false;
}

// Runs `lib` on the smoke suite's ops that `pick` selects and checks each
// against the reference; returns how many ran.
int check_in_process(const std::string& lib, const std::function<bool(const OpInstance&)>& pick) {
  int covered = 0;
  for (const OpInstance& op : smoke_ops()) {
    if (!pick(op) || !baselines::baseline_supports(lib, op)) continue;
    INFO(lib << " on " << op.canonical);
    Arrays a = arrays_for(op);
    auto c = baselines::make_contender(lib, op, a.inputs, a.out);
    c->run();
    c->run();  // running again gives the same result (no state carried over)
    c->finish();
    CHECK(!c->impl().empty());
    CheckResult r = check_outputs(op, a.inputs, {a.out}, 3);
    CHECK(r.ok);
    CHECK(r.detail == "");
    ++covered;
  }
  return covered;
}

}  // namespace

TEST_CASE("oneDNN contenders agree with the reference on every op family") {
  if (!baselines::baseline_available("onednn"))
    KILN_SKIP("onednn is not available: " << baselines::baseline_unavailable_reason("onednn"));
  CHECK(check_in_process("onednn", [](const OpInstance& op) { return !reads_bf16(op); }) >= 10);
}

TEST_CASE("the quantized ops' u8 inputs keep 7 bits, others their whole range") {
  rt::NDArray u8 = rt::NDArray::empty({4096}, rt::DataType::u8());
  rt::NDArray s8 = rt::NDArray::empty({4096}, rt::DataType::i8());
  fill_bench_input(u8, 0);
  fill_bench_input(s8, 1);
  int u8_max = 0, s8_min = 0;
  for (int i = 0; i < 4096; ++i) {
    u8_max = std::max<int>(u8_max, u8.data_as<uint8_t>()[i]);
    s8_min = std::min<int>(s8_min, s8.data_as<int8_t>()[i]);
  }
  CHECK(u8_max == 127);
  CHECK(s8_min == -128);
}

// oneDNN runs bf16 GEMMs and convolutions only on CPUs with AVX-512:
// elsewhere it creates no primitive, and the bench shows n/a.
TEST_CASE("oneDNN's bf16 contenders agree with the reference") {
  if (!baselines::baseline_available("onednn"))
    KILN_SKIP("onednn is not available: " << baselines::baseline_unavailable_reason("onednn"));
  OpInstance probe = build_workload("matmul:M=5,N=32,K=8,dtype=bf16");
  Arrays a = arrays_for(probe);
  try {
    baselines::make_contender("onednn", probe, a.inputs, a.out);
  } catch (const UserError& e) {
    KILN_SKIP("oneDNN runs no bf16 GEMM on this CPU: " << e.what());
  }
  CHECK(check_in_process("onednn", reads_bf16) >= 2);
}

TEST_CASE("OpenBLAS contenders agree with the reference on the GEMM ops") {
  if (!baselines::baseline_available("openblas"))
    KILN_SKIP("openblas is not available: " << baselines::baseline_unavailable_reason("openblas"));
  CHECK(check_in_process("openblas", [](const OpInstance&) { return true; }) >= 3);
}

TEST_CASE("OpenBLAS has no contender for convolutions") {
  OpInstance op = build_workload("conv2d:C=2,H=5,W=5,K=2,R=3,S=3");
  CHECK_FALSE(baselines::baseline_supports("openblas", op));
  CHECK(baselines::baseline_supports("onednn", op));
}

TEST_CASE("making an OpenBLAS contender for a convolution is a user error") {
  if (!baselines::baseline_available("openblas"))
    KILN_SKIP("openblas is not available: " << baselines::baseline_unavailable_reason("openblas"));
  OpInstance op = build_workload("conv2d:C=2,H=5,W=5,K=2,R=3,S=3");
  Arrays a = arrays_for(op);
  CHECK_THROWS_AS(baselines::make_contender("openblas", op, a.inputs, a.out), UserError);
}

TEST_CASE("a contender's wrong output fails the check") {
  if (!baselines::baseline_available("onednn"))
    KILN_SKIP("onednn is not available: " << baselines::baseline_unavailable_reason("onednn"));
  OpInstance op = build_workload("matmul:M=5,N=6,K=7,bias=1,relu=1");
  Arrays a = arrays_for(op);
  auto c = baselines::make_contender("onednn", op, a.inputs, a.out);
  c->run();
  c->finish();
  REQUIRE(check_outputs(op, a.inputs, {a.out}, 3).ok);
  a.out.data_as<float>()[7] += 0.5f;
  CHECK_FALSE(check_outputs(op, a.inputs, {a.out}, 3).ok);
}

TEST_CASE("the Halide helper autoschedules, runs and times ops that agree with the reference") {
  if (baselines::halide_helper_path().empty()) {
    KILN_SKIP("halide: " << baselines::baseline_unavailable_reason("halide"));
  }
  setenv("HL_BEAM_SIZE", "1", 1);  // greedy Adams2019: seconds, not minutes
  baselines::HalideHelper h(2);
  CHECK(h.version().find("Halide") == 0);
  // A few families here (JIT compiles take a while); cli_bench.sh runs Halide
  // on the whole smoke suite and fails on any output that differs.
  int covered = 0;
  for (const char* w :
       {"matmul:M=16,N=20,K=12,trans_a=1,trans_b=1,bias=1,gelu=1",
        "conv2d:N=1,C=8,H=11,W=11,K=8,R=3,S=3,stride=2,pad=1,groups=2,bias=1,relu=1", "layer_norm:M=9,N=40"}) {
    OpInstance op = build_workload(w);
    INFO("Halide on " << op.canonical);
    Arrays a = arrays_for(op);
    std::string impl = h.setup(baselines::contender_op(op), a.inputs, a.out);
    CHECK(impl.find("Adams2019") != std::string::npos);
    CHECK(check_outputs(op, a.inputs, {a.out}, 3).ok);
    rt::TimeOptions t;
    t.repeat = 2;
    CHECK(h.time_round(t) > 0);
    ++covered;
  }
  CHECK(covered == 3);
  // A failing setup is a user error, and the helper keeps serving.
  OpInstance bad = build_workload("elemwise:M=2,N=2");
  Arrays b = arrays_for(bad);
  CHECK_THROWS_AS(h.setup(baselines::contender_op(bad), b.inputs, b.out), UserError);
  CHECK(h.version().find("Halide") == 0);
}

TEST_CASE("a baseline that is not here is a message naming the Debian package, never a failed start") {
  // Plug-ins are opened once per process, so each case runs in a child.
  auto reason_in_child = [](const std::string& dir, const std::string& lib) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      setenv("KILN_PLUGIN_DIR", dir.c_str(), 1);
      const std::string why = baselines::baseline_unavailable_reason(lib);
      (void)!::write(fds[1], why.data(), why.size());
      ::_exit(0);
    }
    ::close(fds[1]);
    std::string out;
    char buf[512];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    return out;
  };
  testing::TempDir empty;
  CHECK_THAT(reason_in_child(empty.path, "onednn"),
             Catch::Contains("no libkiln-contender-onednn.so in " + empty.path) && Catch::Contains("libdnnl-dev"));
  CHECK_THAT(reason_in_child(empty.path, "openblas"), Catch::Contains("libopenblas-dev"));
  // A plug-in that cannot be loaded (here: not an ELF file at all).
  testing::TempDir broken;
  broken.write("libkiln-contender-onednn.so", "not a shared object");
  CHECK_THAT(reason_in_child(broken.path, "onednn"),
             Catch::Contains("cannot load the oneDNN contender") && Catch::Contains("install Debian's libdnnl2"));
  CHECK_THROWS_WITH(baselines::baseline_unavailable_reason("mkl"), Catch::Contains("unknown baseline 'mkl'"));
}
