// Checking int8 (and bf16) kernels: inputs by role over the whole range of
// u8 and i8, scales that make requantization hit halfway cases, and a
// template's configs (optionally pinned to a tensorize option) compared with
// the interpreter. Shared by the quantized op tests.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "compute/interpreter.h"
#include "kernel_check.h"
#include "kernels/op_registry.h"
#include "template_check.h"

namespace kiln::testing {

inline CpuInfo cpu_with(bool vnni, bool bf16) {
  CpuInfo cpu = kiln::testing::avx512_cpu();
  cpu.avx512_vnni = vnni;
  cpu.avx512_bf16 = bf16;
  return cpu;
}

inline bool host_has(const char* feature) { return Target::host().has_feature(feature); }

// Inputs by role: u8 / i8 over their whole range, the bias in
// [-2^15, 2^15], scales of 2^-14 .. 2^-10 (every other one a power of two,
// so that f32(sum) * scale hits halfway cases), bf16 in [-2, 2].
inline std::vector<HostTensor> quantized_inputs(const OpInstance& op, uint64_t seed) {
  std::vector<HostTensor> in;
  for (const Tensor& t : op.inputs) {
    std::vector<int64_t> shape;
    for (const Expr& e : t.shape()) shape.push_back(*as_const_int(e));
    HostTensor h(t.dtype(), shape);
    if (t.name() == "scale") {
      std::mt19937_64 rng(seed);
      for (int64_t i = 0; i < h.num_elements(); ++i)
        h.set_float(i, std::ldexp(i % 2 == 0 ? 1.0 : 1.0 + static_cast<double>(rng() % 1000) / 1000.0,
                                  -10 - static_cast<int>(rng() % 5)));
    } else if (t.dtype() == DType::i32()) {
      h.fill_random(seed, -32768, 32768);
    } else if (t.dtype().is_float()) {
      h.fill_random(seed, -2.0, 2.0);
    } else {
      h.fill_random(seed, -1e9, 1e9);  // the whole range of u8 / i8
    }
    in.push_back(std::move(h));
    ++seed;
  }
  return in;
}

// The config's kernel against the interpreter: "" when they agree.
inline std::string check_config(const OpInstance& op, const Config& cfg, uint64_t seed, double tol) {
  const OpDef& def = find_op(op.op);
  ScheduledOp so = def.apply_config(op, cfg);
  std::vector<HostTensor> in = quantized_inputs(op, seed);
  HostTensor got = kiln::testing::run_schedule(*so.schedule, so.args, in);
  std::vector<std::pair<Tensor, HostTensor>> bound;
  for (size_t i = 0; i < op.inputs.size(); ++i) bound.emplace_back(op.inputs[i], in[i]);
  HostTensor want = interpret(op.outputs, bound)[0];
  return compare_tensors(want, got, tol, tol);
}

// The default config, then random ones, each with the knobs of `pinned`
// (a JSON object of knob values) taking those values. Returns the number
// checked.
inline int check_pinned_random_configs(const std::string& workload, const CpuInfo& cpu, const nlohmann::json& pinned,
                                       int count, std::mt19937_64& rng, double tol = 0) {
  OpInstance op = build_workload(workload);
  const OpDef& def = find_op(op.op);
  auto space = def.define_space(op, cpu);
  for (int c = 0; c < count; ++c) {
    Config cfg = c == 0 ? def.default_config(op, cpu, *space) : space->random(rng);
    if (!pinned.empty()) {
      nlohmann::json j = cfg.to_json();
      for (auto it = pinned.begin(); it != pinned.end(); ++it) j[it.key()] = it.value();
      cfg = space->from_json(j);
    }
    std::string err;
    try {
      err = check_config(op, cfg, rng(), tol);
    } catch (const std::exception& e) {
      err = std::string("exception: ") + e.what();
    }
    INFO(workload << " config " << cfg.str());
    CHECK(err == "");
  }
  return count;
}

// The same with `pin` (when set) as the tensorize knob's value.
inline int check_random_configs(const std::string& workload, const CpuInfo& cpu, const std::string& pin, int count,
                                std::mt19937_64& rng, double tol = 0) {
  return check_pinned_random_configs(
      workload, cpu, pin.empty() ? nlohmann::json::object() : nlohmann::json{{"tensorize", pin}}, count, rng, tol);
}

}  // namespace kiln::testing
