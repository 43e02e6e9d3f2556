// The target a device server reports, worked out without the compiler: the
// tuner builds every candidate for it, so it must describe this machine.
//
// A device server links no LLVM, so it cannot ask LLVM for the host's CPU
// name the way `kiln tune` does locally (codegen/target.h). Given no target,
// it describes the host as `llvm -mtriple=<this machine's triple>
// -mcpu=generic -mattr=<the SIMD and bit-manipulation features that
// /proc/cpuinfo lists>`, which is what code generation needs; `kiln serve`,
// which has the compiler, passes the exact host target instead.
#pragma once

#include <string>

namespace kiln::rpc {

// This machine's triple as LLVM normalizes it ("x86_64-pc-linux-gnu").
std::string host_triple_name();

// The LLVM-free description of this machine above.
std::string describe_host_target();

// The target to report for a requested one: "" gives describe_host_target();
// an llvm target without -mtriple gets this machine's; "cuda" gives "cuda
// -arch=<the first GPU's>". user_error for a target that is neither llvm nor
// cuda, an llvm -mtriple of another architecture, a cuda -arch that is not
// the GPU's, or cuda without a GPU (a device server measures on this
// machine).
std::string device_target(const std::string& requested);

}  // namespace kiln::rpc
