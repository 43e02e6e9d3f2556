// The benchmark suites (bench/suites/*.txt): every built-in suite parses and
// names only valid workloads of registered ops; suite files and names are
// resolved as documented and bad ones are clear user errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <set>

#include "bench/bench_suite.h"
#include "base/error.h"
#include "codegen/cuda_codegen.h"
#include "kernels/op_registry.h"
#include "support/gpu_check.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "tasks/kernel_build.h"

using namespace kiln;
using kiln::testing::TempDir;

namespace {

std::string error_of(const std::string& arg) {
  try {
    load_suite(arg);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("every built-in suite names valid workloads of registered ops") {
  auto names = suite_names();
  for (const char* want : {"resnet50", "resnet50-int8", "resnet50-bf16", "bert-base", "bert-base-bf16", "bert-base-int8", "mobilenet-v2",
                           "mobilenet-v3",
                           "smoke", "cuda-smoke",
                           "cuda-resnet50", "cuda-resnet50-b16", "cuda-bert-base", "cuda-bert-base-512",
                           "cuda-matmul-f16", "cuda-bert-base-f16", "cuda-bert-base-bf16", "cuda-resnet50-f16"})
    CHECK(std::find(names.begin(), names.end(), want) != names.end());
  for (auto& name : names) {
    Suite s = load_suite(name);
    CHECK(s.name == name);
    CHECK(!s.workloads.empty());
    for (auto& w : s.workloads) {
      INFO(name << " line " << w.line << ": " << w.text);
      OpInstance op = build_workload(w.text);
      CHECK(op.flops > 0);
    }
  }
}

TEST_CASE("the built-in suites cover the networks' layers") {
  CHECK(load_suite("resnet50").workloads.size() == 24);  // 23 distinct convolutions and the dense
  CHECK(load_suite("bert-base").workloads.size() == 5);
  CHECK(load_suite("bert-base-bf16").workloads.size() == 5);
  CHECK(load_suite("resnet50-int8").workloads.size() == 24);
  CHECK(load_suite("resnet50-bf16").workloads.size() == 23);  // the convolutions
  for (auto& w : load_suite("resnet50-bf16").workloads) CHECK(build_workload(w.text).op == "conv2d_nchwc_bf16");
  for (auto& w : load_suite("bert-base-bf16").workloads) CHECK(build_workload(w.text).dtype == DType::bf16());
  for (auto& w : load_suite("bert-base-int8").workloads) CHECK(build_workload(w.text).op[0] == 'q');
  auto smoke = load_suite("smoke");
  std::set<std::string> ops;
  for (auto& w : smoke.workloads) ops.insert(build_workload(w.text).op);
  // The smoke suite exercises every op family that has a baseline.
  for (const char* op : {"matmul", "batch_matmul", "dense", "conv2d", "conv2d_nhwc", "conv2d_nchwc", "depthwise_conv2d",
                         "max_pool2d", "avg_pool2d", "softmax", "layer_norm"})
    CHECK(ops.count(op) == 1);
}

TEST_CASE("suite files: comments, blank lines and line numbers") {
  TempDir tmp;
  std::string path =
      tmp.write("kiln_suite_test.txt",
                "# a comment\n\n  matmul:M=4,N=4,K=4   # trailing comment\n\t\nconv2d:C=1,H=5,W=5,K=1,R=1,S=1\n");
  Suite s = load_suite(path);
  CHECK(s.name == "kiln_suite_test");
  REQUIRE(s.workloads.size() == 2);
  CHECK(s.workloads[0].text == "matmul:M=4,N=4,K=4");
  CHECK(s.workloads[0].line == 3);
  CHECK(s.workloads[1].line == 5);
  std::remove(path.c_str());
}

TEST_CASE("bad suites are user errors in the user's terms") {
  TempDir tmp;
  std::string unknown = error_of("no-such-suite");
  CHECK(unknown.find("unknown suite 'no-such-suite'") != std::string::npos);
  CHECK(unknown.find("resnet50") != std::string::npos);
  CHECK(error_of("/nonexistent/dir/suite.txt").find("does not exist") != std::string::npos);
  std::string empty = tmp.write("kiln_suite_empty.txt", "# nothing here\n\n");
  CHECK(error_of(empty).find("has no workloads") != std::string::npos);
  std::remove(empty.c_str());
}

// The GPU suites (`kiln bench --target cuda`): every workload has a cuda
// template whose default config lowers for sm_90 and prints CUDA C; with
// NVRTC here, the small suites' kernels and a sample of the large ones
// compile for sm_90 within its limits.
TEST_CASE("the cuda suites: every workload builds a cuda kernel for sm_90", "[bench][gpu]") {
  CHECK(load_suite("cuda-resnet50").workloads.size() == 24);  // as resnet50, in NHWC
  CHECK(load_suite("cuda-resnet50-b16").workloads.size() == 24);
  CHECK(load_suite("cuda-bert-base").workloads.size() == 7);
  CHECK(load_suite("cuda-bert-base-512").workloads.size() == 7);
  std::set<std::string> smoke_ops;
  for (auto& w : load_suite("cuda-smoke").workloads) smoke_ops.insert(build_workload(w.text).op);
  for (const char* op : {"matmul", "batch_matmul", "dense", "conv2d", "conv2d_nhwc", "depthwise_conv2d", "max_pool2d",
                         "avg_pool2d", "softmax", "layer_norm"})
    CHECK(smoke_ops.count(op) == 1);
  for (auto& w : load_suite("cuda-resnet50-b16").workloads) CHECK(build_workload(w.text).ints.at("N") == 16);
  for (auto& w : load_suite("cuda-bert-base-512").workloads) CHECK(w.text.find("512") != std::string::npos);
  // The 16-bit suites: bert-base's GEMMs in f16 and bf16, the resnet50
  // convolutions of cuda-resnet50 in f16, and f16 GEMMs led by 4096^3.
  CHECK(load_suite("cuda-bert-base-f16").workloads.size() == 5);
  CHECK(load_suite("cuda-bert-base-bf16").workloads.size() == 5);
  CHECK(load_suite("cuda-resnet50-f16").workloads.size() == 23);
  CHECK(load_suite("cuda-matmul-f16").workloads.at(0).text == "matmul:M=4096,N=4096,K=4096,dtype=f16");
  for (auto [name, dtype] : {std::pair{"cuda-matmul-f16", DType::f16()},
                             {"cuda-bert-base-f16", DType::f16()},
                             {"cuda-bert-base-bf16", DType::bf16()},
                             {"cuda-resnet50-f16", DType::f16()}})
    for (auto& w : load_suite(name).workloads) {
      INFO(name << " line " << w.line << ": " << w.text);
      const OpInstance op = build_workload(w.text);
      CHECK(op.dtype == dtype);
      const bool convolutions = std::string(name) == "cuda-resnet50-f16";
      CHECK((convolutions ? op.op == "conv2d_nhwc" : op.op.find("matmul") != std::string::npos));
    }
  const Suite resnet = load_suite("cuda-resnet50"), resnet_f16 = load_suite("cuda-resnet50-f16");
  for (size_t i = 0; i < resnet_f16.workloads.size(); ++i)
    CHECK(resnet_f16.workloads[i].text == resnet.workloads.at(i).text + ",dtype=f16");

  for (const char* name : {"cuda-smoke", "cuda-resnet50", "cuda-resnet50-b16", "cuda-bert-base", "cuda-bert-base-512",
                           "cuda-matmul-f16", "cuda-bert-base-f16", "cuda-bert-base-bf16", "cuda-resnet50-f16"})
    for (auto& w : load_suite(name).workloads) {
      INFO(name << " line " << w.line << ": " << w.text);
      BuiltKernel k = build_kernel(w.text, "cuda -arch=sm_90");
      CHECK(k.gpu.arch == "sm_90");
      // The 16-bit GEMMs run on tensor cores by default, as cuBLAS does.
      if (k.op.dtype.bits == 16 && k.op.op.find("matmul") != std::string::npos)
        CHECK(k.config.value("tensor_core", "") == "mma");
      const CudaSource src = emit_cuda(k.func, k.gpu);
      CHECK(src.code.find("__global__") != std::string::npos);
      CHECK(!src.launches.empty());
    }
}

TEST_CASE("the cuda suites: NVRTC compiles their default kernels for sm_90", "[bench][gpu]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC is not installed: " << why);
  for (const char* name : {"cuda-smoke", "cuda-resnet50", "cuda-resnet50-b16", "cuda-bert-base", "cuda-bert-base-512",
                           "cuda-matmul-f16", "cuda-bert-base-f16", "cuda-bert-base-bf16", "cuda-resnet50-f16"}) {
    const Suite s = load_suite(name);
    for (size_t i = 0; i < s.workloads.size(); ++i) {
      // The resnet50 suites: a sample (every 6th layer and the dense);
      // test_gpu_conv_templates compiles their layer shapes too.
      if (std::string(name).find("resnet50") != std::string::npos && i % 6 != 0 && i + 1 != s.workloads.size())
        continue;
      const auto& w = s.workloads[i];
      INFO(name << " line " << w.line << ": " << w.text);
      BuiltKernel k = build_kernel(w.text, "cuda -arch=sm_90");
      CHECK(kiln::testing::compile_for_gpu(emit_cuda(k.func, k.gpu), k.gpu, kiln::testing::kDefaultConfigSpillBytes) ==
            "");
    }
  }
}
