// ONNX import: constants, symbolic inputs, shape folding, and one test per
// error message (bad files, unsupported operators and opsets, inputs).
#include <catch2/catch.hpp>
#include <cmath>

#include "graph/onnx_import.h"
#include "graph/shape_inference.h"
#include "support/onnx_builder.h"
#include "test_codegen_util.h"

using namespace kiln;
using kiln::test::OnnxBuilder;
using kiln::test::user_error_of;

namespace {

const std::map<std::string, std::vector<int64_t>> kNoShapes;

// The user error that shape inference of the model `b` (imported as `source`) reports.
std::string inference_error(const OnnxBuilder& b, const std::string& source) {
  graph::Graph g = graph::import_onnx_bytes(b.bytes(), source, kNoShapes);
  return user_error_of([&] { graph::infer_and_fold(g); });
}

// x[N,3,4,4] -> Relu -> Shape/Slice/Concat -> Reshape to [N, 48].
OnnxBuilder flatten_model(int opset = 13) {
  OnnxBuilder b(opset);
  b.input("x", {-1, 3, 4, 4})
      .ints("start", {0})
      .ints("end", {1})
      .ints("rest", {-1})
      .node("Relu", {"x"}, {"r"})
      .node("Shape", {"r"}, {"s"})
      .node("Slice", {"s", "start", "end"}, {"n"})
      .node("Concat", {"n", "rest"}, {"shape"}, {{"axis", int64_t{0}}})
      .node("Reshape", {"r", "shape"}, {"y"})
      .output("y");
  return b;
}

}  // namespace

TEST_CASE("onnx import: symbolic extents come from --input and shape arithmetic folds") {
  graph::Graph g = graph::import_onnx_bytes(flatten_model().bytes(), "flatten.onnx", {{"x", {2, 3, 4, 4}}});
  REQUIRE(g.inputs.size() == 1);
  CHECK(g.values[static_cast<size_t>(g.inputs[0])].shape == std::vector<int64_t>{2, 3, 4, 4});
  graph::InferredGraph inf = graph::infer_and_fold(g);
  const graph::Value& shape = g.values[static_cast<size_t>(g.find_value("shape"))];
  REQUIRE(shape.constant);
  CHECK(shape.constant->get_int(0) == 2);
  CHECK(shape.constant->get_int(1) == -1);
  CHECK(g.values[static_cast<size_t>(g.find_value("y"))].shape == std::vector<int64_t>{2, 48});
  // Relu and Reshape run; Shape, Slice and Concat folded.
  CHECK(std::count(inf.folded.begin(), inf.folded.end(), true) == 3);
  CHECK(inf.computes.back().is_view);
}

TEST_CASE("onnx import: Constant nodes become constants and are not nodes") {
  OnnxBuilder b;
  b.input("x", {2, 2}).constant("c", {2, 2}, {1, 2, 3, 4}).node("Add", {"x", "c"}, {"y"}).output("y");
  graph::Graph g = graph::import_onnx_bytes(b.bytes(), "c.onnx", kNoShapes);
  REQUIRE(g.nodes.size() == 1);
  const graph::Value& c = g.values[static_cast<size_t>(g.find_value("c"))];
  REQUIRE(c.constant);
  CHECK(c.constant->get_float(3) == 4.0);
}

TEST_CASE("onnx import errors: files") {
  CHECK_THAT(user_error_of([] { graph::import_onnx("/nonexistent/m.onnx", kNoShapes); }),
             Catch::Contains("cannot open model '/nonexistent/m.onnx'"));
  CHECK_THAT(user_error_of([] { graph::import_onnx_bytes("", "e.onnx", kNoShapes); }),
             Catch::Contains("model 'e.onnx' is empty"));
  CHECK_THAT(user_error_of([] { graph::import_onnx_bytes("this is not protobuf \xff\xff", "t.onnx", kNoShapes); }),
             Catch::Contains("is not a valid ONNX file"));
  // Every truncation of a valid model is an error, never a crash.
  const std::string full = flatten_model().bytes();
  for (size_t len = 1; len < full.size(); len += 7) {
    const std::string msg = user_error_of([&] {
      graph::Graph g = graph::import_onnx_bytes(full.substr(0, len), "cut.onnx", {{"x", {1, 3, 4, 4}}});
      graph::infer_and_fold(g);
    });
    CHECK_THAT(msg, Catch::Contains("cut.onnx") || Catch::Contains("node"));
  }
}

TEST_CASE("onnx import errors: an unsupported operator names the operator, the node and the opset") {
  OnnxBuilder b(11);
  b.input("x", {1, 4}).node("Einsum", {"x"}, {"y"}, {}, "my_einsum").output("y");
  graph::Graph g = graph::import_onnx_bytes(b.bytes(), "u.onnx", kNoShapes);
  const std::string msg = user_error_of([&] { graph::infer_and_fold(g); });
  CHECK_THAT(msg, Catch::Contains("does not support operator Einsum (node 'my_einsum', opset 11"));
}

TEST_CASE("onnx import errors: opsets outside 7..17") {
  CHECK_THAT(user_error_of([] { graph::import_onnx_bytes(flatten_model(18).bytes(), "o.onnx", {{"x", {1, 3, 4, 4}}}); }),
             Catch::Contains("uses ONNX opset 18; kiln reads opsets 7 to 17"));
}

TEST_CASE("onnx import errors: inputs") {
  const std::string m = flatten_model().bytes();
  CHECK_THAT(user_error_of([&] { graph::import_onnx_bytes(m, "f.onnx", kNoShapes); }),
             Catch::Contains("input 'x' of f.onnx has a symbolic extent 'N' in dimension 0; fix it with --input x=SHAPE"));
  CHECK_THAT(user_error_of([&] { graph::import_onnx_bytes(m, "f.onnx", {{"x", {1, 3, 4, 4}}, {"z", {1}}}); }),
             Catch::Contains("--input z: model 'f.onnx' has no input called 'z' (its inputs: x)"));
  CHECK_THAT(user_error_of([&] { graph::import_onnx_bytes(m, "f.onnx", {{"x", {1, 3, 5, 4}}}); }),
             Catch::Contains("has extent 4 in dimension 2, but --input gives 1x3x5x4"));
  CHECK_THAT(user_error_of([&] { graph::import_onnx_bytes(m, "f.onnx", {{"x", {1, 3, 4}}}); }),
             Catch::Contains("has 4 dimensions, but --input gives 3"));
  CHECK_THAT(user_error_of([] { graph::parse_input_option("x1x3"); }), Catch::Contains("write NAME=SHAPE"));
  CHECK_THAT(user_error_of([] { graph::parse_input_option("x=1x0x3"); }), Catch::Contains("is not a shape"));
  CHECK_THAT(user_error_of([] { graph::parse_input_option("x=1xx3"); }), Catch::Contains("is not a shape"));
  CHECK(graph::parse_input_option("img=1x3x48x192").second == std::vector<int64_t>{1, 3, 48, 192});
  CHECK_THAT(user_error_of([] { graph::parse_input_options({"x=1x2", "x=1x3"}); }), Catch::Contains("--input x is given twice"));
}

TEST_CASE("onnx import errors: malformed graphs") {
  OnnxBuilder undefined;
  undefined.input("x", {2}).node("Relu", {"nothing"}, {"y"}, {}, "r").output("y");
  CHECK_THAT(user_error_of([&] { graph::import_onnx_bytes(undefined.bytes(), "m.onnx", kNoShapes); }),
             Catch::Contains("reads tensor 'nothing', which no earlier node, input or initializer defines"));
  OnnxBuilder twice;
  twice.input("x", {2}).node("Relu", {"x"}, {"y"}).node("Relu", {"x"}, {"y"}).output("y");
  CHECK_THAT(user_error_of([&] { graph::import_onnx_bytes(twice.bytes(), "m.onnx", kNoShapes); }),
             Catch::Contains("writes tensor 'y', which is already defined"));
  OnnxBuilder no_out;
  no_out.input("x", {2}).node("Relu", {"x"}, {"y"}).output("z");
  CHECK_THAT(user_error_of([&] { graph::import_onnx_bytes(no_out.bytes(), "m.onnx", kNoShapes); }),
             Catch::Contains("returns tensor 'z', which nothing defines"));
}

TEST_CASE("onnx import errors: compile-time inputs, shapes and attributes") {
  OnnxBuilder dyn;
  dyn.input("x", {2, 6}).input("shape", {2}, onnx::TensorProto::INT64).node("Reshape", {"x", "shape"}, {"y"}, {}, "rs").output("y");
  graph::Graph g1 = graph::import_onnx_bytes(dyn.bytes(), "d.onnx", kNoShapes);
  CHECK_THAT(user_error_of([&] { graph::infer_and_fold(g1); }),
             Catch::Contains("Reshape node 'rs' (opset 13) takes its shape from tensor 'shape', which kiln cannot compute "
                             "before the network runs"));
  OnnxBuilder bad_reshape;
  bad_reshape.input("x", {2, 6}).ints("shape", {5, -1}).node("Reshape", {"x", "shape"}, {"y"}, {}, "rs").output("y");
  graph::Graph g2 = graph::import_onnx_bytes(bad_reshape.bytes(), "r.onnx", kNoShapes);
  CHECK_THAT(user_error_of([&] { graph::infer_and_fold(g2); }), Catch::Contains("cannot reshape 2x6 into 5x-1"));
  OnnxBuilder bcast;
  bcast.input("a", {2, 3}).input("b", {4}).node("Add", {"a", "b"}, {"y"}, {}, "add").output("y");
  graph::Graph g3 = graph::import_onnx_bytes(bcast.bytes(), "b.onnx", kNoShapes);
  CHECK_THAT(user_error_of([&] { graph::infer_and_fold(g3); }), Catch::Contains("cannot broadcast shapes 2x3 and 4"));
  OnnxBuilder resize;
  resize.input("x", {1, 1, 2, 2}).weight("scales", {4}, {1, 1, 2, 2})
      .node("Resize", {"x", "", "scales"}, {"y"}, {{"mode", std::string("cubic")}}, "rz").output("y");
  graph::Graph g4 = graph::import_onnx_bytes(resize.bytes(), "z.onnx", kNoShapes);
  CHECK_THAT(user_error_of([&] { graph::infer_and_fold(g4); }), Catch::Contains("Resize node 'rz' (opset 13) has mode 'cubic'"));
}

TEST_CASE("onnx import errors: tensors larger than kiln handles") {
  // A declared input shape (and one given with --input).
  OnnxBuilder huge_in;
  huge_in.input("x", {int64_t{1} << 21, int64_t{1} << 20}).node("Relu", {"x"}, {"y"}).output("y");
  CHECK_THAT(user_error_of([&] { graph::import_onnx_bytes(huge_in.bytes(), "h.onnx", kNoShapes); }),
             Catch::Contains("input 'x' of h.onnx has shape 2097152x1048576, more than the 1099511627776 elements "
                             "kiln handles in one tensor"));
  OnnxBuilder batch;
  batch.input("x", {-1, 4}).node("Relu", {"x"}, {"y"}).output("y");
  CHECK_THAT(user_error_of([&] {
               graph::import_onnx_bytes(batch.bytes(), "b.onnx", {{"x", {int64_t{1} << 39, 4}}});
             }),
             Catch::Contains("has shape 549755813888x4, more than the 1099511627776 elements"));
  // 2^31 elements and more are fine: kiln indexes such tensors in 64 bits.
  graph::import_onnx_bytes(batch.bytes(), "b.onnx", {{"x", {int64_t{1} << 30, 4}}});
  // A reshape whose extents multiply past 2^63 (the product is checked on the way).
  OnnxBuilder rs;
  rs.input("x", {2, 6})
      .ints("shape", {int64_t{1} << 40, int64_t{1} << 40, -1})
      .node("Reshape", {"x", "shape"}, {"y"}, {}, "rs")
      .output("y");
  CHECK_THAT(inference_error(rs, "r.onnx"),
             Catch::Contains("Reshape node 'rs' (opset 13) has shape 1099511627776x1099511627776x-1, more than the "
                             "1099511627776 elements kiln handles in one tensor"));
  // A node whose output would be too large.
  OnnxBuilder up;
  up.input("x", {1, 1, 2, 2})
      .weight("scales", {4}, {1, 1, 1e6f, 1e6f})
      .node("Resize", {"x", "", "scales"}, {"y"}, {{"mode", std::string("nearest")}}, "rz")
      .output("y");
  CHECK_THAT(inference_error(up, "u.onnx"),
             Catch::Contains("Resize node 'rz' (opset 13) in u.onnx: its output 0 has shape 1x1x2000000x2000000, more "
                             "than the 1099511627776 elements kiln handles in one tensor"));
  // A transposed convolution whose output extent passes int64 on the way.
  OnnxBuilder ct;
  ct.input("x", {1, 2, int64_t{1} << 34, 1})
      .weight("w", {2, 4, 3, 1})
      .node("ConvTranspose", {"x", "w"}, {"y"}, {{"strides", std::vector<int64_t>{int64_t{1} << 30, 1}}}, "ct")
      .output("y");
  CHECK_THAT(inference_error(ct, "t.onnx"),
             Catch::Contains("ConvTranspose node 'ct' (opset 13) has an output extent past 1099511627776 on spatial "
                             "axis 0"));
}

TEST_CASE("onnx import errors: window attributes and scales out of range") {
  using Ints = std::vector<int64_t>;
  const int64_t big = int64_t{1} << 62;  // products and sums of these would overflow
  auto message = [](const OnnxBuilder& b) { return inference_error(b, "w.onnx"); };
  auto conv = [](const std::string& op, const Ints& w, std::vector<OnnxBuilder::Attr> attrs) {
    OnnxBuilder b;
    b.input("x", {1, 2, 8, 8}).weight("w", w).node(op, {"x", "w"}, {"y"}, attrs, "c").output("y");
    return b;
  };
  CHECK_THAT(message(conv("Conv", {4, 2, 3, 3}, {{"strides", Ints{big, 1}}})),
             Catch::Contains("Conv node 'c' (opset 13) has a stride 4611686018427387904, outside [1, 2147483647]"));
  CHECK_THAT(message(conv("Conv", {4, 2, 3, 3}, {{"dilations", Ints{big, 1}}})),
             Catch::Contains("has a dilation 4611686018427387904, outside [1, 2147483647]"));
  // Asymmetric pads go to a padded copy of the input; these stay on the convolution.
  CHECK_THAT(
      message(conv("Conv", {4, 2, 3, 3}, {{"pads", Ints{big, 0, big, 0}}})),
      Catch::Contains("Conv node 'c' (opset 13) has a pad 4611686018427387904, outside [-2147483647, 2147483647]"));
  CHECK_THAT(message(conv("ConvTranspose", {2, 4, 3, 3}, {{"strides", Ints{0, 1}}})),
             Catch::Contains("ConvTranspose node 'c' (opset 13) has a stride 0, outside [1, 2147483647]"));
  CHECK_THAT(message(conv("ConvTranspose", {2, 4, 3, 3}, {{"dilations", Ints{-3, 1}}})),
             Catch::Contains("has a dilation -3, outside [1, 2147483647]"));
  CHECK_THAT(message(conv("ConvTranspose", {2, 4, 3, 3}, {{"output_padding", Ints{-3, 0}}})),
             Catch::Contains("has an output_padding -3, outside [0, 2147483647]"));
  OnnxBuilder pool;
  pool.input("x", {1, 2, 8, 8}).node("MaxPool", {"x"}, {"y"}, {{"kernel_shape", Ints{big, 2}}}, "p").output("y");
  CHECK_THAT(message(pool), Catch::Contains("MaxPool node 'p' (opset 13) has a kernel extent 4611686018427387904, "
                                            "outside [1, 2147483647]"));
  OnnxBuilder nan_scale;
  nan_scale.input("x", {1, 1, 2, 2})
      .weight("scales", {4}, {1, 1, std::nanf(""), 2})
      .node("Resize", {"x", "", "scales"}, {"y"}, {}, "rz")
      .output("y");
  CHECK_THAT(message(nan_scale), Catch::Contains("Resize node 'rz' (opset 13) has scale nan on axis 2, which resizes "
                                                 "extent 2 to nan (kiln needs 1 to 1099511627776)"));
  OnnxBuilder no_axes;
  no_axes.input("x", {2, 3}).node("Unsqueeze", {"x"}, {"y"}, {}, "u").output("y");
  CHECK_THAT(message(no_axes), Catch::Contains("Unsqueeze node 'u' (opset 13) has no axes to insert"));
}

TEST_CASE("onnx import errors: constant Gather indices out of range") {
  auto model = [](const std::vector<int64_t>& indices) {
    OnnxBuilder b;
    b.input("x", {3, 5}).ints("i", indices).node("Gather", {"x", "i"}, {"y"}, {{"axis", int64_t{1}}}, "g").output("y");
    return b;
  };
  auto gather = [&](const std::vector<int64_t>& indices) { return inference_error(model(indices), "g.onnx"); };
  CHECK_THAT(gather({1, 5}), Catch::Contains("Gather node 'g' (opset 13) has index 5 (element 1 of its indices) "
                                             "outside [-5, 4], the range of axis 1 (extent 5)"));
  CHECK_THAT(gather({-6}), Catch::Contains("has index -6 (element 0 of its indices) outside [-5, 4]"));
  // Both ends of the range are indices.
  graph::Graph g = graph::import_onnx_bytes(model({-5, 4, 0}).bytes(), "g.onnx", kNoShapes);
  CHECK_NOTHROW(graph::infer_and_fold(g));
}

TEST_CASE("onnx import errors: attributes of the wrong type and nodes without outputs") {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  auto* n = g->add_node();
  n->set_op_type("Constant");
  n->set_name("c");
  n->add_output("c");
  auto* a = n->add_attribute();
  a->set_name("value_float");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(3);
  g->add_output()->set_name("c");
  CHECK_THAT(user_error_of([&] { graph::import_onnx_bytes(m.SerializeAsString(), "w.onnx", kNoShapes); }),
             Catch::Contains("has attribute 'value_float' of the wrong type"));

  OnnxBuilder none;
  none.input("x", {2}).node("Relu", {"x"}, {}, {}, "silent").output("x");
  CHECK_THAT(user_error_of([&] { graph::import_onnx_bytes(none.bytes(), "n.onnx", kNoShapes); }),
             Catch::Contains("Relu node 'silent' (opset 13) has no outputs"));
}

TEST_CASE("onnx import: optional outputs left out at the end are dropped") {
  OnnxBuilder b(15);
  b.input("x", {1, 2, 3, 3}).weight("s", {2}).weight("b", {2}).weight("m", {2}).weight("v", {2}, {1.f, 2.f})
      .node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y", "", ""}).output("y");
  graph::Graph g = graph::import_onnx_bytes(b.bytes(), "bn.onnx", kNoShapes);
  REQUIRE(g.nodes.size() == 1);
  CHECK(g.nodes[0].outputs.size() == 1);
  graph::infer_and_fold(g);
}

TEST_CASE("onnx operators: shapes and messages the review found wrong") {
  auto shape_of = [](OnnxBuilder b, const std::map<std::string, std::vector<int64_t>>& shapes) {
    graph::Graph g = graph::import_onnx_bytes(b.bytes(), "m.onnx", shapes);
    graph::infer_and_fold(g);
    return g.values[static_cast<size_t>(g.outputs[0])].shape;
  };
  // Flatten's axis counts from the end like any other: -1 keeps all but the last.
  OnnxBuilder fl;
  fl.input("x", {2, 3, 4, 5}).node("Flatten", {"x"}, {"y"}, {{"axis", int64_t{-1}}}).output("y");
  CHECK(shape_of(fl, {}) == std::vector<int64_t>{24, 5});
  // ceil_mode drops a window that would start in the padding past the input.
  OnnxBuilder pool;
  pool.input("x", {1, 1, 6, 6})
      .node("MaxPool", {"x"}, {"y"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{3, 3}},
                                      {"ceil_mode", int64_t{1}}})
      .output("y");
  CHECK(shape_of(pool, {}) == std::vector<int64_t>{1, 1, 2, 2});
  // A negative step starts at most at the last element.
  OnnxBuilder sl(13);
  sl.input("x", {4}).ints("st", {-5}).ints("en", {-10}).ints("ax", {0}).ints("step", {-1})
      .node("Slice", {"x", "st", "en", "ax", "step"}, {"y"}).output("y");
  CHECK(shape_of(sl, {}) == std::vector<int64_t>{1});
  // A single-element exponent of a higher rank still broadcasts the result.
  OnnxBuilder pw;
  pw.input("x", {3}).weight("e", {1, 1}, {2.f}).node("Pow", {"x", "e"}, {"y"}).output("y");
  CHECK(shape_of(pw, {}) == std::vector<int64_t>{1, 3});
  // Gemm with a scalar C and one output column.
  OnnxBuilder gm;
  gm.input("a", {4, 3}).weight("b", {3, 1}).weight("c", {}, {0.5f}).node("Gemm", {"a", "b", "c"}, {"y"}).output("y");
  CHECK(shape_of(gm, {}) == std::vector<int64_t>{4, 1});

  auto error_of = [](OnnxBuilder b) {
    return user_error_of([&] {
      graph::Graph g = graph::import_onnx_bytes(b.bytes(), "m.onnx", {});
      graph::infer_and_fold(g);
    });
  };
  OnnxBuilder un(13);
  un.input("x", {3}).ints("axes", {0, 0}).node("Unsqueeze", {"x", "axes"}, {"y"}, {}, "u").output("y");
  CHECK_THAT(error_of(un), Catch::Contains("Unsqueeze node 'u' (opset 13) names axis 0 twice"));
  OnnxBuilder cb;
  cb.input("x", {1, 2, 5, 5}).weight("w", {4, 2, 3, 3}).weight("b", {3})
      .node("Conv", {"x", "w", "b"}, {"y"}, {}, "cv").output("y");
  CHECK_THAT(error_of(cb), Catch::Contains("Conv node 'cv' (opset 13) has 3 biases for 4 output channels"));
  OnnxBuilder ks;
  ks.input("x", {1, 2, 5, 5}).weight("w", {4, 2, 3, 3})
      .node("Conv", {"x", "w"}, {"y"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}}, "cv").output("y");
  CHECK_THAT(error_of(ks), Catch::Contains("has a kernel_shape that differs from its weights' 4x2x3x3"));
  OnnxBuilder gc;
  gc.input("a", {4, 3}).weight("b", {3, 5}).weight("c", {3}).node("Gemm", {"a", "b", "c"}, {"y"}, {}, "gm").output("y");
  CHECK_THAT(error_of(gc), Catch::Contains("Gemm node 'gm' (opset 13) cannot broadcast shapes 3 and 4x5"));
  OnnxBuilder cs;
  cs.weight("a", {}, {1.f}).weight("b", {}, {2.f}).input("x", {1}).node("Concat", {"a", "b"}, {"y"}, {{"axis", int64_t{0}}}, "cc").output("y");
  CHECK_THAT(error_of(cs), Catch::Contains("joins scalars"));
}
