// kiln-halide-baseline: the Halide contender of `kiln bench`, in its own
// process (libHalide links its own LLVM). It reads one JSON request per line
// on stdin and answers one JSON line on stdout:
//   {"cmd":"version"}  -> {"ok":true,"version":"Halide 14.x, Adams2019"}
//   {"cmd":"setup","op":OP,"params":{...},"parallelism":P,
//    "inputs":[{"path":F,"shape":[..]}..],"output":{"path":F,"shape":[..]}}
//       defines the op's pipeline, moves the raw f32 input files into the
//       layouts Halide computes in (halide/pipelines.h), autoschedules it
//       with Adams2019 for P cores, JIT-compiles it, runs it once and writes
//       the output file in kiln's layout
//       -> {"ok":true,"impl":..,"autoschedule_s":..,"compile_s":..}
//   {"cmd":"time","warmup":W,"repeat":R,"min_repeat_ms":T}
//       times the set-up pipeline with kiln's protocol (rt::time_function);
//       the layout moves are outside timing
//       -> {"ok":true,"median_ms":..,"samples_ms":[..]}
//   {"cmd":"quit"}
// A failure answers {"ok":false,"error":MESSAGE}. Everything else Halide or
// its autoscheduler prints goes to stderr (stdout is the reply channel).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "halide/pipelines.h"
#include "runtime/time_evaluator.h"

using nlohmann::json;
using namespace kiln::halide_baseline;

namespace {

struct Session {
  OpPipeline ops;
  Halide::Pipeline pipeline;
  std::vector<Halide::Buffer<float>> inputs;  // in the layouts Halide computes in
  Halide::Buffer<float> output;               // idem
  std::vector<std::vector<float>> storage;    // kiln's arrays: the inputs, then the output
  Halide::Target target;
};

std::vector<int> halide_sizes(const std::vector<int64_t>& shape) {
  std::vector<int> s;
  for (size_t i = shape.size(); i-- > 0;) s.push_back(static_cast<int>(shape[i]));
  return s;
}

int64_t elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void read_raw(const std::string& path, std::vector<float>& data) {
  std::ifstream f(path, std::ios::binary);
  if (!f.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data.size() * sizeof(float))))
    throw std::runtime_error("cannot read " + path);
}

void write_raw(const std::string& path, const float* data, int64_t n) {
  std::ofstream f(path, std::ios::binary);
  if (!f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n * sizeof(float))))
    throw std::runtime_error("cannot write " + path);
}

std::string plugin_path() {
  if (const char* p = std::getenv("KILN_ADAMS2019_PLUGIN")) return p;
  return KILN_ADAMS2019_PLUGIN;
}

Halide::Buffer<float> allocate(const Box& box) {
  std::vector<int> sizes, mins;
  for (auto& [min, extent] : box) {
    mins.push_back(min);
    sizes.push_back(extent);
  }
  Halide::Buffer<float> b(sizes);
  b.set_min(mins);
  return b;
}

// HL_MACHINE_PARAMS (Adams2019's "cores,cache bytes,balance") when set, else
// the cores kiln runs on, Halide's default 16 MB of last-level cache and
// balance 40.
Halide::MachineParams machine_params(int parallelism) {
  if (const char* env = std::getenv("HL_MACHINE_PARAMS")) return Halide::MachineParams(env);
  return Halide::MachineParams(parallelism, 16 << 20, 40);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

json setup(const json& req, std::unique_ptr<Session>& s) {
  static bool loaded = false;
  if (!loaded) {
    Halide::load_plugin(plugin_path());
    loaded = true;
  }
  s = std::make_unique<Session>();
  std::map<std::string, int64_t> params = req.at("params").get<std::map<std::string, int64_t>>();
  std::vector<std::vector<int64_t>> shapes;
  for (auto& in : req.at("inputs")) shapes.push_back(in.at("shape").get<std::vector<int64_t>>());
  std::vector<int64_t> out_shape = req.at("output").at("shape").get<std::vector<int64_t>>();
  s->ops = define_pipeline(req.at("op").get<std::string>(), params, shapes, out_shape);
  if (s->ops.inputs.size() != shapes.size())
    throw std::invalid_argument("the pipeline takes " + std::to_string(s->ops.inputs.size()) + " inputs, got " +
                                std::to_string(shapes.size()));
  s->target = Halide::get_jit_target_from_environment();
  // Kiln's arrays in, through the adapters (outside timing).
  s->storage.resize(shapes.size() + 1);
  for (size_t i = 0; i < shapes.size(); ++i) {
    s->storage[i].resize(elements(shapes[i]));
    read_raw(req.at("inputs")[i].at("path").get<std::string>(), s->storage[i]);
    Halide::Buffer<float> raw(s->storage[i].data(), halide_sizes(shapes[i]));
    Adapter& a = s->ops.prepare[i];
    if (a.convert.defined()) {
      a.source.set(raw);
      s->inputs.push_back(allocate(a.box));
      a.convert.realize(s->inputs.back(), s->target);
    } else {
      s->inputs.push_back(raw);
    }
    s->ops.inputs[i].set(s->inputs.back());
  }
  s->storage.back().resize(elements(out_shape));
  Halide::Buffer<float> kiln_out(s->storage.back().data(), halide_sizes(out_shape));
  const bool convert_out = s->ops.finish.convert.defined();
  s->output = convert_out ? allocate(s->ops.output_box) : kiln_out;
  s->pipeline = Halide::Pipeline(s->ops.output);
  int parallelism = req.value("parallelism", 2);
  auto t0 = std::chrono::steady_clock::now();
  Halide::AutoSchedulerResults as = s->pipeline.auto_schedule("Adams2019", s->target, machine_params(parallelism));
  double autoschedule_s = seconds_since(t0);
  std::cerr << as.schedule_source << std::flush;  // the chosen schedule, for KILN_HALIDE_VERBOSE
  t0 = std::chrono::steady_clock::now();
  s->pipeline.compile_jit(s->target);
  double compile_s = seconds_since(t0);
  s->pipeline.realize(s->output, s->target);
  if (convert_out) {  // back to kiln's layout, outside timing
    s->ops.finish.source.set(s->output);
    s->ops.finish.convert.realize(kiln_out, s->target);
  }
  write_raw(req.at("output").at("path").get<std::string>(), s->storage.back().data(), elements(out_shape));
  return {{"ok", true},
          {"impl", "Halide Adams2019 (" + std::to_string(parallelism) + " cores) in " + s->ops.layout + ", " +
                       s->target.to_string()},
          {"autoschedule_s", autoschedule_s},
          {"compile_s", compile_s}};
}
json time_it(const json& req, Session& s) {
  kiln::rt::TimeOptions o;
  o.warmup = req.value("warmup", 1);
  o.repeat = req.value("repeat", 5);
  o.min_repeat_ms = req.value("min_repeat_ms", 0.0);
  kiln::rt::TimeResult r = kiln::rt::time_function([&] { s.pipeline.realize(s.output, s.target); }, o);
  return {{"ok", true}, {"median_ms", r.median_ms}, {"samples_ms", r.samples_ms}};
}

}  // namespace

int main() {
  // Replies go to the original stdout; anything else printed to stdout
  // (by Halide or its plugin) goes to stderr instead.
  int reply_fd = dup(STDOUT_FILENO);
  dup2(STDERR_FILENO, STDOUT_FILENO);
  FILE* reply = fdopen(reply_fd, "w");
  if (!reply) return 1;
  std::unique_ptr<Session> session;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    json answer;
    try {
      json req = json::parse(line);
      std::string cmd = req.at("cmd").get<std::string>();
      if (cmd == "quit") break;
      if (cmd == "version") {
        answer = {{"ok", true},
                  {"version", std::string("Halide ") + KILN_HALIDE_VERSION + ", Adams2019 autoscheduler"}};
      } else if (cmd == "setup") {
        answer = setup(req, session);
      } else if (cmd == "time") {
        if (!session) throw std::invalid_argument("time before setup");
        answer = time_it(req, *session);
      } else {
        throw std::invalid_argument("unknown command '" + cmd + "'");
      }
    } catch (const Halide::Error& e) {
      session.reset();
      answer = {{"ok", false}, {"error", std::string("Halide: ") + e.what()}};
    } catch (const std::exception& e) {
      session.reset();
      answer = {{"ok", false}, {"error", e.what()}};
    }
    std::fputs((answer.dump() + "\n").c_str(), reply);
    std::fflush(reply);
  }
  return 0;
}
