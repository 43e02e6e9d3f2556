// The op families of cuda libraries (see cuda_library_families.h).
#include "library/cuda_library_families.h"

#include <cctype>

#include "base/error.h"
#include "library/cuda_fallback_kernels.h"
#include "library/source_text.h"

namespace kiln {

namespace {

// Longest first: a family name starts with its op.
const char* const kOps[] = {"depthwise_conv2d", "conv2d_nhwc", "batch_matmul", "max_pool2d", "avg_pool2d", "layer_norm",
                            "softmax",          "conv2d",      "matmul",       "dense"};

bool flag(const OpInstance& op, const char* name) {
  auto it = op.ints.find(name);
  return it != op.ints.end() && it->second != 0;
}

bool is_conv(const std::string& op) { return op == "conv2d" || op == "conv2d_nhwc" || op == "depthwise_conv2d"; }
bool is_pool(const std::string& op) { return op == "max_pool2d" || op == "avg_pool2d"; }

// The epilogue flags each op offers, in the order they appear in a family name.
std::vector<std::string> epilogue_flags(const std::string& op) {
  if (op == "matmul" || op == "dense") return {"bias", "relu", "gelu"};
  if (is_conv(op)) return {"bias", "relu", "relu6", "hswish", "hsigmoid"};
  return {};
}

int act_code(const std::string& flag_name) {
  if (flag_name == "relu") return static_cast<int>(FallbackAct::kRelu);
  if (flag_name == "gelu") return static_cast<int>(FallbackAct::kGelu);
  if (flag_name == "relu6") return static_cast<int>(FallbackAct::kRelu6);
  if (flag_name == "hswish") return static_cast<int>(FallbackAct::kHardSwish);
  internal_assert(flag_name == "hsigmoid") << "activation " << flag_name;
  return static_cast<int>(FallbackAct::kHardSigmoid);
}

const char* const kActText[] = {"", "relu", "gelu", "relu6", "hswish", "hsigmoid"};

// "act(value + bias[per])" as the family's epilogue makes it.
std::string with_epilogue(const CudaFamily& f, const std::string& value, const std::string& per) {
  const std::string v = f.bias ? value + " + bias[" + per + "]" : value;
  return f.act ? std::string(kActText[f.act]) + "(" + v + ")" : v;
}

void set_conv(CudaFamily& f) {
  const std::string window = "stride, pad, dilation";
  if (f.op == "conv2d") {
    f.sizes = f.size_params = {"N", "C", "H", "W", "K", "R", "S", "stride", "pad", "dilation"};
    f.summary = "out[N,K,OH,OW] = " + with_epilogue(f, "conv2d(data[N,C,H,W], weight[K,C,R,S])", "K");
  } else if (f.op == "conv2d_nhwc") {
    f.sizes = f.size_params = {"N", "H", "W", "C", "K", "R", "S", "stride", "pad", "dilation"};
    f.summary = "out[N,OH,OW,K] = " + with_epilogue(f, "conv2d(data[N,H,W,C], weight[R,S,C,K])", "K");
  } else {
    f.sizes = f.size_params = {"N", "C", "H", "W", "R", "S", "stride", "pad", "dilation"};
    f.summary = "out[N,C,OH,OW] = " + with_epilogue(f, "depthwise_conv2d(data[N,C,H,W], weight[C,1,R,S])", "C");
  }
  f.summary += ", zero padding `pad` on each side";
  f.buffers = {"data", "weight"};
  if (f.bias) f.buffers.push_back("bias");
  f.buffers.push_back("out");
  f.window = true;
}

}  // namespace

std::string cuda_library_supported_text() {
  return "kiln lib --target cuda supports matmul and dense (bias, relu, gelu epilogues; operands not transposed), "
         "batch_matmul (not transposed), conv2d, conv2d_nhwc (groups=1) and depthwise_conv2d (bias, relu, relu6, "
         "hswish, hsigmoid epilogues), max_pool2d, avg_pool2d, softmax and layer_norm, in f32, f16 and bf16";
}

std::string cuda_family_name(const OpInstance& op, std::string* why) {
  auto no = [&](const std::string& reason) {
    *why = reason + " (" + cuda_library_supported_text() + ")";
    return std::string();
  };
  bool known = false;
  for (const char* o : kOps) known = known || op.op == o;
  if (!known) return no(op.op + " has no cuda template, so it cannot be in a cuda library");
  const std::string dtype = op.dtype.str();
  if (dtype != "f32" && dtype != "f16" && dtype != "bf16")
    return no("cuda libraries take f32, f16 and bf16, this is " + dtype);
  if (flag(op, "trans_a") || flag(op, "trans_b"))
    return no("transposed operands are not in cuda libraries (their dispatchers take row-major operands, as the CPU "
              "library's do)");
  auto groups = op.ints.find("groups");
  if (groups != op.ints.end() && groups->second != 1)
    return no("grouped convolutions (groups=" + std::to_string(groups->second) +
              ") are not in cuda libraries: the conv2d dispatchers take no groups");
  if (auto sw = op.ints.find("stride_w"); sw != op.ints.end() && sw->second > 0)
    return no(
        "convolutions with a stride in W of their own (stride_w) are not in cuda libraries: their dispatchers "
        "take one stride");
  std::string f = op.op;
  for (const std::string& e : epilogue_flags(op.op))
    if (flag(op, e.c_str())) f += "_" + e;
  return f;
}

CudaFamily cuda_family(const std::string& name) {
  CudaFamily f;
  f.name = name;
  for (const char* o : kOps) {
    const std::string op = o;
    if (name.compare(0, op.size(), op) == 0 && (name.size() == op.size() || name[op.size()] == '_')) {
      f.op = op;
      break;
    }
  }
  internal_assert(!f.op.empty()) << "cuda library family " << name;
  // The epilogue parts after the op: "_bias", "_relu6", ...
  std::string rest = name.substr(f.op.size());
  for (const std::string& e : epilogue_flags(f.op)) {
    const std::string part = "_" + e;
    const bool whole = rest.size() == part.size() || (rest.size() > part.size() && rest[part.size()] == '_');
    if (rest.compare(0, part.size(), part) != 0 || !whole) continue;
    rest = rest.substr(part.size());
    if (e == "bias")
      f.bias = true;
    else
      f.act = act_code(e);
  }
  internal_assert(rest.empty()) << "cuda library family " << name << ": unknown part " << rest;

  if (f.op == "matmul" || f.op == "dense") {
    const bool dense = f.op == "dense";
    f.sizes = f.size_params = dense ? std::vector<std::string>{"N", "IN", "OUT"} : std::vector<std::string>{"M", "N", "K"};
    f.buffers = dense ? std::vector<std::string>{"data", "weight"} : std::vector<std::string>{"A", "B"};
    if (f.bias) f.buffers.push_back("bias");
    f.buffers.push_back(dense ? "out" : "C");
    f.summary = dense ? "out[N,OUT] = " + with_epilogue(f, "data[N,IN] . weight[OUT,IN]^T", "OUT")
                      : "C[M,N] = " + with_epilogue(f, "A[M,K] . B[K,N]", "N");
  } else if (f.op == "batch_matmul") {
    f.sizes = {"batch", "M", "N", "K"};
    f.size_params = {"B", "M", "N", "K"};
    f.buffers = {"A", "B", "C"};
    f.summary = "C[batch,M,N] = A[batch,M,K] . B[batch,K,N]";
  } else if (is_conv(f.op)) {
    set_conv(f);
  } else if (is_pool(f.op)) {
    f.sizes = f.size_params = {"N", "C", "H", "W", "R", "S", "stride", "pad"};
    f.buffers = {"data", "out"};
    f.window = true;
    f.summary = f.op == "max_pool2d"
                    ? "out[N,C,OH,OW] = maximum over R x S windows of data[N,C,H,W] (padding never wins)"
                    : "out[N,C,OH,OW] = mean over R x S windows of data[N,C,H,W] (padding not counted)";
  } else if (f.op == "layer_norm") {
    f.sizes = f.size_params = {"M", "N"};
    f.buffers = {"data", "gamma", "beta", "out"};
    f.summary = "out[M,N] = (data - row mean) / sqrt(row variance + 1e-5) * gamma[N] + beta[N]";
  } else {
    f.sizes = f.size_params = {"M", "N"};
    f.buffers = {"data", "out"};
    f.summary = "out[M,N] = softmax of each row of data[M,N] (max-subtracted)";
  }
  if (f.window)
    f.summary += ", OH = (H + 2*pad - " + std::string(is_pool(f.op) ? "R" : "dilation*(R-1) - 1") +
                 ") / stride + 1, OW likewise";
  return f;
}

std::string cuda_family_checks(const CudaFamily& f) {
  if (!f.window) {
    const std::string n = std::to_string(f.sizes.size());
    std::vector<std::string> quoted;
    for (const std::string& s : f.sizes) quoted.push_back("\"" + s + "\"");
    return "  const int64_t sizes[" + n + "] = {" + join(f.sizes, ", ") + "};\n" +
           "  static const char* const size_names[" + n + "] = {" + join(quoted, ", ") + "};\n" +
           "  if (!check_sizes(__func__, sizes, size_names, " + n + ")) return ERROR_ARGUMENT;\n";
  }
  const bool pool = is_pool(f.op);
  const std::string K = f.op == "depthwise_conv2d" || pool ? "C" : "K";
  return "  int64_t OH, OW;\n  if (!check_window(__func__, N, C, H, W, " + K + ", R, S, stride, pad, " +
         (pool ? "1, 1" : "dilation, 0") + ", &OH, &OW)) return ERROR_ARGUMENT;\n";
}

std::string cuda_fallback_call(const CudaFamily& f, const std::string& dtype) {
  auto function = [&](const std::string& kind) { return "FALLBACK_" + upper(kind + "_" + dtype); };
  const std::string act = std::to_string(f.act);
  const std::string bias = f.bias ? "bias" : "NULL";
  const std::string head = "(__func__, ";
  if (f.op == "matmul")
    return "fallback_gemm" + head + function("gemm") + ", stream, 1, M, N, K, A, B, " + bias + ", C, 0, " + act + ")";
  if (f.op == "dense")
    return "fallback_gemm" + head + function("gemm") + ", stream, 1, N, OUT, IN, data, weight, " + bias + ", out, 1, " +
           act + ")";
  if (f.op == "batch_matmul")
    return "fallback_gemm" + head + function("gemm") + ", stream, batch, M, N, K, A, B, NULL, C, 0, 0)";
  if (f.op == "conv2d" || f.op == "conv2d_nhwc")
    return "fallback_conv2d" + head + function("conv2d") +
           ", stream, N, C, H, W, K, R, S, stride, pad, dilation, 1, OH, OW, data, weight, " + bias + ", out, " +
           (f.op == "conv2d_nhwc" ? "1" : "0") + ", " + act + ")";
  if (f.op == "depthwise_conv2d")  // groups = K = C: one filter of one channel per output channel
    return "fallback_conv2d" + head + function("conv2d") +
           ", stream, N, C, H, W, C, R, S, stride, pad, dilation, C, OH, OW, data, weight, " + bias + ", out, 0, " +
           act + ")";
  if (is_pool(f.op))
    return "fallback_pool2d" + head + function("pool2d") + ", stream, N, C, H, W, R, S, stride, pad, OH, OW, data, out, " +
           (f.op == "avg_pool2d" ? "1" : "0") + ")";
  if (f.op == "softmax") return "fallback_softmax" + head + function("softmax") + ", stream, M, N, data, out)";
  internal_assert(f.op == "layer_norm") << "no fallback for family " << f.name;
  return "fallback_layer_norm" + head + function("layer_norm") + ", stream, M, N, data, gamma, beta, out)";
}

}  // namespace kiln
