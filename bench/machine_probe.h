// The machine probe: this machine's fp32 peak and memory bandwidth, measured
// with kernels that kiln itself compiles (the report's roofline and its
// percentages of peak). Both kernels are tensor expressions scheduled, lowered
// and JIT-compiled like any tuned kernel, so the peak is the one kiln's own
// code generation can reach:
// - peak: the fastest of a few register-blocked matmul micro-kernels (tile
//   shapes) per thread,
//   out[t, j, c, l] = sum over (r, k) of a[t, k, j] * b[t, k, c, l], with j
//   and c unrolled into independent accumulators (enough to cover the FMA
//   latency on two FMA ports), l a full native vector, operands that stay in
//   L1, and t one task per thread: per k, j broadcasts and c vector loads
//   feed j * c packed FMAs. FLOPs: 2 per lane per FMA.
// - bandwidth: c[i] = a[i] + b[i] over arrays of 128 MiB each (far beyond
//   any last-level cache), vectorized and parallel. Bytes: 12 per element
//   (two reads, one write, as STREAM counts them; the write-allocate read is
//   not counted).
// The probe runs in a forked child process (kiln's tuning processes must
// stay single-threaded to fork their measuring workers), takes about a
// second, and uses the runtime's thread count (KILN_NUM_THREADS).
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include "codegen/target.h"
#include "tuner/database.h"

namespace kiln {

struct MachineFigures {
  std::string cpu;  // /proc/cpuinfo's model name
  int threads = 0;  // threads the kernels ran on
  double peak_gflops = 0;
  double bandwidth_gbs = 0;
  double seconds = 0;  // how long the probe took
};

// Measures the host (UserError when `target` is not the host). Throws
// UserError when the probe's child process fails.
MachineFigures probe_machine(const Target& target);

// The figures of `target` stored in `db`; when missing (or, for this
// machine, measured with another thread count) probes and stores them. nullopt (with a line in
// `log`) when they are missing and cannot be measured: another machine, or a
// process that already runs threads. A cuda target gets what `db` holds and
// no line: the probe measures CPUs only, so there is nothing to suggest.
std::optional<Database::Machine> ensure_machine_figures(Database& db, const Target& target, std::ostream& log);

// The stored form of a probe.
Database::Machine machine_record(const Target& target, const MachineFigures& m);
// The CPU's model name from /proc/cpuinfo ("unknown CPU" without one).
std::string cpu_model_name();

// The kernels, for tests: lowered, JIT-compiled and run once in this
// process; returns "" when their outputs are right, else what was wrong.
std::string check_probe_kernels(const Target& target);

// The probe's first peak kernel as assembly (tests look for packed FMAs).
std::string peak_kernel_assembly(const Target& target);

}  // namespace kiln
