#include "graph/model_library_layout.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <sstream>

#include "base/error.h"
#include "codegen/build.h"
#include "codegen/static_library.h"
#include "library/library_files.h"

namespace kiln::graph {

namespace {

namespace fs = std::filesystem;

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
  static const std::set<std::string> reserved = {"auto",
                                                 "break",
                                                 "case",
                                                 "char",
                                                 "const",
                                                 "continue",
                                                 "default",
                                                 "do",
                                                 "double",
                                                 "else",
                                                 "enum",
                                                 "extern",
                                                 "float",
                                                 "for",
                                                 "goto",
                                                 "if",
                                                 "inline",
                                                 "int",
                                                 "long",
                                                 "register",
                                                 "restrict",
                                                 "return",
                                                 "short",
                                                 "signed",
                                                 "sizeof",
                                                 "static",
                                                 "struct",
                                                 "switch",
                                                 "typedef",
                                                 "union",
                                                 "unsigned",
                                                 "void",
                                                 "volatile",
                                                 "while",
                                                 "_Bool",
                                                 "bool",
                                                 "true",
                                                 "false",
                                                 "NULL",
                                                 "API",
                                                 "HIDDEN",
                                                 "UNUSED",
                                                 "MAX_KERNEL_ARGS",
                                                 "MAX_LAUNCH_ARGS",
                                                 "free",
                                                 "malloc",
                                                 "memcpy",
                                                 "aligned_alloc",
                                                 "size_t",
                                                 "int8_t",
                                                 "uint8_t",
                                                 "int16_t",
                                                 "uint16_t",
                                                 "int32_t",
                                                 "uint32_t",
                                                 "int64_t",
                                                 "uint64_t",
                                                 "drv",
                                                 "context",
                                                 "device",
                                                 "modules",
                                                 "functions",
                                                 "ready",
                                                 "weights_dev",
                                                 "uintptr_t",
                                                 "CUdeviceptr",
                                                 "CUstream",
                                                 "workspace",
                                                 "stream",
                                                 "CUresult"};
  std::string s = c_identifier_chars(onnx_name);
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = fallback + "_" + s;
  if (s.rfind("kiln_", 0) == 0 || s.rfind(lib + "_", 0) == 0 || s.find("__") != std::string::npos)
    s = fallback + "_" + s;
  while (reserved.count(s) || std::find(used->begin(), used->end(), s) != used->end()) s += "_";
  used->push_back(s);
  return s;
}

}  // namespace

std::string comment_safe(std::string s) {
  for (size_t at; (at = s.find("*/")) != std::string::npos;) s.replace(at, 2, "* /");
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

ModelLibraryLayout::Place ModelLibraryLayout::place(const Executor& ex, int v) const {
  if (auto it = input_at.find(v); it != input_at.end()) return {false, it->second};
  if (auto it = weight_at.find(v); it != weight_at.end()) return {true, it->second};
  const int b = ex.buffer_of(v);
  internal_assert(b >= 0) << "value '" << ex.graph().values[static_cast<size_t>(v)].name << "' has no storage";
  return {false, buffer_at[static_cast<size_t>(b)]};
}

ModelLibraryLayout layout_model_library(const Executor& ex, const std::string& N, int64_t alignment) {
  const Graph& g = ex.graph();
  ModelLibraryLayout l;
  l.alignment = alignment;
  auto aligned = [&](int64_t bytes) { return (bytes + alignment - 1) / alignment * alignment; };

  // Weights: every constant a step reads or the network outputs.
  auto place_constant = [&](int v) {
    if (l.weight_at.count(v)) return;
    const HostTensor& c = *g.values[static_cast<size_t>(v)].constant;
    l.weights.resize(static_cast<size_t>(aligned(static_cast<int64_t>(l.weights.size()))), '\0');
    l.weight_at[v] = static_cast<int64_t>(l.weights.size());
    l.weights.append(reinterpret_cast<const char*>(c.bytes.data()), c.bytes.size());
  };
  for (const PlanStep& s : ex.steps())
    for (int v : s.args)
      if (g.values[static_cast<size_t>(v)].constant) place_constant(v);
  for (int v : ex.output_values())
    if (g.values[static_cast<size_t>(v)].constant) place_constant(v);
  if (l.weights.empty()) l.weights.assign(64, '\0');  // .incbin of an empty file leaves no symbol to point at

  // Workspace: the inputs' aligned copies, then the shared buffers.
  for (int v : g.inputs) {
    l.input_at[v] = l.workspace_bytes;
    l.workspace_bytes += aligned(g.values[static_cast<size_t>(v)].bytes());
  }
  for (int64_t b : ex.buffer_bytes()) {
    l.buffer_at.push_back(l.workspace_bytes);
    l.workspace_bytes += aligned(b);
  }

  // The signature: inputs, then outputs, typed, named after the tensors.
  std::vector<std::string> used, params;
  std::ostringstream doc;
  for (int v : g.inputs) {
    const Value& val = g.values[static_cast<size_t>(v)];
    l.in_names.push_back(c_name(val.name, "in", N, &used));
    params.push_back("const " + c_type(val.dtype) + "* " + l.in_names.back());
    doc << " *   " << l.in_names.back() << ": input '" << comment_safe(val.name) << "', " << val.dtype.str() << " "
        << shape_str(val.shape) << "\n";
  }
  for (int v : g.outputs) {
    const Value& val = g.values[static_cast<size_t>(v)];
    l.out_names.push_back(c_name(val.name, "out", N, &used));
    params.push_back(c_type(val.dtype) + "* " + l.out_names.back());
    doc << " *   " << l.out_names.back() << ": output '" << comment_safe(val.name) << "', " << val.dtype.str() << " "
        << shape_str(val.shape) << "\n";
  }
  std::string param_list;
  for (const std::string& p : params) param_list += (param_list.empty() ? "" : ", ") + p;
  l.signature = "int " + N + "_run(" + param_list + ")";
  l.parameter_doc = doc.str();
  return l;
}

std::string embed_weights(const ModelLibraryLayout& layout, const std::string& dir, const std::string& N,
                          const std::string& out_dir) {
  const std::string path = fs::absolute(dir + "/" + N + ".weights").string();
  // The assembler reads it by name from a C string: no quote, backslash or line break.
  user_check(path.find_first_of("\"\\\n\r") == std::string::npos)
      << "kiln lib --model: the output directory's path must not contain quotes, backslashes or line breaks: "
      << out_dir;
  write_library_file(path, layout.weights);
  std::ostringstream c;
  c << "__asm__(\".section .rodata\\n.balign 64\\n.hidden " << N << "__weights\\n"
    << N << "__weights:\\n.incbin \\\"" << path << "\\\"\\n.previous\\n\");\n";
  return c.str();
}

nlohmann::json model_library_manifest(const Executor& ex, const ModelLibraryLayout& layout, const std::string& N,
                                      const std::string& model, const std::string& target,
                                      const std::map<std::string, std::string>& kernel_symbol) {
  const Graph& g = ex.graph();
  nlohmann::json j;
  j["name"] = N;
  j["model"] = fs::absolute(model).lexically_normal().string();
  j["target"] = target;
  j["kiln_version"] = KILN_VERSION;
  j["signature"] = layout.signature;
  j["workspace_bytes"] = layout.workspace_bytes;
  j["weight_bytes"] = static_cast<int64_t>(layout.weights.size());
  for (int v : g.inputs) {
    const Value& val = g.values[static_cast<size_t>(v)];
    j["inputs"].push_back({{"name", val.name}, {"shape", val.shape}, {"dtype", val.dtype.str()}});
  }
  for (int v : g.outputs) {
    const Value& val = g.values[static_cast<size_t>(v)];
    j["outputs"].push_back({{"name", val.name}, {"shape", val.shape}, {"dtype", val.dtype.str()}});
  }
  for (const PlanStep& s : ex.steps())
    j["steps"].push_back({{"node", g.nodes[static_cast<size_t>(s.node)].name},
                          {"kernel", kernel_symbol.at(s.kernel)},
                          {"workload", s.workload},
                          {"config", s.config_source}});
  return j;
}

std::vector<std::string> write_model_library_files(const std::string& out_dir, const std::string& N,
                                                   const std::vector<std::string>& objects, const Target& target,
                                                   const std::string& header, const nlohmann::json& manifest,
                                                   const std::string& cmake_libraries, const std::string& description,
                                                   const std::string& libs_private) {
  const std::string archive = out_dir + "/lib" + N + ".a";
  write_static_archive(archive, objects);
  const std::string shared = out_dir + "/lib" + N + ".so";
  std::vector<std::string> link_args = {"-soname", "lib" + N + ".so"};
  std::vector<std::string> needed = needed_libraries(target);
  if (!needed.empty()) link_args.push_back("--as-needed");
  link_args.insert(link_args.end(), needed.begin(), needed.end());
  link_shared_object(objects, shared, target, link_args);
  const std::string json_path = out_dir + "/" + N + ".json";
  write_library_file(json_path, manifest.dump(2) + "\n");
  const std::string cmake_path = out_dir + "/" + N + "Config.cmake";
  write_library_file(cmake_path, cmake_config(N, cmake_libraries));
  const std::string pc_path = out_dir + "/" + N + ".pc";
  write_library_file(pc_path, pkg_config(N, description, libs_private));
  return {archive, shared, header, json_path, cmake_path, pc_path};
}

}  // namespace kiln::graph
