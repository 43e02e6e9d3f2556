#include "bench/machine_probe.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <functional>
#include <iomanip>
#include <ostream>

#include "base/error.h"
#include "codegen/build.h"
#include "compute/expr_ops.h"
#include "compute/tensor.h"
#include "runtime/ndarray.h"
#include "runtime/process_util.h"
#include "runtime/thread_pool.h"
#include "runtime/time_evaluator.h"
#include "schedule/lower.h"
#include "schedule/schedule.h"

namespace kiln {

namespace {

// Peak kernel: a register-blocked matmul micro-kernel over operands that
// stay in L1, repeated kPeakRepeat times. a * b = 2^-10 keeps every partial
// sum exact in fp32 (multiples of 2^-10 below 2^10), so the check can ask for
// equality.
constexpr int64_t kPeakK = 64, kPeakRepeat = 16384;
constexpr float kA = 1.0f / 32, kB = 1.0f / 32;
// Bandwidth kernel: 128 MiB per array.
constexpr int64_t kStreamElements = int64_t{1} << 25;

// Per thread: `rows` broadcast values of a times `cols` vectors of b per k.
struct PeakShape {
  int64_t threads, rows, cols, lanes;
  double flops() const { return 2.0 * static_cast<double>(threads * rows * cols * lanes * kPeakK * kPeakRepeat); }
};

// The register tiles tried (the fastest one counts): rows x cols
// accumulators, 24 of AVX-512's 32 registers (12 of AVX2's 16), enough to
// cover the FMA latency on two ports, with cols + rows loads per k for
// rows * cols FMAs; machines differ in which balance of loads suits them.
std::vector<PeakShape> peak_shapes(const Target& target, int threads) {
  const int64_t lanes = target.vector_bits() / 32;
  if (target.vector_bits() >= 512) return {{threads, 12, 2, lanes}, {threads, 8, 3, lanes}, {threads, 6, 4, lanes}};
  return {{threads, 6, 2, lanes}, {threads, 4, 3, lanes}};
}

std::string peak_kernel_name(const PeakShape& p) {
  return "kiln_probe_peak_" + std::to_string(p.rows) + "x" + std::to_string(p.cols);
}

LoweredFunc peak_kernel(const PeakShape& p) {
  Expr T(p.threads), K(kPeakK), J(p.rows), C(p.cols), L(p.lanes);
  Tensor a = placeholder({T, K, J}, DType::f32(), "a");
  Tensor b = placeholder({T, K, C, L}, DType::f32(), "b");
  IterVar r = reduce_axis(Expr(kPeakRepeat), "r");
  IterVar k = reduce_axis(K, "k");
  Tensor out = compute(
      {T, J, C, L},
      [&](Var t, Var j, Var c, Var l) {
        return sum(a(t, k->var, j) * b(t, k->var, c, l), {r, k});
      },
      "out");
  Schedule s({out});
  Tensor acc = s.cache_write(out, MemScope::kLocal);
  Stage so = s[out];
  so.parallel(so.axis()[0]);
  so.vectorize(so.axis()[3]);
  Stage sa = s[acc];
  sa.compute_at(so, so.axis()[0]);
  std::vector<IterVar> ax = sa.axis();  // [t, j, c, l]
  std::vector<IterVar> rx = sa.reduce_axis();
  sa.reorder({rx[0], rx[1], ax[1], ax[2], ax[3]});
  sa.unroll(ax[1]);
  sa.unroll(ax[2]);
  sa.vectorize(ax[3]);
  return lower(s, {a, b, out}, peak_kernel_name(p));
}

LoweredFunc stream_kernel(int64_t lanes) {
  Tensor a = placeholder({Expr(kStreamElements)}, DType::f32(), "a");
  Tensor b = placeholder({Expr(kStreamElements)}, DType::f32(), "b");
  Tensor c = compute(
      {Expr(kStreamElements)}, [&](Var i) { return a(i) + b(i); }, "c");
  Schedule s({c});
  Stage sc = s[c];
  IterVar chunk, rest, vo, vi;
  sc.split(sc.axis()[0], 1 << 16, &chunk, &rest);
  sc.split(rest, lanes * 4, &vo, &vi);
  sc.parallel(chunk);
  IterVar vu, vl;
  sc.split(vi, lanes, &vu, &vl);
  sc.unroll(vu);
  sc.vectorize(vl);
  return lower(s, {a, b, c}, "kiln_probe_stream");
}

void check_host(const Target& target) {
  user_check(target.is_host()) << "the machine probe measures this machine only; target '" << target.str()
                               << "' is not the host";
}

struct Kernels {
  std::unique_ptr<JitModule> jit;
  std::vector<PeakShape> peaks;
  int64_t lanes;
};

Kernels compile_kernels(const Target& target) {
  check_host(target);
  Kernels k;
  k.peaks = peak_shapes(target, rt::default_num_threads());
  k.lanes = target.vector_bits() / 32;
  std::vector<LoweredFunc> funcs;
  for (const PeakShape& p : k.peaks) funcs.push_back(peak_kernel(p));
  funcs.push_back(stream_kernel(k.lanes));
  k.jit = JitModule::compile(funcs, target);
  return k;
}

struct PeakArrays {
  rt::NDArray a, b, out;
  std::vector<void*> args;
};

PeakArrays peak_arrays(const PeakShape& p) {
  PeakArrays pa;
  pa.a = rt::NDArray::empty({p.threads, kPeakK, p.rows}, rt::DataType::f32());
  pa.b = rt::NDArray::empty({p.threads, kPeakK, p.cols, p.lanes}, rt::DataType::f32());
  pa.out = rt::NDArray::empty({p.threads, p.rows, p.cols, p.lanes}, rt::DataType::f32());
  std::fill_n(static_cast<float*>(pa.a.data()), pa.a.num_elements(), kA);
  std::fill_n(static_cast<float*>(pa.b.data()), pa.b.num_elements(), kB);
  pa.args = {pa.a.data(), pa.b.data(), pa.out.data()};
  return pa;
}

struct StreamArrays {
  rt::NDArray a, b, c;
  std::vector<void*> args;
};

StreamArrays stream_arrays() {
  StreamArrays s;
  for (rt::NDArray* arr : {&s.a, &s.b, &s.c}) *arr = rt::NDArray::empty({kStreamElements}, rt::DataType::f32());
  auto* a = static_cast<float*>(s.a.data());
  auto* b = static_cast<float*>(s.b.data());
  for (int64_t i = 0; i < kStreamElements; ++i) {
    a[i] = static_cast<float>(i % 1000);
    b[i] = 0.5f;
  }
  std::fill_n(static_cast<float*>(s.c.data()), kStreamElements, -1.0f);
  s.args = {s.a.data(), s.b.data(), s.c.data()};
  return s;
}

void call(kiln_packed_fn fn, std::vector<void*>& args, const char* what) {
  user_check(fn(args.data()) == 0) << "the machine probe's " << what << " kernel failed";
}

MachineFigures measure(const Target& target) {
  auto t0 = std::chrono::steady_clock::now();
  Kernels k = compile_kernels(target);
  MachineFigures m;
  m.cpu = cpu_model_name();
  m.threads = static_cast<int>(k.peaks.front().threads);
  // The fastest single call: a parallel call lasts as long as its slowest
  // thread, so averaging calls would count every interruption of either.
  rt::TimeOptions opts;
  opts.repeat = 100;
  opts.number = 1;

  for (const PeakShape& p : k.peaks) {
    PeakArrays pa = peak_arrays(p);
    kiln_packed_fn peak = k.jit->get_function(peak_kernel_name(p));
    rt::TimeResult tp = rt::time_function([&] { call(peak, pa.args, "peak"); }, opts);
    m.peak_gflops = std::max(m.peak_gflops, p.flops() / (tp.min_ms * 1e6));
  }

  StreamArrays sa = stream_arrays();
  kiln_packed_fn stream = k.jit->get_function("kiln_probe_stream");
  opts.repeat = 5;  // one call moves 384 MiB
  rt::TimeResult ts = rt::time_function([&] { call(stream, sa.args, "stream"); }, opts);
  m.bandwidth_gbs = 12.0 * static_cast<double>(kStreamElements) / (ts.min_ms * 1e6);
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

}  // namespace

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "unknown CPU";
}

MachineFigures probe_machine(const Target& target) {
  check_host(target);
  proc::check_single_threaded("the machine probe");
  std::string error;
  proc::Child child = proc::fork_child(
      [&](int fd) {
        proc::Writer w;
        try {
          MachineFigures m = measure(target);
          w.str("").str(m.cpu).i64(m.threads).f64(m.peak_gflops).f64(m.bandwidth_gbs).f64(m.seconds);
        } catch (const std::exception& e) {
          w.str(e.what());
        }
        proc::send_frame(fd, w.bytes());
      },
      &error);
  user_check(child.pid > 0) << "the machine probe could not start its process: " << error;
  std::string payload;
  auto deadline = proc::Clock::now() + std::chrono::seconds(120);
  proc::RecvStatus got = proc::recv_frame(child.fd, deadline, &payload);
  ::close(child.fd);
  int status = got == proc::RecvStatus::kOk ? proc::reap(child.pid, deadline) : proc::kill_and_reap(child.pid);
  user_check(got == proc::RecvStatus::kOk)
      << "the machine probe's process " << (got == proc::RecvStatus::kTimeout ? "timed out" : "died") << " ("
      << proc::describe_status(status) << ")";
  proc::Reader r(payload);
  std::string failure = r.str();
  user_check(failure.empty()) << "the machine probe failed: " << failure;
  MachineFigures m;
  m.cpu = r.str();
  m.threads = static_cast<int>(r.i64());
  m.peak_gflops = r.f64();
  m.bandwidth_gbs = r.f64();
  m.seconds = r.f64();
  return m;
}

Database::Machine machine_record(const Target& target, const MachineFigures& m) {
  Database::Machine r;
  r.target = target.str();
  r.cpu = m.cpu;
  r.threads = m.threads;
  r.peak_gflops = m.peak_gflops;
  r.bandwidth_gbs = m.bandwidth_gbs;
  r.measured_at = static_cast<int64_t>(std::time(nullptr));
  r.kiln_version = KILN_VERSION;
  return r;
}

std::optional<Database::Machine> ensure_machine_figures(Database& db, const Target& target, std::ostream& log) {
  if (target.is_cuda()) return db.machine(target.str());  // `kiln probe` measures CPUs, not GPUs
  // Figures of another thread count (KILN_NUM_THREADS) are measured again.
  if (auto m = db.machine(target.str()); m && (!target.is_host() || m->threads == rt::default_num_threads())) return m;
  if (!target.is_host()) {
    log << "machine figures of '" << target.str() << "' are unknown: run `kiln probe --db " << db.path()
        << "` on that machine\n";
    return std::nullopt;
  }
  if (proc::count_threads() != 1) {
    log << "machine probe skipped: this process already runs threads\n";
    return std::nullopt;
  }
  MachineFigures m;
  try {
    m = probe_machine(target);
  } catch (const UserError& e) {
    log << "machine probe failed: " << e.what() << "\n";
    return std::nullopt;
  }
  log << "machine probe: " << m.cpu << ", " << m.threads << " threads: fp32 peak " << std::fixed << std::setprecision(1)
      << m.peak_gflops << " GFLOP/s, bandwidth " << m.bandwidth_gbs << " GB/s (stored in " << db.path() << ")\n";
  Database::Machine r = machine_record(target, m);
  db.put_machine(r);
  return r;
}

std::string check_probe_kernels(const Target& target) {
  Kernels k = compile_kernels(target);
  const float want = static_cast<float>(kPeakK * kPeakRepeat) * kA * kB;
  for (const PeakShape& p : k.peaks) {
    PeakArrays pa = peak_arrays(p);
    call(k.jit->get_function(peak_kernel_name(p)), pa.args, "peak");
    const auto* out = static_cast<const float*>(pa.out.data());
    for (int64_t i = 0; i < pa.out.num_elements(); ++i)
      if (out[i] != want)
        return peak_kernel_name(p) + ": out[" + std::to_string(i) + "] = " + std::to_string(out[i]) + ", expected " +
               std::to_string(want);
  }
  StreamArrays sa = stream_arrays();
  call(k.jit->get_function("kiln_probe_stream"), sa.args, "stream");
  const auto* a = static_cast<const float*>(sa.a.data());
  const auto* c = static_cast<const float*>(sa.c.data());
  for (int64_t i = 0; i < kStreamElements; ++i)
    if (c[i] != a[i] + 0.5f)
      return "stream kernel: c[" + std::to_string(i) + "] = " + std::to_string(c[i]) + ", expected " +
             std::to_string(a[i] + 0.5f);
  return "";
}

std::string peak_kernel_assembly(const Target& target) {
  return emit_assembly({peak_kernel(peak_shapes(target, 2).front())}, target);
}

}  // namespace kiln
