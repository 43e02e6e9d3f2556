// bench_core: kiln's untuned (default-config) kernels against oneDNN, interleaved in
// one process on the same inputs, so the ratio is fair on a noisy machine.
//
//   build/bench/bench_core [--db F] [--rounds R] [--min-repeat-ms T] [--json F] [WORKLOAD...]
//
// With --db, kiln uses each workload's best tuned config from the database
// (the default config where it has none).
// Each round times kiln then oneDNN (min_repeat_ms per measurement, 5
// measurements); a contender's figure is its best round's median. Outputs of
// the two are cross-checked. FLOPs include zero padding for every contender.
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "bench/contenders/onednn_kernels.h"
#include "tasks/kernel_build.h"
#include "codegen/build.h"
#include "codegen/runtime_dtype.h"
#include "base/error.h"
#include "runtime/time_evaluator.h"

using namespace kiln;
using nlohmann::json;

namespace {

struct Options {
  std::string db;  // tuned configs (else the default configs)
  int rounds = 5;
  double min_repeat_ms = 150;
  std::string json_path;
  std::vector<std::string> workloads;
};

json bench_one(const std::string& workload, const Options& o) {
  BuiltKernel k = build_kernel(workload, "", o.db);
  user_check(k.op.dtype == DType::f32()) << "bench_core compares f32 kernels only";
  auto jit = JitModule::compile({k.func}, k.target);
  kiln_packed_fn fn = jit->get_function(k.func.name);
  std::vector<rt::NDArray> arrays;
  std::vector<void*> ptrs;
  for (size_t i = 0; i < k.func.args.size(); ++i) {
    const BufferArg& a = k.func.args[i];
    arrays.push_back(rt::NDArray::empty(a.shape, to_runtime_dtype(a.dtype)));
    if (i < k.op.inputs.size()) arrays.back().fill_random(i + 1);
    ptrs.push_back(arrays.back().data());
  }
  rt::NDArray ref = rt::NDArray::empty(arrays.back().shape(), arrays.back().dtype());
  std::unique_ptr<baselines::OnednnContender> dnnl;
  if (k.op.op == "matmul") {
    user_check(k.op.ints.at("bias") == 0 && k.op.ints.at("relu") == 0) << "bench_core: plain matmul only";
    dnnl = baselines::onednn_matmul(arrays[0], arrays[1], ref);
  } else if (k.op.op == "conv2d") {
    dnnl = baselines::onednn_conv2d(arrays[0], arrays[1], ref, k.op.ints.at("stride"), k.op.ints.at("pad"),
                                    k.op.ints.at("dilation"));
  } else {
    user_error() << "bench_core: no oneDNN contender for '" << k.op.op << "'";
  }
  rt::TimeOptions topt;
  topt.warmup = 2;
  topt.repeat = 5;
  topt.min_repeat_ms = o.min_repeat_ms;
  double kiln_best = 1e30, dnnl_best = 1e30;
  std::vector<double> kiln_rounds, dnnl_rounds;
  for (int r = 0; r < o.rounds; ++r) {
    rt::TimeResult tk = rt::time_function([&] { fn(ptrs.data()); }, topt);
    rt::TimeResult td = rt::time_function([&] { dnnl->run(); }, topt);
    kiln_rounds.push_back(tk.median_ms);
    dnnl_rounds.push_back(td.median_ms);
    kiln_best = std::min(kiln_best, tk.median_ms);
    dnnl_best = std::min(dnnl_best, td.median_ms);
  }
  dnnl->finish();
  rt::CompareResult cmp = rt::compare(arrays.back(), ref, 1e-3, 1e-3);
  json j;
  j["workload"] = k.op.canonical;
  j["kiln_config"] = k.config_source;
  j["kiln_gflops"] = k.op.flops / (kiln_best * 1e6);
  j["onednn_gflops"] = k.op.flops / (dnnl_best * 1e6);
  j["ratio"] = dnnl_best / kiln_best;
  j["kiln_round_ms"] = kiln_rounds;
  j["onednn_round_ms"] = dnnl_rounds;
  j["onednn_impl"] = dnnl->impl();
  j["outputs_agree"] = cmp.ok;
  if (!cmp.ok) j["mismatch"] = cmp.message;
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "bench_core: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--rounds")
      o.rounds = std::max(1, std::atoi(value().c_str()));
    else if (a == "--min-repeat-ms")
      o.min_repeat_ms = std::atof(value().c_str());
    else if (a == "--json")
      o.json_path = value();
    else if (a == "--db")
      o.db = value();
    else if (a.rfind("--", 0) == 0) {
      std::cerr << "bench_core: unknown option " << a << "\n";
      return 2;
    } else
      o.workloads.push_back(a);
  }
  if (o.workloads.empty())
    o.workloads = {"matmul:M=1024,N=1024,K=1024", "conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1",
                   "conv2d:N=1,C=128,H=28,W=28,K=128,R=3,S=3,stride=1,pad=1"};
  json all = json::array();
  std::cout << baselines::onednn_version() << ", " << o.rounds << " interleaved rounds, best round's median, kiln "
            << (o.db.empty() ? "default configs" : "tuned configs from " + o.db) << "\n";
  std::cout << std::left << std::setw(62) << "workload" << std::right << std::setw(10) << "kiln" << std::setw(10)
            << "oneDNN" << std::setw(8) << "ratio"
            << "  outputs\n";
  try {
    for (auto& w : o.workloads) {
      json j = bench_one(w, o);
      all.push_back(j);
      std::cout << std::left << std::setw(62) << j["workload"].get<std::string>() << std::right << std::fixed
                << std::setprecision(1) << std::setw(10) << j["kiln_gflops"].get<double>() << std::setw(10)
                << j["onednn_gflops"].get<double>() << std::setprecision(2) << std::setw(8) << j["ratio"].get<double>()
                << "  " << (j["outputs_agree"].get<bool>() ? "agree" : "DIFFER") << "\n";
    }
  } catch (const UserError& e) {
    std::cerr << "bench_core: " << e.what() << "\n";
    return 2;
  }
  if (!o.json_path.empty()) std::ofstream(o.json_path) << all.dump(2) << "\n";
  return 0;
}
