// Generates a kernel library's header and C source (see library_c_source.h).
#include "library/library_c_source.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "library/library_runtime_c.h"
#include "library/source_text.h"
#include "base/error.h"

namespace kiln {
namespace {

struct TypeInfo {
  const char* name;  // kiln dtype name
  const char* in;    // C input type
  const char* acc;   // C accumulator and output type
  bool integer;
};

const TypeInfo kTypes[] = {
    {"f32", "float", "float", false},   {"f64", "double", "double", false},  {"i8", "int8_t", "int32_t", true},
    {"u8", "uint8_t", "int32_t", true}, {"i32", "int32_t", "int32_t", true},
};

const TypeInfo& type_info(const std::string& dtype) {
  for (const TypeInfo& t : kTypes)
    if (dtype == t.name) return t;
  internal_assert(false) << "kiln lib: unsupported dtype " << dtype;
  return kTypes[0];
}

const char* const kConvParams[] = {"N", "C", "H", "W", "K", "R", "S", "stride", "pad", "dilation"};

bool has_bias(const std::string& family) { return family.find("_bias") != std::string::npos; }
bool has_relu(const std::string& family) { return family.find("_relu") != std::string::npos; }

// The buffer parameters of a family's functions, in kernel argument order.
std::vector<std::string> buffer_params(const std::string& family, const TypeInfo& t) {
  const std::string in = std::string("const ") + t.in + "* ";
  if (family == "conv2d") return {in + "data", in + "weight", std::string(t.acc) + "* out"};
  std::vector<std::string> p = {in + "A", in + "B"};
  if (has_bias(family)) p.push_back(std::string("const ") + t.acc + "* bias");
  p.push_back(std::string(t.acc) + "* C");
  return p;
}

std::string buffer_name(const std::string& param) { return param.substr(param.rfind(' ') + 1); }

std::string dispatcher_name(const LibrarySource& lib, const std::string& family, const std::string& dtype) {
  return lib.name + "_" + family + "_" + dtype;
}

std::string dispatcher_params(const std::string& family, const TypeInfo& t) {
  std::vector<std::string> p;
  if (family == "conv2d") {
    for (const char* n : kConvParams) p.push_back(std::string("int64_t ") + n);
  } else {
    p = {"int64_t M", "int64_t N", "int64_t K"};
  }
  for (const std::string& b : buffer_params(family, t)) p.push_back(b);
  return join(p, ", ");
}

// (family, dtype) pairs in first-seen order.
std::vector<std::pair<std::string, std::string>> families(const LibrarySource& lib) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& k : lib.kernels) {
    std::pair<std::string, std::string> f{k.family, k.dtype};
    if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  }
  return out;
}

std::string shape_text(const LibraryKernelSource& k) {
  std::vector<std::string> parts;
  if (k.op == "conv2d") {
    for (const char* n : kConvParams) parts.push_back(std::string(n) + "=" + std::to_string(k.shape.at(n)));
  } else {
    for (const char* n : {"M", "N", "K"}) parts.push_back(std::string(n) + "=" + std::to_string(k.shape.at(n)));
  }
  return join(parts, ",");
}

std::string family_summary(const std::string& family) {
  if (family == "conv2d")
    return "out[N,K,OH,OW] = conv2d(data[N,C,H,W], weight[K,C,R,S]), zero padding `pad` on each side,\n"
           " *     OH = (H + 2*pad - dilation*(R-1) - 1) / stride + 1, OW likewise with W and S";
  std::string s = "C[M,N] = A[M,K] . B[K,N]";
  if (has_bias(family)) s += " + bias[N] (added to every row)";
  if (has_relu(family)) s = "C[M,N] = max(" + s.substr(9) + ", 0)";
  return s;
}

// Per-dtype arithmetic: integer types accumulate in int32 and wrap.
std::string arithmetic(const TypeInfo& t) {
  std::ostringstream os;
  const std::string d = t.name;
  if (t.integer) {
    os << "static inline int32_t mac_" << d << "(int32_t acc, " << t.in << " a, " << t.in
       << " b) { return (int32_t)((uint32_t)acc + (uint32_t)(int32_t)a * (uint32_t)(int32_t)b); }\n";
    os << "static inline int32_t add_" << d
       << "(int32_t x, int32_t y) { return (int32_t)((uint32_t)x + (uint32_t)y); }\n";
  } else {
    os << "static inline " << t.acc << " mac_" << d << "(" << t.acc << " acc, " << t.in << " a, " << t.in
       << " b) { return acc + a * b; }\n";
    os << "static inline " << t.acc << " add_" << d << "(" << t.acc << " x, " << t.acc << " y) { return x + y; }\n";
  }
  return os.str();
}

// Generic kernels: plain loops, parallel over output rows (matmul) or
// output planes (conv2d) on the pool when the work is large enough.
const char* const kGenericMatmul = R"C(
struct matmul_@D@_args {
  int64_t M, N, K;
  const @T@* A;
  const @T@* B;
  const @A@* bias;
  int relu;
  @A@* C;
};

static int32_t matmul_@D@_task(int64_t task, int64_t num_tasks, void* closure) {
  const struct matmul_@D@_args* p = (const struct matmul_@D@_args*)closure;
  const int64_t chunk = (p->M + num_tasks - 1) / num_tasks;
  const int64_t begin = task * chunk, end = begin + chunk < p->M ? begin + chunk : p->M;
  for (int64_t i = begin; i < end; ++i) {
    @A@* restrict c = p->C + i * p->N;
    for (int64_t j = 0; j < p->N; ++j) c[j] = 0;
    for (int64_t k = 0; k < p->K; ++k) {
      const @T@ a = p->A[i * p->K + k];
      const @T@* restrict b = p->B + k * p->N;
      for (int64_t j = 0; j < p->N; ++j) c[j] = mac_@D@(c[j], a, b[j]);
    }
    if (p->bias)
      for (int64_t j = 0; j < p->N; ++j) c[j] = add_@D@(c[j], p->bias[j]);
    if (p->relu)
      for (int64_t j = 0; j < p->N; ++j) c[j] = c[j] < 0 ? 0 : c[j];
  }
  return 0;
}

static int generic__matmul_@D@(int64_t M, int64_t N, int64_t K, const @T@* A, const @T@* B, const @A@* bias,
                              int relu, @A@* C) {
  struct matmul_@D@_args p = {M, N, K, A, B, bias, relu, C};
  const size_t out_bytes = (size_t)(M * N) * sizeof(@A@);
  @A@* temp = NULL;
  if (overlaps(C, out_bytes, A, (size_t)(M * K) * sizeof(@T@)) || overlaps(C, out_bytes, B, (size_t)(K * N) * sizeof(@T@)) ||
      overlaps(C, out_bytes, bias, (size_t)N * sizeof(@A@))) {
    temp = (@A@*)malloc(out_bytes);
    if (!temp) return @N@_ERROR_MEMORY;
    p.C = temp;
  }
  int32_t rc = (double)M * (double)N * (double)K >= PARALLEL_WORK ? pool_parallel_for(matmul_@D@_task, &p, 0)
                                                                   : matmul_@D@_task(0, 1, &p);
  if (temp) {
    if (rc == 0) memcpy(C, temp, out_bytes);
    free(temp);
  }
  return rc == 0 ? @N@_OK : @N@_ERROR_KERNEL;
}
)C";

const char* const kGenericConv2d = R"C(
struct conv2d_@D@_args {
  int64_t N, C, H, W, K, R, S, stride, pad, dilation, OH, OW;
  const @T@* data;
  const @T@* weight;
  @A@* out;
};

static int32_t conv2d_@D@_task(int64_t task, int64_t num_tasks, void* closure) {
  const struct conv2d_@D@_args* p = (const struct conv2d_@D@_args*)closure;
  const int64_t planes = p->N * p->K;
  const int64_t chunk = (planes + num_tasks - 1) / num_tasks;
  const int64_t begin = task * chunk, end = begin + chunk < planes ? begin + chunk : planes;
  for (int64_t q = begin; q < end; ++q) {
    const int64_t n = q / p->K, k = q % p->K;
    @A@* restrict o = p->out + q * p->OH * p->OW;
    for (int64_t i = 0; i < p->OH * p->OW; ++i) o[i] = 0;
    for (int64_t c = 0; c < p->C; ++c) {
      for (int64_t r = 0; r < p->R; ++r) {
        for (int64_t s = 0; s < p->S; ++s) {
          const @T@ w = p->weight[((k * p->C + c) * p->R + r) * p->S + s];
          /* input column of output column ow: ow * stride + off; keep it in [0, W) */
          const int64_t off = s * p->dilation - p->pad;
          int64_t ow_begin = off >= 0 ? 0 : (-off + p->stride - 1) / p->stride;
          int64_t ow_end = p->W - 1 - off < 0 ? 0 : (p->W - 1 - off) / p->stride + 1;
          if (ow_end > p->OW) ow_end = p->OW;
          for (int64_t oh = 0; oh < p->OH; ++oh) {
            const int64_t ih = oh * p->stride - p->pad + r * p->dilation;
            if (ih < 0 || ih >= p->H) continue;
            const @T@* restrict in = p->data + ((n * p->C + c) * p->H + ih) * p->W;
            @A@* restrict row = o + oh * p->OW;
            for (int64_t ow = ow_begin; ow < ow_end; ++ow) row[ow] = mac_@D@(row[ow], in[ow * p->stride + off], w);
          }
        }
      }
    }
  }
  return 0;
}

static int generic__conv2d_@D@(const int64_t* dims, int64_t OH, int64_t OW, const @T@* data, const @T@* weight,
                              @A@* out, size_t data_bytes, size_t weight_bytes, size_t out_bytes) {
  struct conv2d_@D@_args p = {dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], dims[7], dims[8],
                              dims[9], OH,      OW,      data,    weight,  out};
  @A@* temp = NULL;
  if (overlaps(out, out_bytes, data, data_bytes) || overlaps(out, out_bytes, weight, weight_bytes)) {
    temp = (@A@*)malloc(out_bytes);
    if (!temp) return @N@_ERROR_MEMORY;
    p.out = temp;
  }
  const double work = (double)p.N * (double)p.K * (double)OH * (double)OW * (double)p.C * (double)p.R * (double)p.S;
  int32_t rc = work >= PARALLEL_WORK ? pool_parallel_for(conv2d_@D@_task, &p, 0) : conv2d_@D@_task(0, 1, &p);
  if (temp) {
    if (rc == 0) memcpy(out, temp, out_bytes);
    free(temp);
  }
  return rc == 0 ? @N@_OK : @N@_ERROR_KERNEL;
}
)C";

std::string instantiate(const char* text, const LibrarySource& lib, const TypeInfo& t) {
  std::string s = replace_all(text, "@D@", t.name);
  s = replace_all(s, "@T@", t.in);
  s = replace_all(s, "@A@", t.acc);
  return replace_all(s, "@N@", lib.name);
}

std::vector<const LibraryKernelSource*> kernels_of(const LibrarySource& lib, const std::string& family,
                                                   const std::string& dtype) {
  std::vector<const LibraryKernelSource*> out;
  for (const auto& k : lib.kernels)
    if (k.family == family && k.dtype == dtype) out.push_back(&k);
  return out;
}

std::string matmul_dispatcher(const LibrarySource& lib, const std::string& family, const TypeInfo& t) {
  std::ostringstream os;
  const std::string& N = lib.name;
  os << "API int " << dispatcher_name(lib, family, t.name) << "(" << dispatcher_params(family, t) << ") {\n";
  os << "  int64_t na, nb, nc;\n";
  os << "  if (!count_of(&na, sizeof(" << t.in << "), 2, (const int64_t[]){M, K}) || !count_of(&nb, sizeof(" << t.in
     << "), 2, (const int64_t[]){K, N}) ||\n      !count_of(&nc, sizeof(" << t.acc
     << "), 2, (const int64_t[]){M, N}))\n    return " << N << "_ERROR_ARGUMENT;\n";
  os << "  if (nc == 0) return " << N << "_OK;\n";
  os << "  if (!C || (K > 0 && (!A || !B))" << (has_bias(family) ? " || !bias" : "") << ") return " << N
     << "_ERROR_ARGUMENT;\n";
  for (const LibraryKernelSource* k : kernels_of(lib, family, t.name)) {
    os << "  if (M == " << k->shape.at("M") << " && N == " << k->shape.at("N") << " && K == " << k->shape.at("K")
       << ") return " << k->entry << "(A, B, " << (has_bias(family) ? "bias, " : "") << "C);\n";
  }
  os << "  return generic__matmul_" << t.name << "(M, N, K, A, B, " << (has_bias(family) ? "bias" : "NULL") << ", "
     << (has_relu(family) ? 1 : 0) << ", C);\n}\n";
  return os.str();
}

std::string conv2d_dispatcher(const LibrarySource& lib, const TypeInfo& t) {
  std::ostringstream os;
  const std::string& N = lib.name;
  os << "API int " << dispatcher_name(lib, "conv2d", t.name) << "(" << dispatcher_params("conv2d", t) << ") {\n";
  os << "  const int64_t dims[10] = {N, C, H, W, K, R, S, stride, pad, dilation};\n";
  os << "  for (int i = 0; i < 10; ++i)\n"
        "    if (dims[i] < (i == 8 ? 0 : 1) || dims[i] > INT32_MAX) return "
     << N << "_ERROR_ARGUMENT;\n";
  os << "  /* the (dilated) kernel must fit the padded input */\n";
  os << "  if (H + 2 * pad < dilation * (R - 1) + 1 || W + 2 * pad < dilation * (S - 1) + 1) return " << N
     << "_ERROR_ARGUMENT;\n";
  os << "  const int64_t OH = (H + 2 * pad - dilation * (R - 1) - 1) / stride + 1;\n";
  os << "  const int64_t OW = (W + 2 * pad - dilation * (S - 1) - 1) / stride + 1;\n";
  os << "  int64_t nd, nw, no;\n";
  os << "  if (!count_of(&nd, sizeof(" << t.in << "), 4, (const int64_t[]){N, C, H, W}) || !count_of(&nw, sizeof("
     << t.in << "), 4, (const int64_t[]){K, C, R, S}) ||\n      !count_of(&no, sizeof(" << t.acc
     << "), 4, (const int64_t[]){N, K, OH, OW}))\n    return " << N << "_ERROR_ARGUMENT;\n";
  os << "  if (!data || !weight || !out) return " << N << "_ERROR_ARGUMENT;\n";
  for (const LibraryKernelSource* k : kernels_of(lib, "conv2d", t.name)) {
    os << "  if (";
    bool first = true;
    for (const char* p : kConvParams) {
      os << (first ? "" : " && ") << p << " == " << k->shape.at(p);
      first = false;
    }
    os << ")\n    return " << k->entry << "(data, weight, out);\n";
  }
  os << "  return generic__conv2d_" << t.name << "(dims, OH, OW, data, weight, out, (size_t)nd * sizeof(" << t.in
     << "), (size_t)nw * sizeof(" << t.in << "), (size_t)no * sizeof(" << t.acc << "));\n}\n";
  return os.str();
}

std::string entry_point(const LibraryKernelSource& k, const std::string& error_prefix) {
  const TypeInfo& t = type_info(k.dtype);
  std::vector<std::string> params = buffer_params(k.family, t);
  internal_assert(params.size() == k.arg_elements.size())
      << "kernel " << k.symbol << " has " << k.arg_elements.size() << " buffers, its family " << params.size();
  std::ostringstream os;
  os << "API int " << k.entry << "(" << join(params, ", ") << ") {\n";
  std::vector<std::string> names, bufs;
  for (size_t i = 0; i < params.size(); ++i) {
    names.push_back(buffer_name(params[i]));
    const bool output = i + 1 == params.size();
    const char* type = output || (k.family != "conv2d" && i == 2) ? t.acc : t.in;  // bias has the output type
    bufs.push_back("{" + names.back() + ", (size_t)" + std::to_string(k.arg_elements[i]) + " * sizeof(" + type + ")}");
  }
  std::vector<std::string> null_checks;
  for (const std::string& n : names) null_checks.push_back("!" + n);
  os << "  if (" << join(null_checks, " || ") << ") return " << error_prefix << "_ERROR_ARGUMENT;\n";
  os << "  const struct buffer bufs[" << params.size() << "] = {" << join(bufs, ", ") << "};\n";
  os << "  return call_tuned(" << k.symbol << ", bufs, " << params.size() << ", " << params.size() - 1 << ");\n}\n";
  return os.str();
}

}  // namespace

bool library_supports(const std::string& op, const std::string& dtype) {
  if (op != "matmul" && op != "conv2d") return false;
  for (const TypeInfo& t : kTypes)
    if (dtype == t.name) return true;
  return false;
}

std::string library_family(const std::string& op, const std::map<std::string, int64_t>& params) {
  if (op != "matmul") return op;
  std::string f = "matmul";
  auto flag = [&](const char* name) {
    auto it = params.find(name);
    return it != params.end() && it->second != 0;
  };
  if (flag("bias")) f += "_bias";
  if (flag("relu")) f += "_relu";
  return f;
}

std::string library_header(const LibrarySource& lib) {
  std::ostringstream os;
  const std::string& N = lib.name;
  const std::string guard = upper(N) + "_H_";
  os << "/* " << N << ".h: tuned tensor kernels, generated by kiln " << lib.kiln_version << " (`kiln lib`)\n"
     << " * for target: " << lib.target << "\n"
     << " *\n"
     << " * Link lib" << N << ".a (and -lpthread -lm) or lib" << N
     << ".so; neither LLVM nor kiln is needed at run time.\n"
     << " * CMake: find_package(" << N << " CONFIG) and link " << N << "::" << N << "; pkg-config: " << N << ".pc.\n"
     << " *\n"
     << " * Every function returns " << N << "_OK (0) on success, else one of the " << N << "_ERROR_* codes.\n"
     << " * Buffers are dense row-major (C order) arrays. Each op family has a dispatcher that runs the\n"
     << " * tuned kernel when the shape equals a tuned shape exactly, and otherwise a generic correct kernel\n"
     << " * (plain C loops). Each tuned kernel also has its own entry point (fixed shape, same buffers).\n"
     << " * Epilogues are part of the semantics, so matmul with bias and/or relu has its own dispatchers;\n"
     << " * a plain matmul never runs a kernel tuned with an epilogue, and vice versa.\n"
     << " * Integer inputs (i8, u8, i32) accumulate in int32 and produce int32 (wrapping on overflow).\n"
     << " *\n"
     << " * Pointers need no particular alignment: tuned kernels run on 64-byte-aligned buffers, and\n"
     << " * unaligned arguments are copied through aligned temporaries (align buffers to 64 bytes to\n"
     << " * avoid the copies). The output may overlap an input: it is then computed in a temporary.\n"
     << " *\n"
     << " * Parallel loops run on the library's own thread pool, started by the first call that needs it:\n"
     << " * KILN_NUM_THREADS threads when that is set to a positive integer, else one per online CPU.\n"
     << " * The functions may be called from several threads; their parallel loops run one at a time.\n"
     << " *\n"
     << " * " << N << "_HAVE_<family>_<type> is defined (to 1) for each dispatcher the library has.\n"
     << " *\n"
     << " * Dispatchers:\n";
  for (const auto& [family, dtype] : families(lib)) {
    os << " *   " << dispatcher_name(lib, family, dtype) << ": " << family_summary(family) << "\n";
  }
  os << " * Tuned kernels (measured GFLOP/s on the target they were tuned on):\n";
  for (const auto& k : lib.kernels) {
    os << " *   " << k.entry << ": " << k.workload << ", " << static_cast<int64_t>(k.gflops * 10 + 0.5) / 10.0
       << " GFLOP/s on " << k.tuned_on << "\n";
  }
  os << " */\n"
     << "#ifndef " << guard << "\n#define " << guard << "\n\n#include <stdint.h>\n\n"
     << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
     << "#define " << N << "_OK 0\n"
     << "#define " << N << "_ERROR_ARGUMENT 1 /* a negative or inconsistent size, a NULL buffer */\n"
     << "#define " << N << "_ERROR_MEMORY 2   /* a temporary buffer could not be allocated */\n"
     << "#define " << N << "_ERROR_KERNEL 3   /* a kernel failed (out of memory inside it) */\n\n";
  for (const auto& [family, dtype] : families(lib)) {
    const TypeInfo& t = type_info(dtype);
    os << "/* " << family_summary(family) << "; tuned for:";
    std::vector<std::string> shapes;
    for (const LibraryKernelSource* k : kernels_of(lib, family, dtype)) shapes.push_back(shape_text(*k));
    os << " " << join(shapes, "; ") << " */\n";
    os << "#define " << N << "_HAVE_" << family << "_" << dtype << " 1\n";
    os << "int " << dispatcher_name(lib, family, dtype) << "(" << dispatcher_params(family, t) << ");\n";
    for (const LibraryKernelSource* k : kernels_of(lib, family, dtype)) {
      os << "int " << k->entry << "(" << join(buffer_params(family, t), ", ") << ");\n";
    }
    os << "\n";
  }
  os << "/* Threads of the library's pool (starts the pool). */\n"
     << "int " << N << "_num_threads(void);\n\n"
     << "#ifdef __cplusplus\n}  /* extern \"C\" */\n#endif\n\n#endif /* " << guard << " */\n";
  return os.str();
}

std::string library_c_source(const LibrarySource& lib) {
  std::ostringstream os;
  os << "/* " << lib.name << ".c: runtime, dispatchers and entry points of the kernel library " << lib.name
     << ",\n * generated by kiln " << lib.kiln_version << " (`kiln lib`). See " << lib.name << ".h. */\n";
  std::string runtime = replace_all(kLibraryRuntimeC, "@N@", lib.name);
  os << replace_all(runtime, "@SLOT@", lib.slot_symbol);

  os << "\n/* ---- tuned kernels (in the kernels' object; int32_t kernel(void** args), 0 on success) ---- */\n";
  for (const auto& k : lib.kernels) os << "HIDDEN int32_t " << k.symbol << "(void** args);\n";

  std::set<std::string> arithmetic_done, matmul_done, conv_done;
  for (const auto& [family, dtype] : families(lib)) {
    const TypeInfo& t = type_info(dtype);
    if (arithmetic_done.insert(dtype).second) os << "\n" << arithmetic(t);
    if (family == "conv2d") {
      if (conv_done.insert(dtype).second) os << instantiate(kGenericConv2d, lib, t);
    } else if (matmul_done.insert(dtype).second) {
      os << instantiate(kGenericMatmul, lib, t);
    }
  }

  os << "\n/* ---- entry points of the tuned kernels ---- */\n\n";
  for (const auto& k : lib.kernels) os << entry_point(k, lib.name) << "\n";

  os << "/* ---- dispatchers ---- */\n\n";
  for (const auto& [family, dtype] : families(lib)) {
    const TypeInfo& t = type_info(dtype);
    os << (family == "conv2d" ? conv2d_dispatcher(lib, t) : matmul_dispatcher(lib, family, t)) << "\n";
  }
  return os.str();
}

}  // namespace kiln
