// What a network library (`kiln lib --model`, graph/model_library.h) lays
// out the same way for a CPU and a GPU: the weights blob (every constant a
// kernel reads, aligned), the workspace one call uses (the inputs' copies,
// then the executor's shared buffers), the C signature of NAME_run named
// after the model's tensors, and the manifest's common fields.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "graph/executor.h"

namespace kiln::graph {

struct ModelLibraryLayout {
  int64_t alignment = 64;
  std::string weights;               // the blob (64 zero bytes when the model has no constant)
  std::map<int, int64_t> weight_at;  // constant value -> offset in the blob
  std::map<int, int64_t> input_at;   // graph input -> offset in the workspace
  std::vector<int64_t> buffer_at;    // shared buffer -> offset in the workspace
  int64_t workspace_bytes = 0;
  std::vector<std::string> in_names, out_names;  // NAME_run's parameters
  std::string signature;                         // "int NAME_run(const float* x, float* y)"
  std::string parameter_doc;                     // one " *   x: input 'x', f32 1x3x48x192" line each

  // Where value v (a step argument or an output: a storage root) lives.
  struct Place {
    bool in_weights = false;
    int64_t offset = 0;
  };
  Place place(const Executor& ex, int v) const;
};

// `alignment`: of every tensor in the blob and the workspace (64 for a
// CPU's vectors, 256 for a GPU's, as cuMemAlloc aligns). user_error for a
// model input or output whose type has no C type.
ModelLibraryLayout layout_model_library(const Executor& ex, const std::string& name, int64_t alignment);

// Text from the model inside a C comment: no "*/" can end it early, no line break.
std::string comment_safe(std::string s);

// Writes the blob to DIR/NAME.weights and returns the assembler text that
// embeds it as the hidden symbol NAME__weights (64-byte aligned, in
// .rodata). user_error when the path cannot be named in the assembler.
std::string embed_weights(const ModelLibraryLayout& layout, const std::string& dir, const std::string& name,
                          const std::string& out_dir);

// The manifest (NAME.json) without the files' own fields: name, model,
// target, version, signature, sizes, inputs, outputs and steps (`kernel`
// gives each step's kernel symbol).
nlohmann::json model_library_manifest(const Executor& ex, const ModelLibraryLayout& layout, const std::string& name,
                                      const std::string& model, const std::string& target,
                                      const std::map<std::string, std::string>& kernel_symbol);

// The library's files from its objects: libNAME.a, libNAME.so (linked for
// `target`, with the C library and libm as DT_NEEDED), NAME.json (the
// manifest), NAMEConfig.cmake (the static target linking
// `cmake_libraries`) and NAME.pc; returns their paths, `header` third, as
// kiln lib lists them.
std::vector<std::string> write_model_library_files(const std::string& out_dir, const std::string& name,
                                                   const std::vector<std::string>& objects, const Target& target,
                                                   const std::string& header, const nlohmann::json& manifest,
                                                   const std::string& cmake_libraries, const std::string& description,
                                                   const std::string& libs_private);

}  // namespace kiln::graph
