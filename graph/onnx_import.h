// ONNX models into kiln's graph (graph/graph.h), parsed with protobuf from
// the onnx.proto that Debian's libonnx-dev ships.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln::graph {

// The lowest and highest version of the default ONNX operator set kiln reads.
constexpr int kMinOpset = 7;
constexpr int kMaxOpset = 17;

// Reads a model file. Initializers and the tensors of Constant nodes become
// constant values; inputs keep their declared shapes, with every symbolic
// extent taken from `input_shapes` (input name -> full shape). user_error on
// a file that is missing, unreadable, not an ONNX model or truncated, on an
// unsupported opset, a model that names an undefined tensor, an input whose
// symbolic extents were not given, a given shape that contradicts the
// model's, or a given name the model has no input of.
Graph import_onnx(const std::string& path, const std::map<std::string, std::vector<int64_t>>& input_shapes);
// The same from the bytes of a model; `source` names it in messages.
Graph import_onnx_bytes(const std::string& bytes, const std::string& source,
                        const std::map<std::string, std::vector<int64_t>>& input_shapes);

// A serialized TensorProto (the input_0.pb files of ONNX's tests); user_error
// on a file that is missing or not one.
HostTensor read_onnx_tensor(const std::string& path);

// The element type of ONNX's TensorProto.DataType code; user_error naming
// `what` for one kiln does not support.
DType onnx_dtype(int code, const std::string& what);

// "x=1x3x48x192" -> ("x", {1, 3, 48, 192}); user_error otherwise.
std::pair<std::string, std::vector<int64_t>> parse_input_option(const std::string& text);
// Every --input option; user_error also when a name is given twice.
std::map<std::string, std::vector<int64_t>> parse_input_options(const std::vector<std::string>& texts);

}  // namespace kiln::graph
