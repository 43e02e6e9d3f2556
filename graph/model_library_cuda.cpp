// `kiln lib --model --target cuda` (see model_library_cuda.h).
#include "graph/model_library_cuda.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "codegen/build.h"
#include "codegen/cuda_codegen.h"
#include "codegen/gpu_build.h"
#include "codegen/nvrtc.h"
#include "graph/model_library_layout.h"
#include "library/c_compiler.h"
#include "library/cuda_library_source.h"
#include "library/library_files.h"
#include "library/source_text.h"

namespace kiln::graph {

namespace {

namespace fs = std::filesystem;

// One kernel of the plan: its launches, as the runtime's `struct launch`.
struct KernelLaunches {
  std::string symbol;  // the manifest's name of the kernel (its CUDA C function)
  std::vector<GpuArtifactKernel> launches;
  std::vector<int> functions;  // index into the function table, per launch
};

// NAME_run_device: NAME_run's parameters as device pointers, then the
// caller's workspace and stream.
std::string device_signature(const ModelLibraryLayout& layout, const std::string& N) {
  std::string sig = layout.signature;
  sig.replace(0, ("int " + N + "_run(").size(), "int " + N + "_run_device(");
  sig.insert(sig.size() - 1, ", void* workspace, void* stream");
  return sig;
}

// How many workspaces of finished host calls NAME_run keeps for later ones:
// as many as calls that ran at the same time, up to this.
constexpr int kCachedWorkspaces = 8;

// NAME_run's workspaces: cuMemAlloc and cuMemFree synchronize the device and
// cost far more than a small network's kernels, so a call takes the
// workspace of a finished one where there is one, and gives it back when its
// outputs have been copied back (the copies wait for the kernels). The
// runtime's unload hook frees them.
std::string workspace_cache_source(const std::string& N, int64_t ws_bytes) {
  std::ostringstream c;
  c << "\n/* ---- " << N << "_run's device workspaces, kept for the next calls ---- */\n\n"
    << "#define CACHED_WORKSPACES " << kCachedWorkspaces << "\n"
    << "static pthread_mutex_t workspace_mu = PTHREAD_MUTEX_INITIALIZER;\n"
    << "static CUdeviceptr cached_workspaces[CACHED_WORKSPACES];\n"
    << "static int num_cached_workspaces;\n\n"
    << "static int take_workspace(const char* fn, CUdeviceptr* ws) {\n"
    << "  pthread_mutex_lock(&workspace_mu);\n"
    << "  *ws = num_cached_workspaces > 0 ? cached_workspaces[--num_cached_workspaces] : 0;\n"
    << "  pthread_mutex_unlock(&workspace_mu);\n"
    << "  if (*ws) return " << N << "_OK;\n"
    << "  const CUresult r = drv.mem_alloc(ws, " << ws_bytes << ");\n"
    << "  if (r == 0) return " << N << "_OK;\n"
    << "  *ws = 0;\n"
    << "  return cuda_failed(fn, \"cuMemAlloc (the " << ws_bytes << "-byte workspace)\", r);\n}\n\n"
    << "/* After a failed call kernels may still be queued on it: freeing it waits for them. */\n"
    << "static void give_back_workspace(CUdeviceptr ws, int call_succeeded) {\n"
    << "  if (!ws) return;\n"
    << "  if (call_succeeded) {\n"
    << "    pthread_mutex_lock(&workspace_mu);\n"
    << "    if (num_cached_workspaces < CACHED_WORKSPACES) cached_workspaces[num_cached_workspaces++] = ws, ws = 0;\n"
    << "    pthread_mutex_unlock(&workspace_mu);\n"
    << "  }\n"
    << "  if (ws) drv.mem_free(ws);\n}\n\n"
    << "static void free_cached_workspaces(void) {\n"
    << "  pthread_mutex_lock(&workspace_mu);\n"
    << "  while (num_cached_workspaces > 0) drv.mem_free(cached_workspaces[--num_cached_workspaces]);\n"
    << "  pthread_mutex_unlock(&workspace_mu);\n}\n\n";
  return c.str();
}

std::string header_text(const ModelLibraryOptions& o, const ModelLibraryLayout& layout, const std::string& arch,
                        bool emulated) {
  const std::string& N = o.name;
  std::ostringstream h;
  h << "/* " << N << ": the network " << comment_safe(fs::path(o.model).filename().string()) << " compiled by kiln "
    << KILN_VERSION << " for " << arch << " (`kiln lib --model --target cuda`)"
    << (emulated ? " -- TEST BUILD: its kernels are emulated modules that run only under kiln's\n"
                   " * stand-in CUDA driver (KILN_GPU_IMAGE=emulated), never on a GPU"
                 : "")
    << ".\n *\n * " << layout.signature << ";\n"
    << layout.parameter_doc
    << " * Buffers are host memory, dense and row-major, of any alignment. The call copies the inputs to the\n"
    << " * GPU, runs the network there on the default stream and copies the outputs back; it returns when they\n"
    << " * are written. Every function returns " << N << "_OK (0) on success, else an " << N << "_ERROR_* code, and\n"
    << " * then " << N << "_last_error() says what failed (per thread).\n"
    << " *\n"
    << " * Link lib" << N << ".a (and -lpthread -ldl) or lib" << N << ".so. Nothing of CUDA is linked: the library\n"
    << " * opens the CUDA driver (libcuda.so.1, or $KILN_LIBCUDA) with dlopen at its first call, which (or\n"
    << " * " << N << "_init(device)) loads the kernels into the primary context of device 0 (or `device`) and\n"
    << " * copies the " << layout.weights.size() << " bytes of weights there; they stay until " << N
    << "_unload(). Each call runs in a\n"
    << " * " << layout.workspace_bytes << "-byte device workspace of its own, so calls from several threads are safe: "
    << "the first calls\n"
    << " * allocate them, and later ones reuse those of finished calls (up to " << kCachedWorkspaces
    << " are kept until " << N << "_unload).\n"
    << " * " << N << "_init and " << N << "_unload must not run while another thread uses the library.\n"
    << " *\n"
    << " * " << device_signature(layout, N) << ";\n"
    << " * runs the network on device buffers of the same shapes (cudaMalloc, cuMemAlloc or " << N
    << "_device_alloc),\n"
    << " * with a workspace of " << N << "_workspace_bytes() bytes of device memory (256-byte aligned, as\n"
    << " * cuMemAlloc returns it) that no other call running at the same time may use, on `stream` (a\n"
    << " * CUstream or cudaStream_t; NULL for the default stream). It only enqueues: the outputs are\n"
    << " * written once the stream has run (" << N << "_synchronize(stream)), and a kernel's own failure\n"
    << " * shows there. */\n"
    << "#ifndef " << N << "_H\n#define " << N << "_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
    << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
    << "#define " << N << "_OK 0\n"
    << "#define " << N << "_ERROR_ARGUMENT 1 /* a NULL buffer, a bad device */\n"
    << "#define " << N << "_ERROR_MEMORY 2   /* device memory could not be allocated */\n"
    << "#define " << N << "_ERROR_KERNEL 3   /* a kernel could not be launched */\n"
    << "#define " << N
    << "_ERROR_CUDA 4     /* no driver or GPU, a GPU of another architecture, a failed driver call */\n"
    << "#define " << N << "_ARCH \"" << arch << "\"\n\n"
    << layout.signature << ";\n"
    << device_signature(layout, N) << ";\n"
    << "/* Bytes of device memory a call's workspace takes (" << N << "_run brings its own). */\nsize_t " << N
    << "_workspace_bytes(void);\n"
    << "/* What the calling thread's last failed call said (\"\" when none failed). */\n"
    << "const char* " << N << "_last_error(void);\n"
    << "/* Loads the kernels and the weights on `device` (optional: the first call loads them on device 0). */\n"
    << "int " << N << "_init(int device);\n"
    << "/* Frees the weights, unloads the kernels and releases the device's context; a later call loads them again. "
       "*/\n"
    << "int " << N << "_unload(void);\n"
    << cuda_device_memory_declarations(N) << "\n"
    << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
  return h.str();
}

}  // namespace

void check_cuda_model_library_tools() {
  find_c_compiler();
  std::string why;
  if (!gpu_images_emulated())
    user_check(nvrtc_available(&why)) << "kiln lib --model --target cuda compiles the kernels with NVRTC, which was "
                                         "not found ("
                                      << why << "); install the CUDA toolkit or set KILN_NVRTC to libnvrtc.so";
}

ModelLibraryResult build_cuda_model_library(const ModelLibraryOptions& o, const Executor& ex, const NodeTarget& nt) {
  const std::string N = o.name;
  const Graph& g = ex.graph();
  const std::string arch = nt.target.arch;
  ModelLibraryResult result;
  result.gpu = true;
  result.emulated = gpu_images_emulated();
  const std::string out_dir = fs::absolute(o.out_dir).lexically_normal().string();
  ScratchDir scratch(out_dir);
  const std::string emu_dir = out_dir + "/" + N + "_emulated";
  if (result.emulated) {
    std::error_code ec;
    fs::remove_all(emu_dir, ec);
    fs::create_directories(emu_dir, ec);
    user_check(!ec) << "kiln lib --model: cannot create " << emu_dir << ": " << ec.message();
  }

  // The kernels: one image each, and the function table over all of them.
  std::vector<CudaSource> sources;
  for (const LoweredFunc& f : ex.kernels()) sources.push_back(emit_cuda(f, nt.gpu));
  const std::vector<std::vector<char>> images = gpu_images(sources, arch, result.emulated ? emu_dir : scratch.path());
  std::vector<CudaLibrarySource::Function> functions;
  std::map<std::string, KernelLaunches> kernels;  // by the executor's kernel name
  std::map<std::string, std::string> symbol;
  size_t max_args = 1;
  for (size_t i = 0; i < sources.size(); ++i) {
    KernelLaunches k;
    k.symbol = sources[i].function;
    k.launches = artifact_kernels(sources[i]);
    for (const GpuArtifactKernel& a : k.launches) {
      k.functions.push_back(static_cast<int>(functions.size()));
      functions.push_back({static_cast<int>(i), a.name, a.dynamic_shared_bytes});
      max_args = std::max(max_args, a.arg_indices.size());
    }
    symbol[ex.kernels()[i].name] = k.symbol;
    kernels[ex.kernels()[i].name] = std::move(k);
  }

  // 256-byte alignment, as cuMemAlloc's: what vector loads expect.
  const ModelLibraryLayout layout = layout_model_library(ex, N, 256);
  result.weight_bytes = static_cast<int64_t>(layout.weights.size());
  result.workspace_bytes = layout.workspace_bytes;
  result.signature = layout.signature;

  const std::string header = out_dir + "/" + N + ".h";
  write_library_file(header, header_text(o, layout, arch, result.emulated));

  const int64_t ws_bytes = std::max<int64_t>(layout.workspace_bytes, 256);
  std::ostringstream c;
  c << "/* " << N << ".c: the network " << comment_safe(fs::path(o.model).filename().string()) << " for " << arch
    << ", generated by kiln " << KILN_VERSION << " (`kiln lib --model --target cuda`). See " << N << ".h. */\n"
    << "#define MAX_LAUNCH_ARGS " << max_args << "\n"
    << "#define ON_LOADED(fn) upload_weights_locked(fn)\n"
    << "#define ON_UNLOAD() free_device_memory_locked()\n"
    << "static int upload_weights_locked(const char* fn);\n"
    << "static void free_device_memory_locked(void);\n";
  c << cuda_driver_c_source(N, arch, result.emulated, images, functions);
  c << "\n/* ---- the weights: embedded, in device memory while the kernels are loaded ---- */\n\n"
    << embed_weights(layout, scratch.path(), N, o.out_dir) << "extern const unsigned char " << N
    << "__weights[] __attribute__((visibility(\"hidden\")));\n"
    << "static CUdeviceptr weights_dev;\n\n"
    << "static int upload_weights_locked(const char* fn) {\n"
    << "  CUresult r = drv.mem_alloc(&weights_dev, " << layout.weights.size() << ");\n"
    << "  if (r != 0) {\n    weights_dev = 0;\n    return cuda_failed(fn, \"cuMemAlloc (the network's weights)\", "
       "r);\n  }\n"
    << "  r = drv.memcpy_htod(weights_dev, " << N << "__weights, " << layout.weights.size() << ");\n"
    << "  return r == 0 ? " << N << "_OK : cuda_failed(fn, \"cuMemcpyHtoD (the network's weights)\", r);\n}\n\n"
    << workspace_cache_source(N, ws_bytes) << "static void free_device_memory_locked(void) {\n"
    << "  if (context) drv.ctx_set_current(context);\n"
    << "  free_cached_workspaces();\n"
    << "  if (weights_dev) drv.mem_free(weights_dev);\n  weights_dev = 0;\n}\n\n";

  c << "/* ---- the steps' launches (an argument is an index into the step's buffers) ---- */\n\n";
  for (size_t s = 0; s < ex.steps().size(); ++s) {
    const KernelLaunches& k = kernels.at(ex.steps()[s].kernel);
    c << "static const struct launch kStep" << s << "[" << k.launches.size() << "] = {\n";
    for (size_t l = 0; l < k.launches.size(); ++l) {
      const GpuArtifactKernel& a = k.launches[l];
      c << "    "
        << launch_initializer(k.functions[l], {a.grid[0], a.grid[1], a.grid[2]}, {a.block[0], a.block[1], a.block[2]},
                              a.shared_bytes, a.dynamic_shared_bytes, a.arg_indices, a.tensor_maps)
        << ",\n";
    }
    c << "};\n";
  }

  // The steps, shared by both entry points: graph input k at kiln_in[k],
  // everything else in the workspace or the weights. Locals are kiln_*: no
  // parameter named after a model tensor can be (model_library_layout.h).
  auto location = [&](int v) -> std::string {
    if (auto it = std::find(g.inputs.begin(), g.inputs.end(), v); it != g.inputs.end())
      return "kiln_in[" + std::to_string(it - g.inputs.begin()) + "]";
    const ModelLibraryLayout::Place p = layout.place(ex, v);
    return std::string(p.in_weights ? "weights_dev" : "kiln_ws") + " + " + std::to_string(p.offset);
  };
  c << "\n/* Launches every step on the stream. */\n"
    << "static int run_steps(const char* kiln_fn, CUdeviceptr kiln_ws, const CUdeviceptr* kiln_in, CUstream "
       "kiln_stream) "
       "{\n"
    << "  int kiln_rc = " << N << "_OK;\n"
    << "  (void)kiln_ws;\n  (void)kiln_in;\n";
  for (size_t s = 0; s < ex.steps().size(); ++s) {
    const PlanStep& step = ex.steps()[s];
    const Node& n = g.nodes[static_cast<size_t>(step.node)];
    c << "  { /* " << comment_safe(n.op_type) << " '" << comment_safe(n.name) << "'"
      << (step.workload.empty() ? "" : ": " + step.workload) << " */\n    const void* const kiln_b[] = {";
    for (size_t k = 0; k < step.args.size(); ++k)
      c << (k ? ", " : "") << "(const void*)(uintptr_t)(" << location(step.args[k]) << ")";
    c << "};\n    if ((kiln_rc = launch_tuned(kiln_fn, kStep" << s << ", " << kernels.at(step.kernel).launches.size()
      << ", kiln_b, kiln_stream)) != " << N << "_OK) return kiln_rc;\n  }\n";
  }
  c << "  return kiln_rc;\n}\n";

  std::vector<std::string> params = layout.in_names;
  params.insert(params.end(), layout.out_names.begin(), layout.out_names.end());
  auto null_checks = [&](const std::vector<std::string>& names) {
    std::string text;
    for (const std::string& p : names)
      text += "  if (!" + p + ") {\n    set_error(\"%s: " + p + " is NULL\", kiln_fn);\n    return " + N +
              "_ERROR_ARGUMENT;\n  }\n";
    return text;
  };
  auto inputs_array = [&](const std::function<std::string(size_t)>& input) {
    std::string text = "  const CUdeviceptr kiln_in[" + std::to_string(std::max<size_t>(g.inputs.size(), 1)) + "] = {";
    for (size_t k = 0; k < g.inputs.size(); ++k) text += (k ? ", " : "") + input(k);
    return text + (g.inputs.empty() ? "0" : "") + "};\n";
  };

  c << "\nAPI size_t " << N << "_workspace_bytes(void) { return " << ws_bytes << "; }\n\n";
  // Host buffers: a workspace of its own, the inputs copied into it.
  c << "API " << layout.signature << " {\n"
    << "  static const char* const kiln_fn = \"" << N << "_run\";\n"
    << null_checks(params) << "  int kiln_rc = ensure_ready(kiln_fn);\n  if (kiln_rc != " << N
    << "_OK) return kiln_rc;\n"
    << "  CUdeviceptr kiln_ws = 0;\n"
    << "  CUresult kiln_r;\n  (void)kiln_r;\n"
    << "  if ((kiln_rc = take_workspace(kiln_fn, &kiln_ws)) != " << N << "_OK) return kiln_rc;\n"
    << inputs_array([&](size_t k) { return "kiln_ws + " + std::to_string(layout.input_at.at(g.inputs[k])); });
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const int64_t bytes = g.values[static_cast<size_t>(g.inputs[k])].bytes();
    if (bytes == 0) continue;
    c << "  if ((kiln_r = drv.memcpy_htod(kiln_in[" << k << "], " << layout.in_names[k] << ", " << bytes
      << ")) != 0) {\n    kiln_rc = cuda_failed(kiln_fn, \"cuMemcpyHtoD (input " << layout.in_names[k]
      << ")\", kiln_r);\n    goto kiln_done;\n  }\n";
  }
  c << "  if ((kiln_rc = run_steps(kiln_fn, kiln_ws, kiln_in, NULL)) != " << N << "_OK) goto kiln_done;\n";
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const int64_t bytes = g.values[static_cast<size_t>(g.outputs[k])].bytes();
    if (bytes == 0) continue;
    c << "  if ((kiln_r = drv.memcpy_dtoh(" << layout.out_names[k] << ", " << location(ex.output_values()[k]) << ", "
      << bytes << ")) != 0) {\n    kiln_rc = cuda_failed(kiln_fn, \"cuMemcpyDtoH (output " << layout.out_names[k]
      << "; a kernel may have failed)\", kiln_r);\n    goto kiln_done;\n  }\n";
  }
  c << "kiln_done:\n  give_back_workspace(kiln_ws, kiln_rc == " << N << "_OK);\n  return kiln_rc;\n}\n\n";
  // Device buffers: the caller's workspace and stream, nothing waited for.
  c << "API " << device_signature(layout, N) << " {\n"
    << "  static const char* const kiln_fn = \"" << N << "_run_device\";\n";
  params.push_back("workspace");
  c << null_checks(params) << "  int kiln_rc = ensure_ready(kiln_fn);\n  if (kiln_rc != " << N
    << "_OK) return kiln_rc;\n"
    << "  const CUdeviceptr kiln_ws = (CUdeviceptr)(uintptr_t)workspace;\n"
    << inputs_array([&](size_t k) { return "(CUdeviceptr)(uintptr_t)" + layout.in_names[k]; })
    << "  if ((kiln_rc = run_steps(kiln_fn, kiln_ws, kiln_in, (CUstream)stream)) != " << N << "_OK) return kiln_rc;\n"
    << "  CUresult kiln_r;\n  (void)kiln_r;\n";
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const int64_t bytes = g.values[static_cast<size_t>(g.outputs[k])].bytes();
    if (bytes == 0) continue;
    c << "  if ((kiln_r = drv.memcpy_dtod_async((CUdeviceptr)(uintptr_t)" << layout.out_names[k] << ", "
      << location(ex.output_values()[k]) << ", " << bytes
      << ", (CUstream)stream)) != 0)\n    return cuda_failed(kiln_fn, "
      << "\"cuMemcpyDtoDAsync (output " << layout.out_names[k] << ")\", kiln_r);\n";
  }
  c << "  return " << N << "_OK;\n}\n";

  const Target host = Target::host();
  const std::string c_file = scratch.path() + "/" + N + "_model_cuda.c";
  const std::string object = scratch.path() + "/" + N + "_model_cuda.o";
  write_library_file(c_file, c.str());
  compile_c(c_file, object, host, out_dir);

  nlohmann::json j = model_library_manifest(ex, layout, N, o.model, nt.target.str(), symbol);
  j["arch"] = arch;
  j["image"] = result.emulated ? "emulated (a test build for kiln's stand-in CUDA driver; runs on no GPU)" : "cubin";
  for (const auto& [name, k] : kernels) {
    nlohmann::json launches = nlohmann::json::array();
    for (const GpuArtifactKernel& a : k.launches)
      launches.push_back({{"kernel", a.name},
                          {"grid", {a.grid[0], a.grid[1], a.grid[2]}},
                          {"block", {a.block[0], a.block[1], a.block[2]}},
                          {"shared_bytes", a.shared_bytes}});
    j["kernels"].push_back({{"kernel", k.symbol}, {"launches", launches}});
  }
  for (const PlanStep& s : ex.steps()) result.tuned += s.config_source == "database";
  result.files = write_model_library_files(
      out_dir, N, {object}, host, header, j, "Threads::Threads;${CMAKE_DL_LIBS}",
      "the network " + fs::path(o.model).filename().string() + " compiled by kiln for " + arch, "-lpthread -ldl");
  result.kernels = static_cast<int>(sources.size());
  result.steps = static_cast<int>(ex.steps().size());
  scratch.keep();
  return result;
}

}  // namespace kiln::graph
