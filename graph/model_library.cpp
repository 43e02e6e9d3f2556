#include "graph/model_library.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "codegen/build.h"
#include "codegen/static_library.h"
#include "graph/executor.h"
#include "graph/onnx_import.h"
#include "library/c_compiler.h"
#include "library/library_files.h"
#include "library/library_runtime_c.h"
#include "library/source_text.h"

namespace kiln::graph {

namespace {

namespace fs = std::filesystem;

int64_t aligned(int64_t bytes) { return (bytes + 63) / 64 * 64; }

std::string c_type(DType t) {
  if (t == DType::f32()) return "float";
  if (t == DType::f64()) return "double";
  if (t == DType::i64()) return "int64_t";
  if (t == DType::i32()) return "int32_t";
  if (t == DType::i8()) return "int8_t";
  if (t == DType::u8() || t.is_bool()) return "uint8_t";
  if (t == DType::f16() || t == DType::bf16()) return "uint16_t";
  user_error() << "kiln lib --model: a model input or output of type " << t.str() << " has no C type";
  return "";
}

// A C parameter name for an ONNX tensor name: letters, digits and '_',
// never a C keyword or a name the generated code uses (those get a '_').
std::string c_name(const std::string& onnx_name, const std::string& fallback, const std::string& lib,
                   std::vector<std::string>* used) {
  static const std::set<std::string> reserved = {
      "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
      "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
      "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "_Bool",
      "bool", "true", "false", "NULL", "API", "HIDDEN", "MAX_KERNEL_ARGS", "free", "malloc", "memcpy", "aligned_alloc",
      "size_t", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t"};
  std::string s = c_identifier_chars(onnx_name);
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = fallback + "_" + s;
  if (s.rfind("kiln_", 0) == 0 || s.rfind(lib + "_", 0) == 0 || s.find("__") != std::string::npos) s = fallback + "_" + s;
  while (reserved.count(s) || std::find(used->begin(), used->end(), s) != used->end()) s += "_";
  used->push_back(s);
  return s;
}

// Text from the model inside a C comment: no "*/" can end it early.
std::string comment_safe(std::string s) {
  for (size_t at; (at = s.find("*/")) != std::string::npos;) s.replace(at, 2, "* /");
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

}  // namespace

ModelLibraryResult build_model_library(const ModelLibraryOptions& o) {
  check_library_name(o.name);
  const std::string N = o.name;
  Graph imported = import_onnx(o.model, o.input_shapes);
  ExecutorOptions eo;
  eo.db_path = o.db;
  eo.jit = false;
  Executor ex(std::move(imported), eo);
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

  // Weights: every constant a step reads, 64-byte aligned in one blob.
  std::map<int, int64_t> weight_at;
  std::string weights;
  auto place_constant = [&](int v) {
    if (weight_at.count(v)) return;
    const HostTensor& c = *g.values[static_cast<size_t>(v)].constant;
    weights.resize(static_cast<size_t>(aligned(static_cast<int64_t>(weights.size()))), '\0');
    weight_at[v] = static_cast<int64_t>(weights.size());
    weights.append(reinterpret_cast<const char*>(c.bytes.data()), c.bytes.size());
  };
  for (const PlanStep& s : ex.steps())
    for (int v : s.args)
      if (g.values[static_cast<size_t>(v)].constant) place_constant(v);
  for (int v : ex.output_values())
    if (g.values[static_cast<size_t>(v)].constant) place_constant(v);
  if (weights.empty()) weights.assign(64, '\0');  // .incbin of an empty file leaves no symbol to point at
  const std::string weights_file = fs::absolute(scratch.path() + "/" + N + ".weights").string();
  // The assembler reads it by name from a C string: no quote, backslash or line break.
  user_check(weights_file.find_first_of("\"\\\n\r") == std::string::npos)
      << "kiln lib --model: the output directory's path must not contain quotes, backslashes or line breaks: "
      << o.out_dir;
  write_library_file(weights_file, weights);
  result.weight_bytes = static_cast<int64_t>(weights.size());

  // Workspace: the inputs' aligned copies, then the shared buffers.
  std::map<int, int64_t> input_at;
  int64_t ws = 0;
  for (int v : g.inputs) {
    input_at[v] = ws;
    ws += aligned(g.values[static_cast<size_t>(v)].bytes());
  }
  std::vector<int64_t> buffer_at;
  for (int64_t b : ex.buffer_bytes()) {
    buffer_at.push_back(ws);
    ws += aligned(b);
  }
  result.workspace_bytes = ws;
  auto location = [&](int v) -> std::string {
    if (input_at.count(v)) return "kiln_ws + " + std::to_string(input_at[v]);
    if (weight_at.count(v)) return "(void*)(" + N + "__weights + " + std::to_string(weight_at[v]) + ")";
    const int b = ex.buffer_of(v);
    internal_assert(b >= 0) << "value '" << g.values[static_cast<size_t>(v)].name << "' has no storage";
    return "kiln_ws + " + std::to_string(buffer_at[static_cast<size_t>(b)]);
  };

  // The signature: inputs, then outputs, typed, named after the tensors.
  std::vector<std::string> used, params, in_names, out_names;
  std::ostringstream doc;
  for (int v : g.inputs) {
    const Value& val = g.values[static_cast<size_t>(v)];
    in_names.push_back(c_name(val.name, "in", N, &used));
    params.push_back("const " + c_type(val.dtype) + "* " + in_names.back());
    doc << " *   " << in_names.back() << ": input '" << comment_safe(val.name) << "', " << val.dtype.str() << " " << shape_str(val.shape) << "\n";
  }
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const Value& val = g.values[static_cast<size_t>(g.outputs[k])];
    out_names.push_back(c_name(val.name, "out", N, &used));
    params.push_back(c_type(val.dtype) + "* " + out_names.back());
    doc << " *   " << out_names.back() << ": output '" << comment_safe(val.name) << "', " << val.dtype.str() << " " << shape_str(val.shape) << "\n";
  }
  std::string param_list;
  for (const std::string& p : params) param_list += (param_list.empty() ? "" : ", ") + p;
  result.signature = "int " + N + "_run(" + param_list + ")";

  std::ostringstream h;
  h << "/* " << N << ": the network " << comment_safe(fs::path(o.model).filename().string()) << " compiled by kiln " << KILN_VERSION
    << " for " << target.str() << ".\n *\n * " << result.signature << ";\n" << doc.str()
    << " * Buffers are dense and row-major, of any alignment. Returns " << N << "_OK (0), or " << N
    << "_ERROR_ARGUMENT (a NULL buffer), " << N << "_ERROR_MEMORY (the " << ws << "-byte workspace could not\n"
    << " * be allocated), " << N << "_ERROR_KERNEL (a kernel failed). Safe to call from several threads.\n"
    << " * KILN_NUM_THREADS sets the thread count (default: one per online CPU). */\n"
    << "#ifndef " << N << "_H\n#define " << N << "_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
    << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
    << "#define " << N << "_OK 0\n#define " << N << "_ERROR_ARGUMENT 1\n#define " << N << "_ERROR_MEMORY 2\n#define " << N
    << "_ERROR_KERNEL 3\n\n"
    << result.signature << ";\n"
    << "/* Bytes of the workspace one call allocates. */\nsize_t " << N << "_workspace_bytes(void);\n"
    << "/* Threads of the library's pool. */\nint " << N << "_num_threads(void);\n\n"
    << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
  const std::string header = out_dir + "/" + N + ".h";
  write_library_file(header, h.str());

  std::ostringstream c;
  c << replace_all(replace_all(kLibraryRuntimeC, "@N@", N), "@SLOT@", slot);
  c << "\n/* The weights, embedded. */\n__asm__(\".section .rodata\\n.balign 64\\n.hidden " << N << "__weights\\n" << N
    << "__weights:\\n.incbin \\\"" << weights_file << "\\\"\\n.previous\\n\");\n"
    << "extern const unsigned char " << N << "__weights[] HIDDEN;\n\n";
  for (const LoweredFunc& f : funcs) c << "extern int32_t " << f.name << "(void** args) HIDDEN;\n";
  c << "\nAPI size_t " << N << "_workspace_bytes(void) { return " << ws << "; }\n\n";
  c << "API " << result.signature << " {\n";
  std::string null_check;
  for (const std::string& p : in_names) null_check += (null_check.empty() ? "" : " || ") + ("!" + p);
  for (const std::string& p : out_names) null_check += (null_check.empty() ? "" : " || ") + ("!" + p);
  c << "  if (" << null_check << ") return " << N << "_ERROR_ARGUMENT;\n"
    << "  unsigned char* kiln_ws = aligned_alloc(64, " << std::max<int64_t>(ws, 64) << ");\n"
    << "  if (!kiln_ws) return " << N << "_ERROR_MEMORY;\n"
    << "  int kiln_rc = " << N << "_OK;\n";
  for (size_t k = 0; k < g.inputs.size(); ++k)
    c << "  memcpy(kiln_ws + " << input_at[g.inputs[k]] << ", " << in_names[k] << ", " << g.values[static_cast<size_t>(g.inputs[k])].bytes() << ");\n";
  for (const PlanStep& s : ex.steps()) {
    const Node& n = g.nodes[static_cast<size_t>(s.node)];
    c << "  { /* " << comment_safe(n.op_type) << " '" << comment_safe(n.name) << "'" << (s.workload.empty() ? "" : ": " + s.workload)
      << " */\n    void* kiln_args[] = {";
    for (size_t k = 0; k < s.args.size(); ++k) c << (k ? ", " : "") << location(s.args[k]);
    c << "};\n    if (" << symbol.at(s.kernel) << "(kiln_args) != 0) { kiln_rc = " << N << "_ERROR_KERNEL; goto kiln_done; }\n  }\n";
  }
  for (size_t k = 0; k < g.outputs.size(); ++k)
    c << "  memcpy(" << out_names[k] << ", " << location(ex.output_values()[k]) << ", "
      << g.values[static_cast<size_t>(g.outputs[k])].bytes() << ");\n";
  c << "kiln_done:\n  free(kiln_ws);\n  return kiln_rc;\n}\n";
  const std::string c_file = scratch.path() + "/" + N + "_model.c";
  const std::string glue_obj = scratch.path() + "/" + N + "_model.o";
  write_library_file(c_file, c.str());
  compile_c(c_file, glue_obj, target, out_dir);

  const std::string archive = out_dir + "/lib" + N + ".a";
  write_static_archive(archive, {kernels_obj, glue_obj});
  const std::string shared = out_dir + "/lib" + N + ".so";
  std::vector<std::string> link_args = {"-soname", "lib" + N + ".so"};
  std::vector<std::string> needed = needed_libraries(target);
  if (!needed.empty()) link_args.push_back("--as-needed");
  link_args.insert(link_args.end(), needed.begin(), needed.end());
  link_shared_object({kernels_obj, glue_obj}, shared, target, link_args);

  nlohmann::json j;
  j["name"] = N;
  j["model"] = fs::absolute(o.model).lexically_normal().string();
  j["target"] = target.str();
  j["kiln_version"] = KILN_VERSION;
  j["signature"] = result.signature;
  j["workspace_bytes"] = ws;
  j["weight_bytes"] = result.weight_bytes;
  for (int v : g.inputs) j["inputs"].push_back({{"name", g.values[static_cast<size_t>(v)].name}, {"shape", g.values[static_cast<size_t>(v)].shape}, {"dtype", g.values[static_cast<size_t>(v)].dtype.str()}});
  for (int v : g.outputs) j["outputs"].push_back({{"name", g.values[static_cast<size_t>(v)].name}, {"shape", g.values[static_cast<size_t>(v)].shape}, {"dtype", g.values[static_cast<size_t>(v)].dtype.str()}});
  for (const PlanStep& s : ex.steps()) {
    j["steps"].push_back({{"node", g.nodes[static_cast<size_t>(s.node)].name}, {"kernel", symbol.at(s.kernel)},
                          {"workload", s.workload}, {"config", s.config_source}});
    result.tuned += s.config_source == "database";
  }
  const std::string json_path = out_dir + "/" + N + ".json";
  write_library_file(json_path, j.dump(2) + "\n");
  const std::string cmake_path = out_dir + "/" + N + "Config.cmake";
  write_library_file(cmake_path, cmake_config(N, "Threads::Threads;m"));
  const std::string pc_path = out_dir + "/" + N + ".pc";
  write_library_file(pc_path, pkg_config(N, "the network " + fs::path(o.model).filename().string() + " compiled by kiln", "-lpthread -lm"));
  result.files = {archive, shared, header, json_path, cmake_path, pc_path};
  result.kernels = static_cast<int>(funcs.size());
  result.steps = static_cast<int>(ex.steps().size());
  scratch.keep();
  return result;
}

}  // namespace kiln::graph
