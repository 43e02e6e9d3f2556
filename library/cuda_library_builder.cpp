// `kiln lib --target cuda` (see cuda_library_builder.h).
#include "library/cuda_library_builder.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "codegen/build.h"
#include "codegen/cuda_codegen.h"
#include "codegen/gpu_build.h"
#include "codegen/nvrtc.h"
#include "codegen/static_library.h"
#include "kernels/op_registry.h"
#include "library/c_compiler.h"
#include "library/cuda_fallback_kernels.h"
#include "library/cuda_library_source.h"
#include "library/library_files.h"
#include "library/record_selection.h"
#include "schedule/gpu_limits.h"
#include "schedule/lower.h"
#include "tasks/kernel_build.h"
#include "tasks/task_factory.h"

namespace kiln {

namespace {

namespace fs = std::filesystem;

struct Selected {
  OpInstance op;
  std::string family;
  Database::Record record;
};

std::vector<Selected> select(const LibraryOptions& o, Database& db, const Target& target,
                             const std::vector<std::string>& wanted, std::vector<std::string>* warnings) {
  std::map<std::string, Database::Record> best = best_records(db, o.db_path, target);
  std::vector<std::string> tuned;
  for (const auto& [w, r] : best) tuned.push_back(w);
  std::vector<Selected> out;
  std::string why;
  if (!wanted.empty()) {
    for (const std::string& w : wanted) {
      auto it = best.find(w);
      user_check(it != best.end()) << "the tuning database '" << o.db_path << "' has no error-free cuda record of '"
                                   << w << "' (workloads tuned for cuda: " << list_text(tuned) << ")";
      OpInstance op = build_workload(w);
      out.push_back({op, cuda_family_name(op, &why), it->second});
    }
    return out;
  }
  for (const auto& [w, r] : best) {
    OpInstance op = build_workload(w);
    const std::string family = cuda_family_name(op, &why);
    if (family.empty()) {
      warnings->push_back("left out " + w + ": " + why);
      continue;
    }
    out.push_back({op, family, r});
  }
  user_check(!out.empty()) << "no cuda workload of the tuning database '" << o.db_path
                           << "' can go into a library (" << cuda_library_supported_text() << ")";
  return out;
}

// The record's config applied in the config space of the target it was
// tuned for (so it means what it meant when measured), lowered for `target`.
struct LoweredRecord {
  LoweredFunc func;
  CudaSource cuda;
};

LoweredRecord lower_record(const Selected& s, const Target& target, const std::string& symbol) {
  Target tuned_on;
  try {
    tuned_on = Target::parse(s.record.target);
  } catch (const UserError& e) {
    user_error() << "record " << s.record.id << " of '" << s.record.workload << "' was tuned on target '"
                 << s.record.target << "', which this kiln cannot read: " << e.what();
  }
  ScheduledOp so;
  try {
    so = apply_task_config(s.op.canonical, tuned_on, s.record.config);
  } catch (const UserError& e) {
    user_error() << "the config of record " << s.record.id << " of '" << s.record.workload
                 << "' does not fit the op's cuda template any more (" << e.what() << ")";
  }
  try {
    // The printer checks each instruction against the arch (a tensor copy is sm_90's).
    LoweredRecord r;
    r.func = lower_gpu(*so.schedule, so.args, symbol, gpu_limits_for(target));
    r.cuda = emit_cuda(r.func, gpu_limits_for(target));
    return r;
  } catch (const UserError& e) {
    user_error() << "record " << s.record.id << " of '" << s.record.workload << "' (tuned for " << tuned_on.arch
                 << ") cannot be lowered for " << target.arch << ": " << e.what()
                 << "; tune the workload for " << target.arch << " (kiln tune ... --target \"" << target.str()
                 << "\")";
  }
  return {};
}

std::string entry_name(const std::string& lib, const CudaFamily& f, const OpInstance& op) {
  std::string e = lib + "_" + f.name + "_" + op.dtype.str();
  for (size_t i = 0; i < f.sizes.size(); ++i) e += "_" + f.sizes[i] + std::to_string(op.ints.at(f.size_params[i]));
  return e;
}

nlohmann::json resources_json(const std::string& kernel, const std::vector<CudaKernelResources>& resources) {
  for (const CudaKernelResources& r : resources) {
    if (r.kernel != kernel) continue;
    return {{"registers", r.registers},       {"spill_store_bytes", r.spill_store_bytes},
            {"spill_load_bytes", r.spill_load_bytes}, {"stack_bytes", r.stack_bytes},
            {"shared_bytes", r.shared_bytes}};
  }
  return nullptr;  // emulated images have no ptxas report
}

}  // namespace

LibraryResult build_cuda_library(const LibraryOptions& o, const Target& target) {
  LibraryResult result;
  result.target = target;
  result.emulated = gpu_images_emulated();
  // Before any slow work: missing tools are the user's to fix first (NVRTC
  // once the workloads and the database are known good, so that their
  // messages come first on a machine without the CUDA toolkit).
  find_c_compiler();

  std::vector<std::string> wanted;
  for (const std::string& w : o.workloads) {
    OpInstance op = build_workload(w);
    std::string why;
    user_check(!cuda_family_name(op, &why).empty()) << "'" << w << "': " << why;
    if (std::find(wanted.begin(), wanted.end(), op.canonical) == wanted.end()) wanted.push_back(op.canonical);
  }

  // The database and its records are checked before the output directory
  // exists; a later failure removes a directory this command created.
  auto db = Database::open_for_reading(o.db_path);
  std::vector<Selected> selected = select(o, *db, target, wanted, &result.warnings);
  if (!result.emulated) {
    std::string why;
    user_check(nvrtc_available(&why)) << "kiln lib --target cuda compiles the kernels with NVRTC, which was not found ("
                                      << why << "); install the CUDA toolkit or set KILN_NVRTC to libnvrtc.so";
  }

  const std::string out_dir = fs::absolute(o.out_dir).lexically_normal().string();
  ScratchDir scratch(out_dir);
  const std::string emu_dir = out_dir + "/" + o.name + "_emulated";
  if (result.emulated) {
    std::error_code ec;
    fs::remove_all(emu_dir, ec);
  }

  CudaLibrarySource src;
  src.name = o.name;
  src.arch = target.arch;
  src.kiln_version = KILN_VERSION;
  src.emulated = result.emulated;
  // NVRTC's cubin with ptxas's report, or the stand-in's emulated module.
  struct Image {
    std::vector<char> bytes;
    std::vector<CudaKernelResources> resources;  // empty for emulated images
  };
  auto compile_image = [&](const CudaSource& cuda) {
    Image im;
    im.bytes = gpu_image(cuda, target.arch, emu_dir, &im.resources);
    return im;
  };
  nlohmann::json kernels_json = nlohmann::json::array();
  for (size_t i = 0; i < selected.size(); ++i) {
    const Selected& s = selected[i];
    const CudaFamily f = cuda_family(s.family);
    const std::string symbol = o.name + "_k" + std::to_string(i);
    const LoweredRecord lowered = lower_record(s, target, symbol);
    const LoweredFunc& func = lowered.func;
    const CudaSource& cuda = lowered.cuda;
    internal_assert(func.args.size() == f.buffers.size())
        << s.op.canonical << ": " << func.args.size() << " arguments, family " << f.name << " has " << f.buffers.size();
    const Image image = compile_image(cuda);

    CudaLibraryKernel k;
    k.family = s.family;
    k.dtype = s.op.dtype.str();
    k.shape = s.op.ints;
    k.entry = entry_name(o.name, f, s.op);
    k.workload = s.op.canonical;
    k.gflops = s.record.gflops;
    k.tuned_on = s.record.target;
    nlohmann::json launches = nlohmann::json::array();
    for (const GpuArtifactKernel& a : artifact_kernels(cuda)) {
      CudaLibraryLaunch l;
      l.function = static_cast<int>(src.functions.size());
      src.functions.push_back({static_cast<int>(src.images.size()), a.name, a.dynamic_shared_bytes});
      for (int d = 0; d < 3; ++d) l.grid[d] = a.grid[d], l.block[d] = a.block[d];
      l.shared_bytes = a.shared_bytes;
      l.dynamic_shared_bytes = a.dynamic_shared_bytes;
      l.args = a.arg_indices;
      l.tensor_maps = a.tensor_maps;
      k.launches.push_back(l);
      nlohmann::json maps = nlohmann::json::array();
      for (size_t p = 0; p < a.tensor_maps.size(); ++p)
        if (a.tensor_maps[p].rank > 0)
          maps.push_back({{"parameter", p},
                          {"buffer", f.buffers.at(static_cast<size_t>(a.arg_indices[p]))},
                          {"map", rt::cuda::describe(a.tensor_maps[p])}});
      launches.push_back({{"kernel", a.name},
                          {"tensor_maps", maps},
                          {"grid", {a.grid[0], a.grid[1], a.grid[2]}},
                          {"block", {a.block[0], a.block[1], a.block[2]}},
                          {"shared_bytes", a.shared_bytes},
                          {"dynamic_shared_bytes", a.dynamic_shared_bytes},
                          {"resources", resources_json(a.name, image.resources)}});
    }
    src.images.push_back(image.bytes);
    src.kernels.push_back(k);
    const std::string dispatcher = o.name + "_" + s.family + "_" + k.dtype;
    result.kernels.push_back({s.op.canonical, k.entry, dispatcher, s.record});
    const Database::Record& r = s.record;
    kernels_json.push_back({{"workload", k.workload},
                            {"entry", k.entry},
                            {"dispatcher", dispatcher},
                            {"config", r.config},
                            {"gflops", r.gflops},
                            {"median_ms", r.median_ms},
                            {"target", target.str()},
                            {"tuned_on", r.target},
                            {"launches", launches},
                            {"record",
                             {{"id", r.id},
                              {"task", r.task_key()},
                              {"config_index", r.config_index},
                              {"device", r.device},
                              {"timestamp", r.timestamp},
                              {"kiln_version", r.kiln_version}}}});
  }

  // The fallback kernels: one more image.
  const CudaSource fallback = cuda_fallback_source();
  const Image fallback_image = compile_image(fallback);
  src.fallback_functions = static_cast<int>(src.functions.size());
  nlohmann::json fallback_json = nlohmann::json::array();
  for (const std::string& name : cuda_fallback_kernels()) {
    src.functions.push_back({static_cast<int>(src.images.size()), name});
    fallback_json.push_back({{"kernel", name}, {"resources", resources_json(name, fallback_image.resources)}});
  }
  src.images.push_back(fallback_image.bytes);

  const Target host = Target::host();
  const std::string header = out_dir + "/" + o.name + ".h";
  write_library_file(header, cuda_library_header(src));
  const std::string c_file = scratch.path() + "/" + o.name + "_cuda.c";
  const std::string object = scratch.path() + "/" + o.name + "_cuda.o";
  write_library_file(c_file, cuda_library_c_source(src));
  compile_c(c_file, object, host, out_dir);

  const std::string archive = out_dir + "/lib" + o.name + ".a";
  write_static_archive(archive, {object});
  const std::string shared = out_dir + "/lib" + o.name + ".so";
  std::vector<std::string> link_args = {"-soname", "lib" + o.name + ".so"};
  std::vector<std::string> needed = needed_libraries(host);
  if (!needed.empty()) link_args.push_back("--as-needed");
  link_args.insert(link_args.end(), needed.begin(), needed.end());
  link_shared_object({object}, shared, host, link_args);

  nlohmann::json j;
  j["name"] = o.name;
  j["target"] = target.str();
  j["arch"] = target.arch;
  j["image"] = result.emulated ? "emulated (a test build for kiln's stand-in CUDA driver; runs on no GPU)" : "cubin";
  j["kiln_version"] = KILN_VERSION;
  j["database"] = fs::absolute(o.db_path).lexically_normal().string();
  j["kernels"] = kernels_json;
  j["fallback_kernels"] = fallback_json;
  const std::string json_path = out_dir + "/" + o.name + ".json";
  write_library_file(json_path, j.dump(2) + "\n");
  const std::string cmake_path = out_dir + "/" + o.name + "Config.cmake";
  write_library_file(cmake_path, cmake_config(o.name, "Threads::Threads;${CMAKE_DL_LIBS}"));
  const std::string pc_path = out_dir + "/" + o.name + ".pc";
  write_library_file(pc_path, pkg_config(o.name, "tuned CUDA kernels for " + target.arch, "-lpthread -ldl"));
  result.files = {archive, shared, header, json_path, cmake_path, pc_path};
  scratch.keep();
  return result;
}

}  // namespace kiln
