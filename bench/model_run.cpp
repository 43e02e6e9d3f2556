#include "bench/model_run.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "bench/contenders/ort_client.h"
#include "graph/executor.h"
#include "graph/onnx_import.h"
#include "runtime/c_api.h"

namespace kiln {

namespace {

rt::NDArray read_raw(const std::string& path, const graph::Value& v, rt::NDArray like) {
  std::ifstream f(path, std::ios::binary);
  user_check(f.good()) << "cannot open input file '" << path << "'";
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string bytes = ss.str();
  user_check(bytes.size() == like.nbytes()) << "input file '" << path << "' has " << bytes.size() << " bytes; input '"
                                            << v.name << "' (" << v.dtype.str() << " " << graph::shape_str(v.shape)
                                            << ") needs " << like.nbytes();
  std::memcpy(like.data(), bytes.data(), bytes.size());
  return like;
}

std::vector<rt::NDArray> make_inputs(const graph::Executor& ex, const ModelRunOptions& o, uint64_t seed) {
  const graph::Graph& g = ex.graph();
  std::vector<rt::NDArray> ins;
  std::map<std::string, std::string> files;
  for (const std::string& spec : o.in_files) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos) {
      user_check(g.inputs.size() == 1) << "--in " << spec << ": the model has " << g.inputs.size()
                                       << " inputs; name each, --in NAME=FILE";
      files[g.values[static_cast<size_t>(g.inputs[0])].name] = spec;
    } else {
      files[spec.substr(0, eq)] = spec.substr(eq + 1);
    }
  }
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const int id = g.inputs[k];
    const graph::Value& v = g.values[static_cast<size_t>(id)];
    rt::NDArray a = rt::NDArray::empty(v.shape, ex.input_dtype(id));
    auto it = files.find(v.name);
    if (it != files.end()) {
      ins.push_back(read_raw(it->second, v, a));
      files.erase(it);
    } else {
      a.fill_random(seed * 1000 + k);  // inputs of one sample differ
      ins.push_back(a);
    }
  }
  for (auto& [name, file] : files) user_error() << "--in " << name << "=" << file << ": the model has no input '" << name << "'";
  return ins;
}

double element(const rt::NDArray& a, int64_t i) {
  user_check(a.dtype() == rt::DataType::f32()) << "kiln run-model compares f32 outputs only";
  return static_cast<double>(a.data_as<float>()[i]);
}

}  // namespace

ModelRunResult run_model(const ModelRunOptions& o) {
  user_check(o.samples >= 1) << "--samples must be at least 1";
  user_check(o.samples == 1 || o.in_files.empty()) << "--samples draws random inputs; it does not go with --in";
  graph::Graph g = graph::import_onnx(o.model, o.input_shapes);
  const int model_nodes = static_cast<int>(g.nodes.size());
  graph::ExecutorOptions eo;
  eo.db_path = o.db;
  eo.plan_layouts = o.plan_layouts;
  eo.target = o.target;
  graph::Executor ex(std::move(g), eo);

  ModelRunResult r;
  const graph::Graph& gr = ex.graph();
  r.model_nodes = model_nodes;
  r.folded_affine = ex.pass_stats().folded_affine;
  r.fused_activations = ex.pass_stats().fused_activation;
  r.fused_biases = ex.pass_stats().fused_bias;
  r.packed_weights = ex.pass_stats().packed_weights;
  r.padded_inputs = ex.pass_stats().padded_inputs;
  r.gemm_conv_transposes = ex.pass_stats().gemm_conv_transposes;
  r.blocked_convs = ex.pass_stats().blocked_convs;
  r.blocked_nodes = ex.pass_stats().blocked_nodes;
  r.layout_conversions = ex.pass_stats().layout_conversions;
  r.nodes = static_cast<int>(gr.nodes.size());
  r.folded = ex.folded_nodes();
  r.steps = static_cast<int>(ex.steps().size());
  for (const auto& s : ex.steps()) r.fused_elementwise += s.fused_nodes - 1;
  r.views = r.nodes - r.folded - r.steps - r.fused_elementwise;
  r.distinct_kernels = ex.distinct_kernels();
  for (const auto& s : ex.steps()) {
    if (s.config_source == "database") ++r.tuned_steps;
    else if (s.config_source == "default") ++r.default_steps;
    else ++r.generic_steps;
  }
  r.compile_s = ex.compile_seconds();
  r.peak_bytes = ex.memory().peak_bytes;
  r.intermediate_bytes = ex.memory().intermediate_bytes;
  r.buffers = ex.memory().buffers;
  r.threads = kiln_num_threads();
  r.device = ex.device_name();
  r.samples = o.samples;

  std::unique_ptr<baselines::OrtHelper> ort;
  if (o.compare_ort) {
    const std::string why = baselines::ort_unavailable_reason();
    user_check(why.empty()) << "--compare ort: " << why;
    ort = std::make_unique<baselines::OrtHelper>(r.threads);
    r.ort_version = ort->version();
    ort->load(o.model);
  }

  std::vector<rt::NDArray> first_inputs;
  for (int s = 0; s < o.samples; ++s) {
    std::vector<rt::NDArray> ins = make_inputs(ex, o, o.seed + static_cast<uint64_t>(s));
    std::vector<rt::NDArray> outs = ex.run(ins);
    if (s == 0) {
      first_inputs = ins;
      for (size_t k = 0; k < outs.size(); ++k) {
        ModelOutputCheck c;
        c.name = gr.values[static_cast<size_t>(gr.outputs[k])].name;
        c.shape = outs[k].shape();
        if (outs[k].dtype() == rt::DataType::f32() && outs[k].num_elements() > 0) {
          const float* p = outs[k].data_as<float>();
          const int64_t n = outs[k].num_elements();
          c.argmax = std::max_element(p, p + n) - p;
          c.min = *std::min_element(p, p + n);
          c.max = p[c.argmax];
        }
        r.outputs.push_back(c);
      }
      if (!o.out_file.empty()) {
        std::ofstream f(o.out_file, std::ios::binary);
        user_check(f.good()) << "cannot write --out file '" << o.out_file << "'";
        f.write(static_cast<const char*>(outs[0].data()), static_cast<std::streamsize>(outs[0].nbytes()));
      }
    }
    if (!ort) continue;
    std::vector<std::pair<std::string, rt::NDArray>> named;
    for (size_t k = 0; k < ins.size(); ++k) named.emplace_back(gr.values[static_cast<size_t>(gr.inputs[k])].name, ins[k]);
    std::vector<rt::NDArray> want = ort->run(named);
    user_check(want.size() == outs.size()) << "ONNX Runtime returned " << want.size() << " outputs, kiln " << outs.size();
    for (size_t k = 0; k < outs.size(); ++k) {
      ModelOutputCheck& c = r.outputs[k];
      user_check(want[k].shape() == outs[k].shape())
          << "output '" << c.name << "': ONNX Runtime's has shape " << graph::shape_str(want[k].shape()) << ", kiln's "
          << graph::shape_str(outs[k].shape());
      double err = 0, lo = INFINITY, hi = -INFINITY;
      int64_t amax_k = 0, amax_o = 0;
      for (int64_t i = 0; i < outs[k].num_elements(); ++i) {
        const double w = element(want[k], i), v = element(outs[k], i);
        err = std::max(err, std::isnan(v) != std::isnan(w) ? INFINITY : std::abs(v - w));
        lo = std::min(lo, w);
        hi = std::max(hi, w);
        if (v > element(outs[k], amax_k)) amax_k = i;
        if (w > element(want[k], amax_o)) amax_o = i;
      }
      const double range = hi - lo;
      if (err >= c.max_abs_error) {
        c.max_abs_error = err;
        c.range = range;
      }
      if (!(err <= kModelTolerance * std::max(range, 1e-30))) c.match = false;
      if (amax_k == amax_o) ++c.same_argmax;
    }
  }
  for (const auto& c : r.outputs) r.match = r.match && c.match;

  if (o.profile > 0) {
    ex.run(first_inputs);
    rt::TimeOptions t;
    t.repeat = 3;
    t.min_repeat_ms = 10;
    const std::vector<double> ms = ex.time_steps(t);
    for (size_t s = 0; s < ms.size(); ++s) {
      const graph::PlanStep& st = ex.steps()[s];
      const graph::Node& n = gr.nodes[static_cast<size_t>(st.node)];
      r.profile.push_back({n.name, n.op_type, st.workload, st.config_source, st.fused_nodes, ms[s]});
      r.profile_total_ms += ms[s];
    }
    std::stable_sort(r.profile.begin(), r.profile.end(), [](const auto& a, const auto& b) { return a.ms > b.ms; });
    if (static_cast<int>(r.profile.size()) > o.profile) r.profile.resize(static_cast<size_t>(o.profile));
  }
  if (o.time) {
    rt::TimeResult kt, ot;
    for (int round = 0; round < o.rounds; ++round) {
      ex.run(first_inputs);
      const rt::TimeResult k = ex.time(o.timing);
      kt.samples_ms.insert(kt.samples_ms.end(), k.samples_ms.begin(), k.samples_ms.end());
      kt.number = k.number;
      if (ort) {
        const rt::TimeResult t = ort->time_round(o.timing);
        ot.samples_ms.insert(ot.samples_ms.end(), t.samples_ms.begin(), t.samples_ms.end());
        ot.number = t.number;
      }
    }
    rt::summarize(kt);
    r.kiln_time = kt;
    if (ort) {
      rt::summarize(ot);
      r.ort_time = ot;
    }
  }
  return r;
}

}  // namespace kiln
