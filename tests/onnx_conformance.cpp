// ONNX's per-operator conformance cases (Debian's libonnx-testdata: a
// model.onnx and test_data_set_N/{input,output}_K.pb per case) run through
// kiln's importer and executor. A case is
//   unsupported: its model uses an operator kiln does not import;
//   rejected:    every operator is supported, but kiln refuses the case
//                with a user error (an attribute value or element type it
//                does not handle), which is printed;
//   passed / failed: kiln ran it and its outputs match / do not match
//                (floats within rtol 1e-3 + atol 1e-5, ONNX's own test
//                tolerance; integers and bools exactly).
// kiln takes shapes, axes and slice bounds at compile time: where a case
// passes them as inputs, they are bound as constants (as an exported
// network has them) and the case says so. Each case runs in a child
// process, so a crash fails that case only.
//
//   onnx_conformance [--verbose] [--filter SUBSTRING] [DATA_DIR]
// prints the counts, per operator with --verbose, and exits 1 when a case
// failed (77, skipped, when DATA_DIR does not exist).
#include <sys/wait.h>
#include <unistd.h>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "base/error.h"
#include "codegen/runtime_dtype.h"
#include "graph/executor.h"
#include "graph/onnx_import.h"
#include "graph/onnx_ops.h"

namespace fs = std::filesystem;
using namespace kiln;

namespace {

enum class Outcome { kPassed, kFailed, kRejected, kUnsupported };

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// Whether every operator of the model is one kiln imports; fills `ops`.
bool all_supported(const std::string& model_path, std::set<std::string>* ops) {
  onnx::ModelProto m;
  std::ifstream f(model_path, std::ios::binary);
  if (!m.ParseFromIstream(&f)) return false;
  const std::vector<std::string> known = graph::supported_onnx_ops();
  bool ok = true;
  for (const auto& n : m.graph().node()) {
    ops->insert(n.op_type());
    if (n.op_type() != "Constant" && !std::binary_search(known.begin(), known.end(), n.op_type())) ok = false;
  }
  return ok;
}

std::string compare(const HostTensor& want, const rt::NDArray& got, const std::string& name) {
  if (want.shape != got.shape()) {
    std::string w, g;
    for (int64_t d : want.shape) w += std::to_string(d) + " ";
    for (int64_t d : got.shape()) g += std::to_string(d) + " ";
    return name + ": shape [ " + g + "], expected [ " + w + "]";
  }
  if (want.num_elements() != got.num_elements()) return name + ": " + std::to_string(got.num_elements()) + " elements, expected " + std::to_string(want.num_elements());
  if (to_runtime_dtype(want.dtype) != got.dtype()) return name + ": element type differs from " + want.dtype.str();
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double w = want.dtype.is_float() ? want.get_float(i) : static_cast<double>(want.get_int(i));
    const double g = got.get(i);
    const bool ok = want.dtype.is_float() ? (std::isnan(w) ? std::isnan(g) : std::abs(g - w) <= 1e-5 + 1e-3 * std::abs(w)) : g == w;
    if (!ok) {
      std::ostringstream s;
      s << name << "[" << i << "] = " << g << ", expected " << w;
      return s.str();
    }
  }
  return "";
}

// The inputs of one data set, in the model's input order.
std::vector<HostTensor> read_inputs(const fs::path& set, size_t count) {
  std::vector<HostTensor> ins;
  for (size_t k = 0; k < count; ++k) ins.push_back(graph::read_onnx_tensor((set / ("input_" + std::to_string(k) + ".pb")).string()));
  return ins;
}

// The model's inputs (initializers excluded), in order.
std::vector<std::string> input_names(const fs::path& model) {
  onnx::ModelProto m;
  std::ifstream f(model, std::ios::binary);
  m.ParseFromIstream(&f);
  std::set<std::string> init;
  for (const auto& t : m.graph().initializer()) init.insert(t.name());
  std::vector<std::string> names;
  for (const auto& i : m.graph().input())
    if (!init.count(i.name())) names.push_back(i.name());
  return names;
}

// Runs one data set. kiln takes shapes, axes and slice bounds at compile
// time; the inputs named in `bound` become constants of the graph (as they
// are in exported networks) before it is compiled.
std::string run_set(const fs::path& dir, const fs::path& set, const std::set<std::string>& bound) {
  const std::vector<std::string> names = input_names(dir / "model.onnx");
  const std::vector<HostTensor> data = read_inputs(set, names.size());
  std::map<std::string, std::vector<int64_t>> shapes;
  for (size_t k = 0; k < names.size(); ++k) shapes[names[k]] = data[k].shape;
  graph::Graph g = graph::import_onnx((dir / "model.onnx").string(), shapes);
  std::vector<rt::NDArray> ins;
  std::vector<int> kept;
  for (size_t k = 0; k < names.size(); ++k) {
    const int id = g.inputs[k];
    if (bound.count(names[k])) {
      g.values[static_cast<size_t>(id)].constant = data[k];
      continue;
    }
    kept.push_back(id);
    rt::NDArray a = rt::NDArray::empty(data[k].shape, to_runtime_dtype(data[k].dtype));
    std::memcpy(a.data(), data[k].bytes.data(), data[k].bytes.size());
    ins.push_back(a);
  }
  g.inputs = kept;
  graph::Executor ex(std::move(g), {});
  std::vector<rt::NDArray> outs = ex.run(ins);
  for (size_t k = 0; k < outs.size(); ++k) {
    const fs::path file = set / ("output_" + std::to_string(k) + ".pb");
    if (!fs::exists(file)) continue;
    const std::string diff = compare(graph::read_onnx_tensor(file.string()), outs[k], "output " + std::to_string(k));
    if (!diff.empty()) return diff;
  }
  return "";
}

// The tensor a "takes its ROLE from tensor 'NAME', which kiln cannot
// compute before the network runs" message names, or "".
std::string needed_constant(const std::string& message) {
  if (message.find("before the network runs") == std::string::npos) return "";
  const size_t at = message.find("from tensor '");
  if (at == std::string::npos) return "";
  const size_t begin = at + 13, end = message.find('\'', begin);
  return message.substr(begin, end - begin);
}

// Runs one case; returns its outcome and a message.
std::pair<Outcome, std::string> run_case(const fs::path& dir) {
  int sets = 0;
  std::set<std::string> bound;
  try {
    for (int s = 0; fs::exists(dir / ("test_data_set_" + std::to_string(s))); ++s, ++sets) {
      const fs::path set = dir / ("test_data_set_" + std::to_string(s));
      std::string diff;
      for (;;) {
        try {
          diff = run_set(dir, set, bound);
          break;
        } catch (const UserError& e) {
          const std::string name = needed_constant(e.what());
          if (name.empty() || bound.count(name)) throw;
          bound.insert(name);
        }
      }
      if (!diff.empty()) return {Outcome::kFailed, diff};
    }
    std::string note;
    for (const std::string& b : bound) note += (note.empty() ? " (bound as constants: " : ", ") + b;
    return {Outcome::kPassed, std::to_string(sets) + " data sets" + (note.empty() ? "" : note + ")")};
  } catch (const UserError& e) {
    return {Outcome::kRejected, first_line(e.what())};
  } catch (const std::exception& e) {
    return {Outcome::kFailed, std::string("error: ") + first_line(e.what())};
  }
}

// run_case in a child process: a crash or a hang fails the case.
std::pair<Outcome, std::string> run_isolated(const fs::path& dir) {
  int fds[2];
  if (pipe(fds) != 0) return {Outcome::kFailed, "pipe failed"};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(120);
    auto [outcome, message] = run_case(dir);
    const std::string line = std::to_string(static_cast<int>(outcome)) + " " + message;
    (void)!write(fds[1], line.data(), line.size());
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || text.empty())
    return {Outcome::kFailed, WIFSIGNALED(status) ? "crashed (signal " + std::to_string(WTERMSIG(status)) + ")" : "no result"};
  return {static_cast<Outcome>(text[0] - '0'), text.size() > 2 ? text.substr(2) : ""};
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir = "/usr/share/libonnx-testdata/data/node", filter;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--verbose") verbose = true;
    else if (arg == "--filter" && i + 1 < argc) filter = argv[++i];
    else data_dir = arg;
  }
  if (!fs::is_directory(data_dir)) {
    std::cout << "kiln-test-skipped: no ONNX conformance cases at " << data_dir << " (Debian's libonnx-testdata)\n";
    return 77;
  }
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(data_dir))
    if (fs::exists(e.path() / "model.onnx") && e.path().filename().string().find(filter) != std::string::npos)
      cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  std::map<Outcome, int> counts;
  std::map<std::string, std::map<Outcome, int>> per_op;
  for (const fs::path& dir : cases) {
    std::set<std::string> ops;
    std::pair<Outcome, std::string> r = {Outcome::kUnsupported, ""};
    if (all_supported((dir / "model.onnx").string(), &ops)) r = run_isolated(dir);
    ++counts[r.first];
    for (const std::string& op : ops)
      if (op != "Constant") ++per_op[op][r.first];
    const char* tag[] = {"passed", "FAILED", "rejected", "unsupported"};
    if (r.first == Outcome::kFailed || (verbose && r.first != Outcome::kUnsupported))
      std::cout << tag[static_cast<int>(r.first)] << " " << dir.filename().string() << ": " << r.second << "\n";
  }
  if (verbose)
    for (const auto& [op, c] : per_op) {
      // An operator may have no case of an outcome (every case rejected).
      auto n = [&c = c](Outcome o) { return c.count(o) ? c.at(o) : 0; };
      if (n(Outcome::kPassed) || n(Outcome::kFailed) || n(Outcome::kRejected))
        std::cout << "  " << op << ": " << n(Outcome::kPassed) << " passed, " << n(Outcome::kFailed) << " failed, "
                  << n(Outcome::kRejected) << " rejected\n";
    }
  std::cout << "ONNX node conformance (" << data_dir << "): " << cases.size() << " cases; " << counts[Outcome::kPassed]
            << " passed, " << counts[Outcome::kFailed] << " failed, " << counts[Outcome::kRejected]
            << " rejected (supported operators, unsupported attributes or types), " << counts[Outcome::kUnsupported]
            << " unsupported (operators kiln does not import)\n";
  return counts[Outcome::kFailed] > 0 ? 1 : 0;
}
