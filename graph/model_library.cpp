#include "graph/model_library.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/error.h"
#include "codegen/build.h"
#include "codegen/static_library.h"
#include "graph/executor.h"
#include "graph/model_library_cuda.h"
#include "graph/model_library_layout.h"
#include "graph/node_schedules.h"
#include "graph/onnx_import.h"
#include "library/c_compiler.h"
#include "library/library_files.h"
#include "library/library_runtime_c.h"
#include "library/source_text.h"

namespace kiln::graph {

namespace {

namespace fs = std::filesystem;

ModelLibraryResult build_cpu_model_library(const ModelLibraryOptions& o, const Executor& ex) {
  const std::string N = o.name;
  const Graph& g = ex.graph();
  const Target target = Target::host();
  ScratchDir scratch(o.out_dir);
  const std::string out_dir = o.out_dir;
  ModelLibraryResult result;

  // Kernels: one object, hidden symbols NAME__kI.
  std::vector<LoweredFunc> funcs = ex.kernels();
  std::map<std::string, std::string> symbol;
  for (size_t i = 0; i < funcs.size(); ++i) {
    symbol[funcs[i].name] = N + "__k" + std::to_string(i);
    funcs[i].name = symbol[funcs[i].name];
  }
  const std::string slot = N + "__parallel_for";
  const std::string kernels_obj = scratch.path() + "/" + N + "_kernels.o";
  const std::vector<char> obj = emit_library_object(funcs, target, slot);
  write_library_file(kernels_obj, std::string(obj.begin(), obj.end()));

  const ModelLibraryLayout layout = layout_model_library(ex, N, 64);
  result.weight_bytes = static_cast<int64_t>(layout.weights.size());
  result.workspace_bytes = layout.workspace_bytes;
  result.signature = layout.signature;
  const int64_t ws = layout.workspace_bytes;
  auto location = [&](int v) -> std::string {
    const ModelLibraryLayout::Place p = layout.place(ex, v);
    if (p.in_weights) return "(void*)(" + N + "__weights + " + std::to_string(p.offset) + ")";
    return "kiln_ws + " + std::to_string(p.offset);
  };

  std::ostringstream h;
  h << "/* " << N << ": the network " << comment_safe(fs::path(o.model).filename().string()) << " compiled by kiln "
    << KILN_VERSION << " for " << target.str() << ".\n *\n * " << result.signature << ";\n"
    << layout.parameter_doc << " * Buffers are dense and row-major, of any alignment. Returns " << N << "_OK (0), or "
    << N << "_ERROR_ARGUMENT (a NULL buffer), " << N << "_ERROR_MEMORY (the " << ws << "-byte workspace could not\n"
    << " * be allocated), " << N << "_ERROR_KERNEL (a kernel failed). Safe to call from several threads.\n"
    << " * KILN_NUM_THREADS sets the thread count (default: one per online CPU). */\n"
    << "#ifndef " << N << "_H\n#define " << N << "_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
    << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
    << "#define " << N << "_OK 0\n#define " << N << "_ERROR_ARGUMENT 1\n#define " << N << "_ERROR_MEMORY 2\n#define "
    << N << "_ERROR_KERNEL 3\n\n"
    << result.signature << ";\n"
    << "/* Bytes of the workspace one call allocates. */\nsize_t " << N << "_workspace_bytes(void);\n"
    << "/* Threads of the library's pool. */\nint " << N << "_num_threads(void);\n\n"
    << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
  const std::string header = out_dir + "/" + N + ".h";
  write_library_file(header, h.str());

  std::ostringstream c;
  c << replace_all(replace_all(kLibraryRuntimeC, "@N@", N), "@SLOT@", slot);
  c << "\n/* The weights, embedded. */\n"
    << embed_weights(layout, scratch.path(), N, o.out_dir) << "extern const unsigned char " << N
    << "__weights[] HIDDEN;\n\n";
  for (const LoweredFunc& f : funcs) c << "extern int32_t " << f.name << "(void** args) HIDDEN;\n";
  c << "\nAPI size_t " << N << "_workspace_bytes(void) { return " << ws << "; }\n\n";
  c << "API " << result.signature << " {\n";
  std::string null_check;
  for (const std::string& p : layout.in_names) null_check += (null_check.empty() ? "" : " || ") + ("!" + p);
  for (const std::string& p : layout.out_names) null_check += (null_check.empty() ? "" : " || ") + ("!" + p);
  c << "  if (" << null_check << ") return " << N << "_ERROR_ARGUMENT;\n"
    << "  unsigned char* kiln_ws = aligned_alloc(64, " << std::max<int64_t>(ws, 64) << ");\n"
    << "  if (!kiln_ws) return " << N << "_ERROR_MEMORY;\n"
    << "  int kiln_rc = " << N << "_OK;\n";
  for (size_t k = 0; k < g.inputs.size(); ++k)
    c << "  memcpy(kiln_ws + " << layout.input_at.at(g.inputs[k]) << ", " << layout.in_names[k] << ", "
      << g.values[static_cast<size_t>(g.inputs[k])].bytes() << ");\n";
  for (const PlanStep& s : ex.steps()) {
    const Node& n = g.nodes[static_cast<size_t>(s.node)];
    c << "  { /* " << comment_safe(n.op_type) << " '" << comment_safe(n.name) << "'" << (s.workload.empty() ? "" : ": " + s.workload)
      << " */\n    void* kiln_args[] = {";
    for (size_t k = 0; k < s.args.size(); ++k) c << (k ? ", " : "") << location(s.args[k]);
    c << "};\n    if (" << symbol.at(s.kernel) << "(kiln_args) != 0) { kiln_rc = " << N << "_ERROR_KERNEL; goto kiln_done; }\n  }\n";
  }
  for (size_t k = 0; k < g.outputs.size(); ++k)
    c << "  memcpy(" << layout.out_names[k] << ", " << location(ex.output_values()[k]) << ", "
      << g.values[static_cast<size_t>(g.outputs[k])].bytes() << ");\n";
  c << "kiln_done:\n  free(kiln_ws);\n  return kiln_rc;\n}\n";
  const std::string c_file = scratch.path() + "/" + N + "_model.c";
  const std::string glue_obj = scratch.path() + "/" + N + "_model.o";
  write_library_file(c_file, c.str());
  compile_c(c_file, glue_obj, target, out_dir);

  const nlohmann::json manifest = model_library_manifest(ex, layout, N, o.model, target.str(), symbol);
  for (const PlanStep& s : ex.steps()) result.tuned += s.config_source == "database";
  result.files = write_model_library_files(
      out_dir, N, {kernels_obj, glue_obj}, target, header, manifest, "Threads::Threads;m",
      "the network " + fs::path(o.model).filename().string() + " compiled by kiln", "-lpthread -lm");
  result.kernels = static_cast<int>(funcs.size());
  result.steps = static_cast<int>(ex.steps().size());
  scratch.keep();
  return result;
}

}  // namespace

ModelLibraryResult build_model_library(const ModelLibraryOptions& o) {
  check_library_name(o.name);
  const NodeTarget target = NodeTarget::parse(o.target);
  user_check(target.cuda() || target.target.is_host())
      << "kiln lib --model builds for this machine or a cuda target; --target '" << o.target << "' is neither";
  if (target.cuda()) check_cuda_model_library_tools();
  Graph imported = import_onnx(o.model, o.input_shapes);
  ExecutorOptions eo;
  eo.db_path = o.db;
  eo.jit = false;
  eo.target = o.target;
  Executor ex(std::move(imported), eo);
  return target.cuda() ? build_cuda_model_library(o, ex, target) : build_cpu_model_library(o, ex);
}

}  // namespace kiln::graph
