#include "graph/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "base/error.h"

namespace kiln::graph {

namespace {

}  // namespace

DType onnx_dtype(int onnx_type, const std::string& what) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT: return DType::f32();
    case onnx::TensorProto::DOUBLE: return DType::f64();
    case onnx::TensorProto::FLOAT16: return DType::f16();
    case onnx::TensorProto::BFLOAT16: return DType::bf16();
    case onnx::TensorProto::UINT8: return DType::u8();
    case onnx::TensorProto::INT8: return DType::i8();
    case onnx::TensorProto::INT32: return DType::i32();
    case onnx::TensorProto::INT64: return DType::i64();
    case onnx::TensorProto::BOOL: return DType::boolean();
    default: break;
  }
  const std::string name = onnx::TensorProto::DataType_IsValid(onnx_type)
                               ? onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(onnx_type))
                               : "type " + std::to_string(onnx_type);
  user_error() << what << " has element type " << name
               << ", which kiln does not support (float, double, float16, bfloat16, uint8, int8, int32, int64, bool)";
  return DType();
}

namespace {

// A TensorProto's contents: raw_data, or the typed repeated field.
HostTensor tensor_of(const onnx::TensorProto& t, const std::string& what) {
  user_check(!t.has_data_location() || t.data_location() != onnx::TensorProto::EXTERNAL)
      << what << " keeps its data in an external file, which kiln does not read";
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  const DType dtype = onnx_dtype(t.data_type(), what);
  // The element count, checked against the data the file holds before
  // anything is allocated (a damaged file may claim any shape).
  const int64_t n = checked_elements(shape, what);
  const size_t bytes = static_cast<size_t>(n) * static_cast<size_t>((dtype.bits + 7) / 8);
  auto count_check = [&](int64_t have) {
    user_check(have == n) << what << " holds " << have << " values but its shape has " << n << " elements";
  };
  if (t.has_raw_data()) {
    user_check(t.raw_data().size() == bytes) << what << " holds " << t.raw_data().size() << " bytes of data, but its "
                                             << n << " elements need " << bytes << " (a truncated model?)";
  } else {
    switch (t.data_type()) {
      case onnx::TensorProto::FLOAT: count_check(t.float_data_size()); break;
      case onnx::TensorProto::DOUBLE: count_check(t.double_data_size()); break;
      case onnx::TensorProto::INT64: count_check(t.int64_data_size()); break;
      default: count_check(t.int32_data_size()); break;
    }
  }
  HostTensor h(dtype, shape);
  if (t.has_raw_data()) {
    std::memcpy(h.bytes.data(), t.raw_data().data(), bytes);
    return h;
  }
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      for (int64_t i = 0; i < n; ++i) h.set_float(i, t.float_data(static_cast<int>(i)));
      break;
    case onnx::TensorProto::DOUBLE:
      for (int64_t i = 0; i < n; ++i) h.set_float(i, t.double_data(static_cast<int>(i)));
      break;
    case onnx::TensorProto::INT64:
      for (int64_t i = 0; i < n; ++i) h.set_int(i, t.int64_data(static_cast<int>(i)));
      break;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      // 16-bit floats travel as their bit patterns in int32_data.
      for (int64_t i = 0; i < n; ++i) h.data<uint16_t>()[i] = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
      break;
    default:  // int32, int8, uint8, bool travel in int32_data
      for (int64_t i = 0; i < n; ++i) h.set_int(i, t.int32_data(static_cast<int>(i)));
      break;
  }
  return h;
}

AttrValue attr_of(const onnx::AttributeProto& a, const std::string& what) {
  switch (a.type()) {
    case onnx::AttributeProto::INT: return a.i();
    case onnx::AttributeProto::FLOAT: return static_cast<double>(a.f());
    case onnx::AttributeProto::STRING: return a.s();
    case onnx::AttributeProto::INTS: return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case onnx::AttributeProto::FLOATS: return std::vector<double>(a.floats().begin(), a.floats().end());
    case onnx::AttributeProto::TENSOR: return tensor_of(a.t(), what);
    default: break;
  }
  user_error() << what << " has an attribute of type "
               << onnx::AttributeProto::AttributeType_Name(a.type()) << ", which kiln does not read";
  return int64_t{0};
}

void read_input(Graph& g, const onnx::ValueInfoProto& in, const std::map<std::string, std::vector<int64_t>>& given,
                std::set<std::string>& used) {
  const std::string what = "input '" + in.name() + "' of " + g.source;
  user_check(in.type().has_tensor_type()) << what << " is not a tensor";
  const auto& tt = in.type().tensor_type();
  Value v;
  v.name = in.name();
  v.dtype = onnx_dtype(tt.elem_type(), what);
  auto it = given.find(in.name());
  const bool has_given = it != given.end();
  if (has_given) used.insert(in.name());
  user_check(tt.has_shape() || has_given) << what << " has no declared shape; give it with --input " << in.name()
                                          << "=SHAPE";
  const int rank = tt.has_shape() ? tt.shape().dim_size() : static_cast<int>(it->second.size());
  if (has_given)
    user_check(static_cast<int>(it->second.size()) == rank)
        << what << " has " << rank << " dimensions, but --input gives " << it->second.size() << " ("
        << shape_str(it->second) << ")";
  for (int d = 0; d < rank; ++d) {
    const bool fixed = tt.has_shape() && tt.shape().dim(d).has_dim_value() && tt.shape().dim(d).dim_value() > 0;
    if (fixed) {
      const int64_t want = tt.shape().dim(d).dim_value();
      if (has_given)
        user_check(it->second[static_cast<size_t>(d)] == want)
            << what << " has extent " << want << " in dimension " << d << ", but --input gives "
            << shape_str(it->second);
      v.shape.push_back(want);
      continue;
    }
    if (!has_given) {
      std::string param = tt.has_shape() ? tt.shape().dim(d).dim_param() : "";
      user_error() << what << " has a symbolic extent" << (param.empty() ? "" : " '" + param + "'") << " in dimension "
                   << d << "; fix it with --input " << in.name() << "=SHAPE (e.g. " << in.name() << "=1x3x48x192)";
    }
    v.shape.push_back(it->second[static_cast<size_t>(d)]);
  }
  checked_elements(v.shape, what);
  v.shape_known = true;
  g.inputs.push_back(g.add_value(std::move(v)));
}

}  // namespace

std::pair<std::string, std::vector<int64_t>> parse_input_option(const std::string& text) {
  const size_t eq = text.find('=');
  user_check(eq != std::string::npos && eq > 0)
      << "--input '" << text << "': write NAME=SHAPE, e.g. x=1x3x48x192";
  const std::string name = text.substr(0, eq);
  return {name, parse_shape(text.substr(eq + 1), "--input " + name)};
}

std::map<std::string, std::vector<int64_t>> parse_input_options(const std::vector<std::string>& texts) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const std::string& text : texts) {
    auto [name, shape] = parse_input_option(text);
    user_check(shapes.emplace(name, shape).second) << "--input " << name << " is given twice";
  }
  return shapes;
}

namespace {

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream f(path, std::ios::binary);
  user_check(f.good()) << "cannot open " << what << " '" << path << "'";
  std::stringstream ss;
  ss << f.rdbuf();
  user_check(!f.bad()) << "cannot read " << what << " '" << path << "'";
  return ss.str();
}

}  // namespace

HostTensor read_onnx_tensor(const std::string& path) {
  onnx::TensorProto t;
  user_check(t.ParseFromString(read_file(path, "tensor file"))) << "'" << path << "' is not a serialized ONNX tensor";
  return tensor_of(t, "tensor '" + path + "'");
}

Graph import_onnx(const std::string& path, const std::map<std::string, std::vector<int64_t>>& input_shapes) {
  return import_onnx_bytes(read_file(path, "model"), path, input_shapes);
}

Graph import_onnx_bytes(const std::string& bytes, const std::string& source,
                        const std::map<std::string, std::vector<int64_t>>& input_shapes) {
  onnx::ModelProto model;
  user_check(!bytes.empty()) << "model '" << source << "' is empty";
  user_check(model.ParseFromString(bytes))
      << "model '" << source << "' is not a valid ONNX file (protobuf could not parse it; truncated or not a model?)";
  user_check(model.has_graph() && model.graph().node_size() > 0)
      << "model '" << source << "' has no graph (truncated, or not an ONNX model?)";
  Graph g;
  g.source = source;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") g.opset = static_cast<int>(o.version());
  if (g.opset == 0 && model.opset_import_size() == 0) g.opset = 1;  // IR version 2 models name no opset
  user_check(g.opset >= kMinOpset && g.opset <= kMaxOpset)
      << "model '" << source << "' uses ONNX opset " << g.opset << "; kiln reads opsets " << kMinOpset << " to "
      << kMaxOpset;
  const onnx::GraphProto& gp = model.graph();

  std::set<std::string> initializer_names;
  for (const auto& t : gp.initializer()) {
    Value v;
    v.name = t.name();
    v.constant = tensor_of(t, "initializer '" + t.name() + "'");
    v.dtype = v.constant->dtype;
    v.shape = v.constant->shape;
    v.shape_known = true;
    initializer_names.insert(v.name);
    g.add_value(std::move(v));
  }
  // A given name the model lacks is reported first: it is likely a typo
  // for the input whose extents are then missing.
  std::set<std::string> input_names;
  std::string names;
  for (const auto& in : gp.input())
    if (!initializer_names.count(in.name())) {
      input_names.insert(in.name());
      names += (names.empty() ? "" : ", ") + in.name();
    }
  for (const auto& [name, shape] : input_shapes)
    user_check(input_names.count(name)) << "--input " << name << ": model '" << source << "' has no input called '"
                                        << name << "' (its inputs: " << names << ")";
  std::set<std::string> used;
  for (const auto& in : gp.input())
    if (!initializer_names.count(in.name())) read_input(g, in, input_shapes, used);

  for (int i = 0; i < gp.node_size(); ++i) {
    const onnx::NodeProto& np = gp.node(i);
    Node n;
    n.op_type = np.op_type();
    n.name = np.name().empty() ? "#" + std::to_string(i) : np.name();
    user_check(np.domain().empty() || np.domain() == "ai.onnx")
        << np.op_type() << " node '" << n.name << "' is in operator domain '" << np.domain()
        << "', which kiln does not support (only the default ONNX domain)";
    const std::string what = g.describe(n);
    for (const auto& a : np.attribute()) n.attrs[a.name()] = attr_of(a, what);
    for (const std::string& in : np.input()) {
      if (in.empty()) {
        n.inputs.push_back(-1);
        continue;
      }
      const int id = g.find_value(in);
      user_check(id >= 0) << what << " reads tensor '" << in
                          << "', which no earlier node, input or initializer defines (a malformed model?)";
      n.inputs.push_back(id);
    }
    // Optional outputs left out at the end (empty names) are dropped.
    int num_outputs = np.output_size();
    while (num_outputs > 0 && np.output(num_outputs - 1).empty()) --num_outputs;
    user_check(num_outputs > 0) << what << " has no outputs (a malformed model?)";
    for (int k = 0; k < num_outputs; ++k) {
      const std::string& out = np.output(k);
      Value v;
      v.name = out.empty() ? n.name + ":unused" + std::to_string(n.outputs.size()) : out;
      user_check(out.empty() || g.find_value(out) < 0)
          << what << " writes tensor '" << out << "', which is already defined (a malformed model?)";
      n.outputs.push_back(g.add_value(std::move(v)));
    }
    // A Constant node's value is known now; the node itself is dropped.
    if (n.op_type == "Constant") {
      user_check(n.outputs.size() == 1 && n.inputs.empty()) << what << " must have no inputs and one output";
      Value& v = g.values[static_cast<size_t>(n.outputs[0])];
      // The one value attribute it carries, of the type its name says.
      auto attr = [&](const char* name) -> const AttrValue* {
        auto it = n.attrs.find(name);
        return it == n.attrs.end() ? nullptr : &it->second;
      };
      auto wrong = [&](const char* name) {
        user_error() << what << " has attribute '" << name << "' of the wrong type (a malformed model?)";
      };
      if (const AttrValue* a = attr("value")) {
        if (!std::holds_alternative<HostTensor>(*a)) wrong("value");
        v.constant = std::get<HostTensor>(*a);
      } else if (const AttrValue* a = attr("value_float")) {
        const double* f = std::get_if<double>(a);
        if (!f) wrong("value_float");
        v.constant = HostTensor(DType::f32(), {});
        v.constant->set_float(0, *f);
      } else if (const AttrValue* a = attr("value_int")) {
        const int64_t* i = std::get_if<int64_t>(a);
        if (!i) wrong("value_int");
        v.constant = HostTensor(DType::i64(), {});
        v.constant->set_int(0, *i);
      } else if (const AttrValue* a = attr("value_ints")) {
        const auto* ints = std::get_if<std::vector<int64_t>>(a);
        if (!ints) wrong("value_ints");
        v.constant = HostTensor(DType::i64(), {static_cast<int64_t>(ints->size())});
        for (size_t k = 0; k < ints->size(); ++k) v.constant->set_int(static_cast<int64_t>(k), (*ints)[k]);
      } else if (const AttrValue* a = attr("value_floats")) {
        const auto* fl = std::get_if<std::vector<double>>(a);
        if (!fl) wrong("value_floats");
        v.constant = HostTensor(DType::f32(), {static_cast<int64_t>(fl->size())});
        for (size_t k = 0; k < fl->size(); ++k) v.constant->set_float(static_cast<int64_t>(k), (*fl)[k]);
      } else {
        user_error() << what << " has no value kiln reads (value, value_float(s), value_int(s))";
      }
      v.dtype = v.constant->dtype;
      v.shape = v.constant->shape;
      v.shape_known = true;
      continue;
    }
    g.nodes.push_back(std::move(n));
  }
  for (const auto& out : gp.output()) {
    const int id = g.find_value(out.name());
    user_check(id >= 0) << "model '" << source << "' returns tensor '" << out.name()
                        << "', which nothing defines (a malformed model?)";
    g.outputs.push_back(id);
  }
  user_check(!g.outputs.empty()) << "model '" << source << "' has no outputs";
  return g;
}

}  // namespace kiln::graph
