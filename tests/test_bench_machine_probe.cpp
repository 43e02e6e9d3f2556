// The machine probe (bench/machine_probe.h): its kernels compute what they
// should (so the figures count real work), the peak kernel is packed FMAs,
// and a probe gives positive figures. The figures themselves are printed,
// never compared with a threshold.
#include <catch2/catch.hpp>
#include <iostream>

#include "bench/machine_probe.h"
#include "codegen/target.h"

using namespace kiln;

// First: the probe forks, which this process may do only before the kernels
// below start the runtime's threads.
TEST_CASE("machine probe: a probe of this machine gives positive figures", "[probe]") {
  MachineFigures m = probe_machine(Target::host());
  std::cout << "machine probe: " << m.cpu << ", " << m.threads << " threads, " << m.peak_gflops << " GFLOP/s fp32, "
            << m.bandwidth_gbs << " GB/s, in " << m.seconds << " s\n";
  CHECK(!m.cpu.empty());
  CHECK(m.threads >= 1);
  CHECK(m.peak_gflops > 0);
  CHECK(m.bandwidth_gbs > 0);
}

TEST_CASE("machine probe: the peak and stream kernels compute the right values", "[probe]") {
  CHECK(check_probe_kernels(Target::host()) == "");
}

TEST_CASE("machine probe: the peak kernel's loop is packed FMAs", "[probe]") {
  Target host = Target::host();
  std::string as = peak_kernel_assembly(host);
  const std::string reg = host.vector_bits() >= 512 ? "zmm" : host.vector_bits() >= 256 ? "ymm" : "xmm";
  INFO(as.substr(0, 4000));
  CHECK(as.find("vfmadd") != std::string::npos);
  CHECK(as.find("vfmadd231ps\t%" + reg) != std::string::npos);
}

TEST_CASE("machine probe: another target is a user error", "[probe]") {
  Target arm = Target::parse("llvm -mtriple=aarch64-linux-gnu -mcpu=generic");
  CHECK_THROWS_WITH(probe_machine(arm), Catch::Contains("measures this machine only"));
}
