// `kiln lib` orchestration: database records -> kernels -> library files
// (see library_builder.h).
#include "library/library_builder.h"

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "library/c_compiler.h"
#include "library/cuda_library_builder.h"
#include "library/library_files.h"
#include "library/record_selection.h"
#include "tasks/kernel_build.h"
#include "library/library_c_source.h"
#include "codegen/build.h"
#include "codegen/static_library.h"
#include "base/error.h"
#include "kernels/op_registry.h"
#include "schedule/lower.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

void write_file(const std::string& path, const std::vector<char>& bytes) {
  write_library_file(path, std::string(bytes.begin(), bytes.end()));
}

std::string supported_text() {
  return "kiln lib supports matmul (row-major operands, with or without bias/relu) and conv2d (ungrouped, no "
         "bias/relu), with f32, f64, i8, u8 or i32 inputs";
}

// The op's semantics are those of the library's entry points: row-major
// operands, no gelu (matmul's trans_a, trans_b and gelu flags change what it
// computes; entry points dispatch on the shape only), ungrouped conv2d
// without an epilogue (the conv2d entry points take data, weight, out).
bool library_semantics(const OpInstance& op) {
  auto flag = [&](const char* name, int64_t plain) {
    auto it = op.ints.find(name);
    return it != op.ints.end() && it->second != plain;
  };
  if (op.op == "matmul" && (flag("trans_a", 0) || flag("trans_b", 0) || flag("gelu", 0))) return false;
  if (op.op == "conv2d" && (flag("groups", 1) || flag("bias", 0) || flag("relu", 0) || flag("relu6", 0) ||
                            flag("hswish", 0) || flag("hsigmoid", 0)))
    return false;
  return library_supports(op.op, op.dtype.str());
}

struct Selected {
  OpInstance op;
  Database::Record record;
};

std::vector<Selected> select_records(const LibraryOptions& o, Database& db, const Target& target,
                                     const std::vector<std::string>& wanted, std::vector<std::string>* warnings) {
  std::map<std::string, Database::Record> best = best_records(db, o.db_path, target);
  std::vector<std::string> tuned;
  for (const auto& [w, r] : best) tuned.push_back(w);
  std::vector<Selected> out;
  if (!wanted.empty()) {
    for (const std::string& w : wanted) {
      auto it = best.find(w);
      user_check(it != best.end()) << "the tuning database '" << o.db_path << "' has no error-free record of '" << w
                                   << "' (tuned workloads: " << list_text(tuned) << ")";
      out.push_back({build_workload(w), it->second});
    }
    return out;
  }
  for (const auto& [w, r] : best) {
    OpInstance op = build_workload(w);
    if (!library_semantics(op)) {
      warnings->push_back("left out " + w + ": " + supported_text());
      continue;
    }
    out.push_back({op, r});
  }
  user_check(!out.empty()) << "no workload of the tuning database '" << o.db_path << "' can go into a library ("
                           << supported_text() << ")";
  return out;
}

// The config of a record applied through the op's template, in the config
// space of the target it was tuned on, then lowered.
LoweredFunc lower_record(const Selected& s, const std::string& symbol) {
  Target tuned_on;
  try {
    tuned_on = Target::parse(s.record.target);
  } catch (const UserError& e) {
    user_error() << "record " << s.record.id << " of '" << s.record.workload << "' was tuned on target '"
                 << s.record.target << "', which this kiln cannot read: " << e.what();
  }
  const OpDef& def = find_op(s.op.op);
  user_check(def.define_space && def.apply_config) << "op '" << s.op.op << "' has no tunable template";
  ScheduledOp so;
  try {
    auto space = def.define_space(s.op, cpu_info_for(tuned_on));
    so = def.apply_config(s.op, space->from_json(s.record.config));
  } catch (const UserError& e) {
    user_error() << "the config of record " << s.record.id << " of '" << s.record.workload
                 << "' does not fit the op's template any more (" << e.what() << ")";
  }
  return lower(*so.schedule, so.args, symbol);
}

std::string entry_name(const std::string& lib, const std::string& family, const OpInstance& op) {
  std::string e = lib + "_" + family + "_" + op.dtype.str();
  const std::vector<const char*> params =
      op.op == "conv2d" ? std::vector<const char*>{"N", "C", "H", "W", "K", "R", "S", "stride", "pad", "dilation"}
                        : std::vector<const char*>{"M", "N", "K"};
  for (const char* p : params) e += std::string("_") + p + std::to_string(op.ints.at(p));
  return e;
}

}  // namespace

LibraryResult build_library(const LibraryOptions& o) {
  check_library_name(o.name);
  user_check(!o.out_dir.empty()) << "kiln lib needs an output directory (--out DIR)";
  user_check(!o.db_path.empty()) << "kiln lib needs a tuning database (--db FILE)";
  LibraryResult result;
  result.target = o.target.empty() ? Target::host() : Target::parse(o.target);
  const Target& target = result.target;
  if (target.is_cuda()) return build_cuda_library(o, target);
  user_check(target.kind == "llvm") << "kiln lib builds CPU libraries with the llvm backend; target '" << target.str()
                                    << "' is neither an llvm nor a cuda target";

  find_c_compiler();  // before any slow work: a missing compiler is the user's to fix first

  // Workloads: canonical, supported, each once.
  std::vector<std::string> wanted;
  for (const std::string& w : o.workloads) {
    OpInstance op = build_workload(w);
    user_check(library_semantics(op)) << "'" << w << "': " << supported_text();
    if (std::find(wanted.begin(), wanted.end(), op.canonical) == wanted.end()) wanted.push_back(op.canonical);
  }

  // The database and its records are checked before the output directory
  // exists; a later failure removes a directory this command created.
  auto db = Database::open_for_reading(o.db_path);
  std::vector<Selected> selected = select_records(o, *db, target, wanted, &result.warnings);

  const std::string out_dir = fs::absolute(o.out_dir).lexically_normal().string();
  ScratchDir scratch(out_dir);

  // Kernels -> one object.
  LibrarySource src;
  src.name = o.name;
  src.target = target.str();
  src.kiln_version = KILN_VERSION;
  src.slot_symbol = o.name + "__parallel_for";
  std::vector<LoweredFunc> funcs;
  for (size_t i = 0; i < selected.size(); ++i) {
    const Selected& s = selected[i];
    LibraryKernelSource k;
    k.op = s.op.op;
    k.family = library_family(s.op.op, s.op.ints);
    k.dtype = s.op.dtype.str();
    k.shape = s.op.ints;
    k.entry = entry_name(o.name, k.family, s.op);
    k.symbol = o.name + "__kernel" + std::to_string(i);
    k.workload = s.op.canonical;
    k.gflops = s.record.gflops;
    k.tuned_on = s.record.target;
    funcs.push_back(lower_record(s, k.symbol));
    for (const BufferArg& a : funcs.back().args) {
      int64_t n = 1;
      for (int64_t d : a.shape) n *= d;
      k.arg_elements.push_back(n);
    }
    src.kernels.push_back(k);
    result.kernels.push_back({s.op.canonical, k.entry, o.name + "_" + k.family + "_" + k.dtype, s.record});
  }
  const std::string kernels_obj = scratch.path() + "/" + o.name + "_kernels.o";
  write_file(kernels_obj, emit_library_object(funcs, target, src.slot_symbol));

  // Header, then the C runtime (it includes the header).
  const std::string header = out_dir + "/" + o.name + ".h";
  write_library_file(header, library_header(src));
  const std::string c_file = scratch.path() + "/" + o.name + "_runtime.c";
  const std::string runtime_obj = scratch.path() + "/" + o.name + "_runtime.o";
  write_library_file(c_file, library_c_source(src));
  compile_c(c_file, runtime_obj, target, out_dir);

  const std::string archive = out_dir + "/lib" + o.name + ".a";
  write_static_archive(archive, {kernels_obj, runtime_obj});
  const std::string shared = out_dir + "/lib" + o.name + ".so";
  std::vector<std::string> link_args = {"-soname", "lib" + o.name + ".so"};
  std::vector<std::string> needed = needed_libraries(target);
  if (!needed.empty()) link_args.push_back("--as-needed");
  link_args.insert(link_args.end(), needed.begin(), needed.end());
  link_shared_object({kernels_obj, runtime_obj}, shared, target, link_args);

  nlohmann::json j;
  j["name"] = o.name;
  j["target"] = target.str();
  j["kiln_version"] = KILN_VERSION;
  j["database"] = fs::absolute(o.db_path).lexically_normal().string();
  j["kernels"] = nlohmann::json::array();
  for (const LibraryKernel& k : result.kernels) {
    const Database::Record& r = k.record;
    j["kernels"].push_back({{"workload", k.workload},
                            {"entry", k.entry},
                            {"dispatcher", k.dispatcher},
                            {"config", r.config},
                            {"gflops", r.gflops},
                            {"median_ms", r.median_ms},
                            {"target", target.str()},
                            {"tuned_on", r.target},
                            {"kiln_version", KILN_VERSION},
                            {"record",
                             {{"id", r.id},
                              {"task", r.task_key()},
                              {"config_index", r.config_index},
                              {"device", r.device},
                              {"timestamp", r.timestamp},
                              {"kiln_version", r.kiln_version}}}});
  }
  const std::string json_path = out_dir + "/" + o.name + ".json";
  write_library_file(json_path, j.dump(2) + "\n");
  const std::string cmake_path = out_dir + "/" + o.name + "Config.cmake";
  write_library_file(cmake_path, cmake_config(o.name, "Threads::Threads;m"));
  const std::string pc_path = out_dir + "/" + o.name + ".pc";
  write_library_file(pc_path, pkg_config(o.name, "tuned tensor kernels for " + target.str(), "-lpthread -lm"));
  result.files = {archive, shared, header, json_path, cmake_path, pc_path};
  scratch.keep();
  return result;
}

}  // namespace kiln
