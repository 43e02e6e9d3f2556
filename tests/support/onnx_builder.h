// Small ONNX models built in memory for the graph layer's tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <variant>
#include <vector>

#include "compute/interpreter.h"

namespace kiln::test {

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int opset = 13) {
    model_.set_ir_version(8);
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
  }
  // A float input; an extent < 0 is symbolic ("N").
  OnnxBuilder& input(const std::string& name, const std::vector<int64_t>& dims, int elem = onnx::TensorProto::FLOAT) {
    auto* in = model_.mutable_graph()->add_input();
    in->set_name(name);
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    for (int64_t d : dims) {
      auto* dim = tt->mutable_shape()->add_dim();
      if (d < 0)
        dim->set_dim_param("N");
      else
        dim->set_dim_value(d);
    }
    return *this;
  }
  OnnxBuilder& output(const std::string& name) {
    model_.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  // An initializer of f32 values (random in [-1, 1) when `values` is empty).
  OnnxBuilder& weight(const std::string& name, const std::vector<int64_t>& dims, std::vector<float> values = {},
                      uint64_t seed = 1) {
    auto* t = model_.mutable_graph()->add_initializer();
    fill(t, name, dims, values, seed);
    return *this;
  }
  OnnxBuilder& ints(const std::string& name, const std::vector<int64_t>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return *this;
  }
  // A node; attributes as (name, int64 | float | ints | string).
  using Attr = std::pair<std::string, std::variant<int64_t, float, std::vector<int64_t>, std::string>>;
  OnnxBuilder& node(const std::string& op, const std::vector<std::string>& ins, const std::vector<std::string>& outs,
                    const std::vector<Attr>& attrs = {}, const std::string& name = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(model_.graph().node_size()) : name);
    for (auto& i : ins) n->add_input(i);
    for (auto& o : outs) n->add_output(o);
    for (auto& [key, value] : attrs) {
      auto* a = n->add_attribute();
      a->set_name(key);
      if (auto* i = std::get_if<int64_t>(&value)) {
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(*i);
      } else if (auto* f = std::get_if<float>(&value)) {
        a->set_type(onnx::AttributeProto::FLOAT);
        a->set_f(*f);
      } else if (auto* v = std::get_if<std::vector<int64_t>>(&value)) {
        a->set_type(onnx::AttributeProto::INTS);
        for (int64_t x : *v) a->add_ints(x);
      } else {
        a->set_type(onnx::AttributeProto::STRING);
        a->set_s(std::get<std::string>(value));
      }
    }
    return *this;
  }
  // A Constant node holding f32 values.
  OnnxBuilder& constant(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values) {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type("Constant");
    n->set_name("const_" + name);
    n->add_output(name);
    auto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    fill(a->mutable_t(), name, dims, values, 1);
    return *this;
  }
  std::string bytes() const { return model_.SerializeAsString(); }

 private:
  static void fill(onnx::TensorProto* t, const std::string& name, const std::vector<int64_t>& dims,
                   std::vector<float> values, uint64_t seed) {
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      n *= d;
    }
    if (values.empty()) {
      HostTensor h(DType::f32(), {n});
      h.fill_random(seed);
      values.assign(h.data<float>(), h.data<float>() + n);
    }
    for (float v : values) t->add_float_data(v);
  }
  onnx::ModelProto model_;
};

}  // namespace kiln::test
