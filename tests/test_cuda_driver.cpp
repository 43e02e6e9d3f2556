// kiln's CUDA driver runtime (runtime/cuda_driver.h) and the GPU kernel
// runner (tasks/gpu_runner.h), without a GPU: KILN_LIBCUDA points at a
// stand-in for libcuda.so.1 (support/fake_libcuda.cpp) whose "cubins" are
// emulated CUDA modules, so real kiln kernels go through the whole host
// path (device query, context, buffers, module, launches, events) and are
// checked against the reference interpreter. On a GPU machine the same
// binary still uses the stand-in; the real driver is exercised by
// `kiln run --target cuda` (cli_gpu.sh).
#include <dlfcn.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <random>

#include "codegen/cuda_codegen.h"
#include "codegen/cuda_emulation.h"
#include "codegen/gpu_build.h"
#include "codegen/runtime_dtype.h"
#include "runtime/cuda_driver.h"
#include "runtime/gpu_artifact.h"
#include "runtime/isolated_runner.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "tasks/gpu_runner.h"
#include "tasks/kernel_build.h"
#include "tasks/reference_check.h"
#include "tasks/task_factory.h"
#include "tuner/local_builder.h"
#include "tuner/local_runner.h"

using namespace kiln;
using kiln::testing::TempDir;
namespace cuda = kiln::rt::cuda;

namespace {

// Before anything opens the driver.
const bool kUseFake = [] {
  setenv("KILN_LIBCUDA", KILN_FAKE_LIBCUDA, 1);
  return true;
}();

long long fake_stat(const char* name) {
  cuda::available();  // opens the stand-in in this process
  void* h = dlopen(KILN_FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(h);
  auto fn = reinterpret_cast<long long (*)(const char*)>(dlsym(h, "kiln_fake_cuda_stat"));
  REQUIRE(fn);
  const long long v = fn(name);
  dlclose(h);
  return v;
}

void fake_reset() {
  cuda::available();  // opens the stand-in in this process
  void* h = dlopen(KILN_FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(h);
  reinterpret_cast<void (*)()>(dlsym(h, "kiln_fake_cuda_reset"))();
  dlclose(h);
}

// The stand-in's "cubin" for an emulated build of the kernel's source.
std::vector<char> fake_cubin(const CudaSource& src, const std::string& dir) { return emulated_gpu_image(src, dir); }

bool have_host_compiler() { return !host_cxx_compiler().empty(); }

}  // namespace

TEST_CASE("cuda driver: the device, its limits and the default arch come from the driver", "[gpu][driver]") {
  REQUIRE(kUseFake);
  std::string why;
  REQUIRE(cuda::available(&why));
  CHECK(cuda::driver_path() == KILN_FAKE_LIBCUDA);
  const std::vector<cuda::DeviceInfo> devs = cuda::devices();
  REQUIRE(devs.size() == 1);
  CHECK(devs[0].name == "kiln fake H100");
  CHECK(devs[0].arch() == "sm_90");
  CHECK(devs[0].sm_count == 132);
  CHECK(devs[0].l2_bytes == 50 << 20);
  CHECK(devs[0].max_block_dim[2] == 64);

  const GpuLimits g = gpu_limits_for(Target::parse("cuda"));
  CHECK(Target::parse("cuda").arch == "sm_90");
  CHECK(g.source == "device");
  CHECK(g.sm_count == 132);
  CHECK(g.max_shared_optin_per_block == 232448);
  // Another architecture than the device's keeps the table.
  CHECK(gpu_limits_for(Target::parse("cuda -arch=sm_80")).source == "table");

  CHECK_THROWS_WITH(cuda::Context(3), Catch::Contains("there is no GPU 3 (the driver reports 1)"));
}

TEST_CASE("cuda driver: kernels run from a module, checked against the interpreter", "[gpu][driver][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_cuda_driver");
  cuda::Context ctx(0);
  fake_reset();
  // The f16 convolution declares 30208 bytes of shared memory statically:
  // launched with that much again as dynamic shared memory it would pass
  // the 48 KiB a launch may have (CUDA_ERROR_INVALID_VALUE on a GPU).
  for (const std::string w : {"softmax:M=7,N=131", "matmul:M=37,N=45,K=19,bias=1,relu=1", "layer_norm:M=3,N=64",
                              "conv2d_nhwc:N=1,H=8,W=8,C=64,K=64,R=3,S=3,pad=1,dtype=f16"}) {
    INFO(w);
    BuiltKernel k = build_kernel(w, "cuda");
    const CudaSource src = emit_cuda(k.func, k.gpu);
    {
      GpuKernelRunner runner(ctx, src, k.func.args, fake_cubin(src, dir.path));
      std::vector<rt::NDArray> arrays = random_arguments(k, 7);
      runner.run(arrays, k.op.inputs.size());
      std::vector<rt::NDArray> ins(arrays.begin(), arrays.begin() + static_cast<long>(k.op.inputs.size()));
      std::vector<rt::NDArray> outs(arrays.begin() + static_cast<long>(k.op.inputs.size()), arrays.end());
      const CheckResult cr = check_outputs(k.op, ins, outs, 7);
      INFO(cr.detail);
      CHECK(cr.ok);
    }
    CHECK(fake_stat("live_buffers") == 0);
  }
  CHECK(fake_stat("launches") == 4);
}

TEST_CASE("cuda driver: a block past 48 KiB gets dynamic shared memory, the kernel opted in to it",
          "[gpu][driver][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_cuda_dynamic_shared");
  cuda::Context ctx(0);
  fake_reset();
  // A 128 x 128 tensor-core block: its f32 staging tile alone takes 65536
  // bytes (the two slots of k tiles reuse them).
  const std::string w = "matmul:M=128,N=128,K=64,dtype=f16";
  BuiltKernel k =
      build_kernel(w, "cuda", "", R"({"tensor_core":"mma","mma_m":[1,2,4],"mma_n":[1,2,8],"mma_k":[2,2],"stages":2})");
  const CudaSource src = emit_cuda(k.func, k.gpu);
  REQUIRE(src.launches.size() == 1);
  REQUIRE(src.launches[0].dynamic_shared_bytes == 65536);
  const std::vector<char> image = fake_cubin(src, dir.path);
  {
    GpuKernelRunner runner(ctx, src, k.func.args, image);
    std::vector<rt::NDArray> arrays = random_arguments(k, 3);
    runner.run(arrays, k.op.inputs.size());
    std::vector<rt::NDArray> ins(arrays.begin(), arrays.begin() + 2), outs(arrays.begin() + 2, arrays.end());
    const CheckResult cr = check_outputs(k.op, ins, outs, 3);
    INFO(cr.detail);
    CHECK(cr.ok);
  }
  // What the driver does with a kernel that is not opted in: it refuses
  // the launch, as a GPU does (CUDA_ERROR_INVALID_VALUE, not sticky).
  cuda::CudaModule module(image);
  std::vector<GpuArtifactKernel> kernels = artifact_kernels(src);
  std::vector<cuda::DeviceBuffer> buffers;
  std::vector<uint64_t> pointers;
  for (const BufferArg& a : k.func.args) {
    buffers.emplace_back(static_cast<size_t>(a.dtype.bytes() * a.shape[0] * a.shape[1]));
    pointers.push_back(buffers.back().ptr());
  }
  fake_reset();  // forgets the opt-in of the runner's kernel_launches
  std::vector<GpuArtifactKernel> unopted = kernels;
  unopted[0].dynamic_shared_bytes = 0;
  cuda::KernelLaunch l = kernel_launches(module, unopted)[0];
  l.dynamic_shared_bytes = 65536;
  CHECK_THROWS_WITH(cuda::launch({l}, pointers), Catch::Contains("cuLaunchKernel") && Catch::Contains("(1)"));
  // Opted in, but launched with less than its arrays need: the kernel fails.
  l = kernel_launches(module, kernels)[0];
  CHECK_NOTHROW(cuda::launch({l}, pointers));
  l.dynamic_shared_bytes = 40000;
  CHECK_THROWS_WITH(cuda::launch({l}, pointers), Catch::Contains("cuLaunchKernel"));
  fake_reset();
}

TEST_CASE("cuda driver: a kernel that takes tensor maps gets them encoded for its buffers at each launch",
          "[gpu][driver][emulation][tensor_copy]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_cuda_tensor_maps");
  cuda::Context ctx(0);
  fake_reset();
  // Warp-specialized, its A and B tiles moved by tensor copies (TMA).
  BuiltKernel k = build_kernel("matmul:M=64,N=48,K=160,dtype=f16", "cuda -arch=sm_90", "",
                               R"({"tensor_core":"mma","mma_k":[5,2],"stages":3,"producer_warps":1,"bulk_copy":2})");
  const CudaSource src = emit_cuda(k.func, k.gpu);
  REQUIRE(src.code.find("kiln_tensor_copy_2d(") != std::string::npos);
  const std::vector<GpuArtifactKernel> kernels = artifact_kernels(src);
  REQUIRE(kernels.size() == 1);
  REQUIRE(kernels[0].tensor_maps.size() == kernels[0].arg_indices.size());
  {
    GpuKernelRunner runner(ctx, src, k.func.args, fake_cubin(src, dir.path));
    std::vector<rt::NDArray> arrays = random_arguments(k, 11);
    runner.run(arrays, k.op.inputs.size());
    std::vector<rt::NDArray> ins(arrays.begin(), arrays.begin() + 2), outs(arrays.begin() + 2, arrays.end());
    const CheckResult cr = check_outputs(k.op, ins, outs, 11);
    INFO(cr.detail);
    CHECK(cr.ok);
  }
  CHECK(fake_stat("tensor_maps") == 2);  // A's and B's, for the one launch
  // What the driver refuses, said before it is asked.
  cuda::DeviceBuffer buf(4096);
  rt::cuda::TensorMapSpec s = kernels[0].tensor_maps[3];
  CHECK_THROWS_WITH(cuda::encode_tensor_map(s, buf.ptr() + 8),
                    Catch::Contains("cannot encode the tensor map (2-D map of 160 x 64 2-byte elements, box 32 x 64) "
                                    "of device memory at 0x") &&
                        Catch::Contains("a tensor map's memory starts 16-byte aligned"));
  s.strides[0] = 100;
  CHECK_THROWS_WITH(cuda::encode_tensor_map(s, buf.ptr()),
                    Catch::Contains("the stride of dimension 1 of a tensor map is 100 bytes"));
  fake_reset();
}

TEST_CASE("cuda driver: tensor maps that land 128-byte swizzled are encoded with the driver's swizzle",
          "[gpu][driver][emulation][tensor_copy][swizzle]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_cuda_tensor_maps_swizzled");
  cuda::Context ctx(0);
  fake_reset();
  // wgmma on swizzled tiles that tensor copies fill (A's 64 x 64 tile, B's
  // 64 x 128: two strips, a 3-D box).
  BuiltKernel k = build_kernel("matmul:M=64,N=128,K=128,dtype=f16", "cuda -arch=sm_90a", "",
                               R"({"tensor_core":"wgmma","wgmma_m":[1,1],"wgmma_n":[1,1,16],"mma_k":[2,4],)"
                               R"("stages":2,"producer_warps":1,"bulk_copy":2,"fill_vec":8,"swizzle":1})");
  const CudaSource src = emit_cuda(k.func, k.gpu);
  const std::vector<GpuArtifactKernel> kernels = artifact_kernels(src);
  REQUIRE(kernels.size() == 1);
  int swizzled = 0;
  for (const rt::cuda::TensorMapSpec& m : kernels[0].tensor_maps) swizzled += m.swizzle == 128;
  REQUIRE(swizzled == 2);
  {
    GpuKernelRunner runner(ctx, src, k.func.args, fake_cubin(src, dir.path));
    std::vector<rt::NDArray> arrays = random_arguments(k, 12);
    runner.run(arrays, k.op.inputs.size());
    std::vector<rt::NDArray> ins(arrays.begin(), arrays.begin() + 2), outs(arrays.begin() + 2, arrays.end());
    const CheckResult cr = check_outputs(k.op, ins, outs, 12);
    INFO(cr.detail);
    CHECK(cr.ok);
  }
  CHECK(fake_stat("tensor_maps") == 2);
  CHECK(fake_stat("tensor_maps_swizzled") == 2);
  fake_reset();
}

TEST_CASE("cuda driver: timing with events, number grown, the L2 flushed before each measurement",
          "[gpu][driver][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_cuda_time");
  cuda::Context ctx(0);
  fake_reset();
  BuiltKernel k = build_kernel("softmax:M=4,N=32", "cuda");
  const CudaSource src = emit_cuda(k.func, k.gpu);
  GpuKernelRunner runner(ctx, src, k.func.args, fake_cubin(src, dir.path));
  rt::TimeOptions o;
  o.repeat = 3;
  o.min_repeat_ms = 2;
  o.flush_cache = true;
  const rt::TimeResult r = runner.time(o);
  CHECK(r.samples_ms.size() == 3);
  CHECK(r.number >= 1);
  CHECK(r.min_ms > 0);
  // At least one flush of twice the L2 before each of the three measurements.
  CHECK(fake_stat("memset_bytes") >= 3 * 2 * (50LL << 20));
  CHECK(fake_stat("launches") >= 1 + 3 * r.number);

  rt::TimeOptions bad;
  bad.repeat = 0;
  CHECK_THROWS_AS(runner.time(bad), std::invalid_argument);
}

TEST_CASE("cuda driver: errors name the call and the driver's error, and sticky ones say the context is lost",
          "[gpu][driver][errors]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_cuda_err");
  cuda::Context ctx(0);
  fake_reset();
  const std::vector<char> junk{'n', 'o', 't', '\0'};
  try {
    cuda::CudaModule m(junk);
    FAIL("a bad image loaded");
  } catch (const cuda::CudaError& e) {
    CHECK_THAT(e.what(), Catch::Contains("cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE (200)"));
    CHECK_FALSE(e.sticky());
  }
  CHECK_THROWS_WITH(cuda::CudaModule(std::vector<char>{}), Catch::Contains("cannot load an empty cubin"));

  BuiltKernel k = build_kernel("softmax:M=4,N=32", "cuda");
  const CudaSource src = emit_cuda(k.func, k.gpu);
  const std::vector<char> image = fake_cubin(src, dir.path);
  {
    cuda::CudaModule m(image);
    CHECK_THROWS_WITH(m.kernel("nope"), Catch::Contains("cuModuleGetFunction('nope') failed: CUDA_ERROR_NOT_FOUND"));
  }

  GpuKernelRunner runner(ctx, src, k.func.args, image);
  std::vector<rt::NDArray> arrays = random_arguments(k, 3);
  setenv("KILN_FAKE_CUDA_FAIL_LAUNCH", "700", 1);
  try {
    runner.run(arrays, k.op.inputs.size());
    FAIL("the launch did not fail");
  } catch (const cuda::CudaError& e) {
    CHECK(e.sticky());
    CHECK(e.code() == 700);
    CHECK_THAT(e.what(), Catch::Contains("cuLaunchKernel('kiln_softmax_kernel0') failed: CUDA_ERROR_ILLEGAL_ADDRESS") &&
                             Catch::Contains("unusable for the rest of this process"));
  }
  unsetenv("KILN_FAKE_CUDA_FAIL_LAUNCH");
  // Every later call fails the same way, as on a GPU.
  CHECK_THROWS_AS(runner.run(arrays, k.op.inputs.size()), cuda::CudaError);
  fake_reset();
  CHECK_NOTHROW(runner.run(arrays, k.op.inputs.size()));
  {
    // A launch configuration the driver refuses is not sticky.
    cuda::CudaModule m(image);
    cuda::KernelLaunch l;
    l.function = m.kernel("kiln_softmax_kernel0");
    l.name = "kiln_softmax_kernel0";
    l.block = {{2048, 1, 1}};
    l.arg_indices = {0, 1};
    try {
      cuda::launch({l}, runner.device_pointers());
      FAIL("a block of 2048 threads launched");
    } catch (const cuda::CudaError& e) {
      CHECK_FALSE(e.sticky());
      CHECK_THAT(e.what(), Catch::Contains("cuLaunchKernel('kiln_softmax_kernel0') failed: CUDA_ERROR_INVALID_VALUE"));
    }
    CHECK_NOTHROW(runner.run(arrays, k.op.inputs.size()));
  }
  CHECK(cuda::is_sticky_error(719));
  CHECK_FALSE(cuda::is_sticky_error(2));
}

TEST_CASE("cuda tuning path: parallel GPU builds measured by a worker process, a sticky error gets a fresh one",
          "[gpu][driver][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  fake_reset();
  setenv("KILN_GPU_IMAGE", "emulated", 1);
  const Task task = make_task("softmax:M=6,N=40", Target::parse("cuda"));
  CHECK(task.target == "cuda -arch=sm_90");
  std::vector<Config> configs;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 4; ++i) configs.push_back(task.space->random(rng));
  LocalBuilderOptions bo;
  bo.jobs = 2;
  LocalBuilder builder(bo);
  const std::vector<BuildResult> builds = builder.build(task, configs);
  unsetenv("KILN_GPU_IMAGE");
  for (const BuildResult& b : builds) {
    INFO(b.message);
    REQUIRE(b.error == ErrorKind::kNone);
    CHECK(is_gpu_artifact(b.artifact));
    const GpuArtifact a = read_gpu_artifact(b.artifact);
    CHECK(a.arch == "sm_90");
    CHECK(a.kernels.size() == 1);
  }

  MeasureOptions mo;
  mo.repeat = 2;
  mo.min_repeat_ms = 0;
  IsolatedRunner runner(mo);
  const MeasureJob job = measure_job_of(task);
  // Emulated images have no ptxas figures: give one build some, and its
  // measurement carries them (to the database record).
  std::vector<BuildResult> measured = builds;
  measured[1].resources = {{"kiln_softmax_kernel0", 40, 0, 0, 256}};
  std::vector<MeasureResult> results = runner.run(job, measured);
  for (const MeasureResult& r : results) {
    INFO(r.message);
    CHECK(r.ok());
    CHECK(r.samples_ms.size() == 2);
  }
  CHECK(results[0].resources.empty());
  CHECK(results[1].resources == measured[1].resources);
  CHECK(runner.workers_started() == 1);

  // An illegal address on the first candidate: its error names it, and the
  // next candidate is measured by a fresh worker.
  // (Another job identity: a worker forked now sees the failure switch.)
  MeasureJob failing = job;
  failing.identity += " (failing)";
  setenv("KILN_FAKE_CUDA_FAIL_LAUNCH", "700", 1);
  const std::vector<MeasureResult> failed = runner.run(failing, {builds[0]});
  unsetenv("KILN_FAKE_CUDA_FAIL_LAUNCH");
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].error == ErrorKind::kRuntimeCrash);
  CHECK_THAT(failed[0].message, Catch::Contains("CUDA_ERROR_ILLEGAL_ADDRESS"));
  CHECK(runner.workers_started() == 2);
  const std::vector<MeasureResult> after = runner.run(failing, {builds[1]});
  CHECK(after[0].ok());
  CHECK(runner.workers_started() == 3);

  // A damaged artifact is the device's error, not a crash.
  TempDir dir("kiln_cuda_badart");
  BuildResult bad = builds[0];
  bad.artifact = dir.path + "/bad.kgpu";
  { std::ofstream(bad.artifact) << "junk"; }
  const std::vector<MeasureResult> junk = runner.run(job, {bad});
  CHECK(junk[0].error == ErrorKind::kDeviceError);
  CHECK_THAT(junk[0].message, Catch::Contains("is not a kiln GPU artifact"));
}

TEST_CASE("cuda tuning path: a cubin build reports each kernel's registers, spills and shared memory",
          "[gpu][nvrtc]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC is not available: " << why);
  const Task task = make_task("matmul:M=64,N=64,K=64", Target::parse("cuda -arch=sm_80"));
  std::vector<Config> configs{task.space->get(0),
                              task.space->from_json_string(R"({"tile_y":[1,16,4],"tile_x":[1,16,4],"tile_k":[8,8],)"
                                                           R"("shared":"both","vec":4,"pad":0,"unroll_k":"unroll"})")};
  LocalBuilder builder(LocalBuilderOptions{});
  const std::vector<BuildResult> builds = builder.build(task, configs);
  for (const BuildResult& b : builds) {
    INFO(b.message);
    if (b.error == ErrorKind::kInvalidConfig) continue;  // over a launch limit
    REQUIRE(b.error == ErrorKind::kNone);
    const GpuArtifact a = read_gpu_artifact(b.artifact);
    REQUIRE(b.resources.size() == a.kernels.size());
    for (size_t k = 0; k < a.kernels.size(); ++k) {
      CHECK(b.resources[k].kernel == a.kernels[k].name);
      CHECK(b.resources[k].registers > 0);
      // ptxas packs the arrays kiln counts 16-byte aligned each.
      CHECK(b.resources[k].shared_bytes > 0);
      CHECK(b.resources[k].shared_bytes <= a.kernels[k].shared_bytes);
    }
  }
  CHECK(builds[1].error == ErrorKind::kNone);  // a 16 x 16 block of 4 x 4 tiles builds
}
