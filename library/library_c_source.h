// The C parts of a kernel library (`kiln lib`), generated as source text:
//   NAME.h    the public header (plain C, also valid C++);
//   NAME.c    the library's runtime and glue: a pthread pool that fills the
//             kernels' parallel-for slot, one dispatcher per op family
//             (tuned kernel for an exact shape, else a generic kernel in
//             plain C), one named entry point per tuned kernel, and the
//             aligned-temporary copies tuned kernels need.
// The tuned kernels themselves are one LLVM object (codegen/static_library.h)
// whose hidden symbols NAME.c calls.
//
// Op families and their dispatchers (T: input type, A: accumulator/output
// type, i32 for integer inputs):
//   NAME_matmul_T(M, N, K, A, B, C)                       C = A . B
//   NAME_matmul_bias_T(M, N, K, A, B, bias, C)            C = A . B + bias (per column)
//   NAME_matmul_relu_T(M, N, K, A, B, C)                  C = max(A . B, 0)
//   NAME_matmul_bias_relu_T(M, N, K, A, B, bias, C)       C = max(A . B + bias, 0)
//   NAME_conv2d_T(N, C, H, W, K, R, S, stride, pad, dilation, data, weight, out)
// A family is generated when the library has at least one tuned kernel of it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln {

// One tuned kernel of the library.
struct LibraryKernelSource {
  std::string op;                        // "matmul" | "conv2d"
  std::string family;                    // dispatcher stem: "matmul", "matmul_bias_relu", "conv2d", ...
  std::string dtype;                     // input type: "f32", "f64", "i8", "u8", "i32"
  std::map<std::string, int64_t> shape;  // the op's integer parameters (M, N, K / N, C, H, ...)
  std::string entry;                     // public entry point, e.g. NAME_matmul_f32_M32_N48_K40
  std::string symbol;                    // the hidden kernel in the LLVM object: int32_t symbol(void** args)
  std::vector<int64_t> arg_elements;     // elements of each kernel argument (inputs, then the output)
  std::string workload;                  // canonical workload string (for comments)
  double gflops = 0;                     // measured (for comments)
  std::string tuned_on;                  // target of the measurement (for comments)
};

struct LibrarySource {
  std::string name;    // C identifier: prefix of every symbol, header NAME.h
  std::string target;  // target string the kernels were compiled for
  std::string kiln_version;
  std::string slot_symbol;  // the kernels' parallel-for slot, defined by NAME.c
  std::vector<LibraryKernelSource> kernels;
};

// The dispatcher family of an op's parameters ("matmul_bias" ...), and
// whether kiln lib supports the op and input type at all.
std::string library_family(const std::string& op, const std::map<std::string, int64_t>& params);
bool library_supports(const std::string& op, const std::string& dtype);

std::string library_header(const LibrarySource& lib);
// NAME.c; includes "NAME.h" (compile with -I on the output directory).
std::string library_c_source(const LibrarySource& lib);

}  // namespace kiln
