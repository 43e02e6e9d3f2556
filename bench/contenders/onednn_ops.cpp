// oneDNN contenders for every op family of kiln's operator library: matmul
// primitives (matmul, batch_matmul, dense; epilogues as post-ops),
// convolutions (conv2d NCHW/NHWC/NCHW[x]c, grouped, depthwise; bias and
// relu fused),
// pooling, softmax and layer normalization. User arrays are described with
// strides (transposed operands, HWIO weights) so no copy is made; constant
// weights and convolution activations go to the layouts oneDNN picks
// itself (format `any`), reordered once at set-up, outside timing.
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "base/error.h"
#include "bench/contenders/blocked_layout.h"
#include "bench/contenders/contender.h"
#include "bench/contenders/onednn_kernels.h"

namespace kiln::baselines {

namespace {

using dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dnnl::memory::desc strided(const dims& d, const dims& strides, dt t = dt::f32) { return dnnl::memory::desc(d, t, strides); }
// Row-major (dense, last dimension contiguous).
dnnl::memory::desc plain(const dims& d, dt t = dt::f32) {
  dims s(d.size(), 1);
  for (size_t i = d.size() - 1; i-- > 0;) s[i] = s[i + 1] * d[i + 1];
  return strided(d, s, t);
}
dnnl::memory::desc any(const dims& d, dt t = dt::f32) { return dnnl::memory::desc(d, t, tag::any); }

// kiln's dtype names as oneDNN data types.
dt data_type(const std::string& name) {
  if (name == "f32") return dt::f32;
  if (name == "bf16") return dt::bf16;
  if (name == "f16") return dt::f16;
  if (name == "u8") return dt::u8;
  if (name == "i8") return dt::s8;
  if (name == "i32") return dt::s32;
  user_error() << "oneDNN has no data type for kiln's " << name;
}

dims shape_of(const rt::NDArray& a) { return dims(a.shape().begin(), a.shape().end()); }

// One primitive with its arguments; the output may live in a oneDNN layout
// and is reordered into the user's array by finish().
class Primitive : public Contender {
 public:
  Primitive() : eng_(dnnl::engine::kind::cpu, 0), strm_(eng_) {}

  // Binds a user array (described by user_md) to argument `arg` of the
  // primitive, reordering it once into `want` when the layouts differ.
  void input(int arg, const rt::NDArray& a, const dnnl::memory::desc& user_md, const dnnl::memory::desc& want) {
    dnnl::memory user(user_md, eng_, a.data());
    if (want == user_md) {
      args_[arg] = user;
      return;
    }
    dnnl::memory m(want, eng_);
    dnnl::reorder(user, m).execute(strm_, user, m);
    strm_.wait();
    args_[arg] = m;
  }
  void output(const rt::NDArray& a, const dnnl::memory::desc& user_md, const dnnl::memory::desc& want) {
    user_dst_ = dnnl::memory(user_md, eng_, a.data());
    dst_ = want == user_md ? user_dst_ : dnnl::memory(want, eng_);
    args_[DNNL_ARG_DST] = dst_;
  }
  void set(dnnl::primitive p, std::string impl) {
    prim_ = std::move(p);
    impl_ = std::move(impl);
  }
  dnnl::engine& engine() { return eng_; }

  void run() override {
    prim_.execute(strm_, args_);
    strm_.wait();
  }
  void finish() override {
    if (dst_ != user_dst_) dnnl::reorder(dst_, user_dst_).execute(strm_, dst_, user_dst_);
    strm_.wait();
  }
  std::string impl() const override { return impl_; }

 private:
  dnnl::engine eng_;
  dnnl::stream strm_;
  dnnl::primitive prim_;
  std::unordered_map<int, dnnl::memory> args_;
  dnnl::memory dst_, user_dst_;
  std::string impl_;
};

dnnl::primitive_attr eltwise_attr(bool relu, bool gelu) {
  dnnl::primitive_attr attr;
  if (relu || gelu) {
    dnnl::post_ops po;
    po.append_eltwise(1.0f, relu ? dnnl::algorithm::eltwise_relu : dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
    attr.set_post_ops(po);
  }
  return attr;
}

// A convolution's activation flags (kernels/activation.h) as post-ops:
// relu6 = clip(0, 6); hsigmoid = clip(x/6 + 1/2, 0, 1), the same function as
// relu6(x + 3) / 6; hswish is oneDNN's own.
// `prefix` names the flags of a second activation ("dw_" in dwsep_nchwc).
dnnl::primitive_attr activation_attr(const ContenderOp& op, const std::string& prefix = "") {
  dnnl::primitive_attr attr;
  dnnl::post_ops po;
  if (param_or(op, prefix + "relu", 0)) po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
  if (param_or(op, prefix + "relu6", 0)) po.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.f, 6.f);
  if (param_or(op, prefix + "hswish", 0)) po.append_eltwise(1.0f, dnnl::algorithm::eltwise_hardswish, 0.f, 0.f);
  if (param_or(op, prefix + "hsigmoid", 0)) {
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, 1.f / 6.f, 0.5f);
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.f, 1.f);
  }
  if (po.len() > 0) attr.set_post_ops(po);
  return attr;
}

// matmul, batch_matmul and dense: src [.., M, K] x weights [.., K, N] (+ bias [1, N]),
// in the op's dtype (f32, or bf16 summed in f32).
std::unique_ptr<Contender> gemm_like(const ContenderOp& op, const std::vector<rt::NDArray>& in, const rt::NDArray& out,
                                     const dnnl::memory::desc& src_md, const dnnl::memory::desc& wei_md,
                                     bool weights_constant, bool bias, bool relu, bool gelu) {
  auto p = std::make_unique<Primitive>();
  const dt t = data_type(op.dtype);
  dims dst_dims = shape_of(out);
  dnnl::memory::desc dst_md = plain(dst_dims, t);
  dnnl::memory::desc bias_md;
  if (bias) {
    dims bd(dst_dims.size(), 1);
    bd.back() = dst_dims.back();
    bias_md = plain(bd, t);
  }
  dnnl::memory::desc wei_want = weights_constant ? any(wei_md.dims(), t) : wei_md;
  dnnl::matmul::desc d =
      bias ? dnnl::matmul::desc(src_md, wei_want, bias_md, dst_md) : dnnl::matmul::desc(src_md, wei_want, dst_md);
  dnnl::matmul::primitive_desc pd(d, eltwise_attr(relu, gelu), p->engine());
  p->input(DNNL_ARG_SRC, in[0], src_md, pd.src_desc());
  p->input(DNNL_ARG_WEIGHTS, in[1], wei_md, pd.weights_desc());
  if (bias) p->input(DNNL_ARG_BIAS, in[2], bias_md, pd.bias_desc());
  p->output(out, dst_md, pd.dst_desc());
  p->set(dnnl::matmul(pd), pd.impl_info_str());
  (void)op;
  return p;
}

std::unique_ptr<Contender> matmul(const ContenderOp& op, const std::vector<rt::NDArray>& in, const rt::NDArray& out) {
  int64_t M = op.ints.at("M"), N = op.ints.at("N"), K = op.ints.at("K");
  bool ta = param_or(op, "trans_a", 0), tb = param_or(op, "trans_b", 0);
  const dt t = data_type(op.dtype);
  auto a = strided({M, K}, ta ? dims{1, M} : dims{K, 1}, t);
  auto b = strided({K, N}, tb ? dims{1, K} : dims{N, 1}, t);
  return gemm_like(op, in, out, a, b, true, param_or(op, "bias", 0), param_or(op, "relu", 0), param_or(op, "gelu", 0));
}

std::unique_ptr<Contender> batch_matmul(const ContenderOp& op, const std::vector<rt::NDArray>& in,
                                        const rt::NDArray& out) {
  int64_t B = op.ints.at("B"), M = op.ints.at("M"), N = op.ints.at("N"), K = op.ints.at("K");
  bool ta = param_or(op, "trans_a", 0), tb = param_or(op, "trans_b", 0);
  const dt t = data_type(op.dtype);
  auto a = strided({B, M, K}, ta ? dims{M * K, 1, M} : dims{M * K, K, 1}, t);
  auto b = strided({B, K, N}, tb ? dims{K * N, 1, K} : dims{K * N, N, 1}, t);
  return gemm_like(op, in, out, a, b, false, false, false, false);
}

std::unique_ptr<Contender> dense(const ContenderOp& op, const std::vector<rt::NDArray>& in, const rt::NDArray& out) {
  int64_t N = op.ints.at("N"), IN = op.ints.at("IN"), OUT = op.ints.at("OUT");
  const dt t = data_type(op.dtype);
  auto x = strided({N, IN}, {IN, 1}, t);
  auto w = strided({IN, OUT}, {1, IN}, t);  // W[OUT, IN] seen as its transpose
  return gemm_like(op, in, out, x, w, true, param_or(op, "bias", 0), param_or(op, "relu", 0), param_or(op, "gelu", 0));
}

// qmatmul and qdense (kernels/qgemm.h): u8 src x s8 weights summed in s32,
// an s32 bias, the per-column scales as oneDNN's output scales (constants
// of the primitive, as a network's are; mask: dimension 1), relu as a
// post-op, saturated into the out type; oneDNN computes scale * (f32(sum) +
// bias), kiln f32(sum + bias) * scale, the same unless |sum| passes 2^24.
std::unique_ptr<Contender> qgemm(const ContenderOp& op, const std::vector<rt::NDArray>& in, const rt::NDArray& out,
                                 bool dense) {
  const int64_t M = op.ints.at(dense ? "N" : "M"), N = op.ints.at(dense ? "OUT" : "N"),
                K = op.ints.at(dense ? "IN" : "K");
  const bool bias = param_or(op, "bias", 0) != 0, relu = param_or(op, "relu", 0) != 0;
  const dt out_t = data_type(op.dtype);
  auto src = strided({M, K}, {K, 1}, dt::u8);
  auto wei = dense ? strided({K, N}, {1, K}, dt::s8) : strided({K, N}, {N, 1}, dt::s8);
  auto dst = plain({M, N}, out_t);
  auto bias_md = plain({1, N}, dt::s32);
  dnnl::primitive_attr attr = eltwise_attr(relu, false);
  const bool scaled = out_t != dt::s32;
  if (scaled) {
    const rt::NDArray& s = in[bias ? 3 : 2];
    const float* f = static_cast<const float*>(s.data());
    attr.set_output_scales(1 << 1, std::vector<float>(f, f + N));
  }
  auto p = std::make_unique<Primitive>();
  dnnl::matmul::desc d = bias ? dnnl::matmul::desc(src, any({K, N}, dt::s8), bias_md, dst)
                              : dnnl::matmul::desc(src, any({K, N}, dt::s8), dst);
  dnnl::matmul::primitive_desc pd(d, attr, p->engine());
  p->input(DNNL_ARG_SRC, in[0], src, pd.src_desc());
  p->input(DNNL_ARG_WEIGHTS, in[1], wei, pd.weights_desc());
  if (bias) p->input(DNNL_ARG_BIAS, in[2], bias_md, pd.bias_desc());
  p->output(out, dst, pd.dst_desc());
  p->set(dnnl::matmul(pd), pd.impl_info_str());
  return p;
}

// conv2d (NCHW or NHWC), grouped and depthwise convolutions.
std::unique_ptr<Contender> conv(const ContenderOp& op, const std::vector<rt::NDArray>& in, const rt::NDArray& out,
                                bool nhwc, bool depthwise) {
  int64_t N = op.ints.at("N"), C = op.ints.at("C"), H = op.ints.at("H"), W = op.ints.at("W");
  int64_t R = op.ints.at("R"), S = op.ints.at("S");
  int64_t K = depthwise ? C : op.ints.at("K");
  int64_t G = depthwise ? C : param_or(op, "groups", 1);
  int64_t stride = param_or(op, "stride", 1), pad = param_or(op, "pad", 0), dil = param_or(op, "dilation", 1);
  bool bias = param_or(op, "bias", 0);
  const dims& od = shape_of(out);
  int64_t OH = nhwc ? od[1] : od[2], OW = nhwc ? od[2] : od[3];
  dims src_d{N, C, H, W}, dst_d{N, K, OH, OW};
  auto src_user = nhwc ? strided(src_d, {H * W * C, 1, W * C, C}) : plain(src_d);
  auto dst_user = nhwc ? strided(dst_d, {OH * OW * K, 1, OW * K, K}) : plain(dst_d);
  int64_t Cg = C / G, Kg = K / G;
  dims wd = G > 1 ? dims{G, Kg, Cg, R, S} : dims{K, C, R, S};
  dnnl::memory::desc wei_user;
  if (nhwc)  // HWIO [R, S, C/G, K]
    wei_user = G > 1 ? strided(wd, {Kg, 1, K, S * Cg * K, Cg * K}) : strided(wd, {1, K, S * C * K, C * K});
  else  // [K, C/G, R, S]
    wei_user = plain(wd);
  auto p = std::make_unique<Primitive>();
  dnnl::memory::desc bias_md = plain({K});
  const int64_t stride_w = param_or(op, "stride_w", 0) > 0 ? param_or(op, "stride_w", 0) : stride;
  dims st{stride, stride_w}, dl{dil - 1, dil - 1}, pd_{pad, pad};
  using cf = dnnl::convolution_forward;
  cf::desc d = bias ? cf::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any(src_d),
                               any(wd), bias_md, any(dst_d), st, dl, pd_, pd_)
                    : cf::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any(src_d),
                               any(wd), any(dst_d), st, dl, pd_, pd_);
  cf::primitive_desc pd(d, activation_attr(op), p->engine());
  p->input(DNNL_ARG_SRC, in[0], src_user, pd.src_desc());
  p->input(DNNL_ARG_WEIGHTS, in[1], wei_user, pd.weights_desc());
  if (bias) p->input(DNNL_ARG_BIAS, in[2], bias_md, pd.bias_desc());
  p->output(out, dst_user, pd.dst_desc());
  p->set(cf(pd), pd.impl_info_str());
  return p;
}

// conv2d_nchwc and depthwise_conv2d_nchwc: kiln's blocked arrays ([N, C/cb,
// H, W, cb] data, [K/kb, C/G/cb, R, S, cb, kb] or depthwise [C/cb, R, S, cb]
// weights, [N, K/kb, OH, OW, kb] output) are unblocked at set-up and handed
// to the conv2d contender, which reorders them into the layouts oneDNN
// picks (nChw16c, OIhw16i16o, Goihw16g, ... whatever cb and kb are); only
// the convolution is timed, and finish() blocks the output again.
class BlockedConv : public Contender {
 public:
  BlockedConv(const ContenderOp& op, const std::vector<rt::NDArray>& in, const rt::NDArray& out, bool depthwise)
      : shape_(op.blocked), out_(out) {
    plain_out_ = rt::NDArray::empty({shape_.N, shape_.K, shape_.OH, shape_.OW}, out.dtype());
    plain_in_ = {unblock_data(shape_, in[0]),
                 depthwise ? unblock_depthwise_weight(shape_, in[1]) : unblock_weight(shape_, in[1])};
    if (in.size() > 2) plain_in_.push_back(in[2]);
    conv_ = conv(op, plain_in_, plain_out_, false, depthwise);
  }
  void run() override { conv_->run(); }
  void finish() override {
    conv_->finish();
    block_output(shape_, plain_out_, out_);
  }
  std::string impl() const override { return conv_->impl(); }

 private:
  BlockedConvShape shape_;
  rt::NDArray out_, plain_out_;
  std::vector<rt::NDArray> plain_in_;  // referenced by the primitive's memories
  std::unique_ptr<Contender> conv_;
};

// qconv2d_nchwc and conv2d_nchwc_bf16: the data and the weights (in
// dot-product blocks: VNNI's 4 input channels, AVX512-BF16's 2) are
// unblocked at set-up into NCHW / KCRS and reordered into the layouts oneDNN
// picks for its int8 convolution (u8 x s8, s32 bias, per-channel output
// scales as constants, relu as a post-op, saturated into the out type) or
// its bf16 one (bf16 bias, the activation as a post-op, bf16 output);
// finish() blocks the output again.
class DotBlockedConv : public Contender {
 public:
  DotBlockedConv(const ContenderOp& op, const std::vector<rt::NDArray>& in, const rt::NDArray& out, bool int8)
      : shape_(op.blocked), out_(out) {
    const BlockedConvShape& s = shape_;
    const bool bias = param_or(op, "bias", 0) != 0;
    const dt src_t = int8 ? dt::u8 : dt::bf16, wei_t = int8 ? dt::s8 : dt::bf16;
    const dt bias_t = int8 ? dt::s32 : dt::bf16, out_t = int8 ? data_type(op.dtype) : dt::bf16;
    plain_out_ = rt::NDArray::empty({s.N, s.K, s.OH, s.OW}, out.dtype());
    plain_in_ = {unblock_data(s, in[0]), unblock_vnni_weight(s, in[1], int8 ? 4 : 2)};
    const int64_t G = s.C / s.Cg, stride = param_or(op, "stride", 1), pad = param_or(op, "pad", 0),
                  dil = param_or(op, "dilation", 1);
    const dims src_d{s.N, s.C, s.H, s.W}, dst_d{s.N, s.K, s.OH, s.OW};
    const dims wd = G > 1 ? dims{G, s.K / G, s.Cg, s.R, s.S} : dims{s.K, s.C, s.R, s.S};
    dnnl::primitive_attr attr = int8 ? eltwise_attr(param_or(op, "relu", 0) != 0, false) : activation_attr(op);
    if (int8 && out_t != dt::s32) {
      const float* f = static_cast<const float*>(in[bias ? 3 : 2].data());
      attr.set_output_scales(1 << 1, std::vector<float>(f, f + s.K));
    }
    using cf = dnnl::convolution_forward;
    const dims st{stride, stride}, dl{dil - 1, dil - 1}, pd_{pad, pad};
    const auto bias_md = plain({s.K}, bias_t);
    cf::desc d = bias ? cf::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                 any(src_d, src_t), any(wd, wei_t), bias_md, any(dst_d, out_t), st, dl, pd_, pd_)
                      : cf::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                 any(src_d, src_t), any(wd, wei_t), any(dst_d, out_t), st, dl, pd_, pd_);
    cf::primitive_desc pd(d, attr, prim_.engine());
    prim_.input(DNNL_ARG_SRC, plain_in_[0], plain(src_d, src_t), pd.src_desc());
    prim_.input(DNNL_ARG_WEIGHTS, plain_in_[1], plain(wd, wei_t), pd.weights_desc());
    if (bias) prim_.input(DNNL_ARG_BIAS, in[2], bias_md, pd.bias_desc());
    prim_.output(plain_out_, plain(dst_d, out_t), pd.dst_desc());
    prim_.set(cf(pd), pd.impl_info_str());
  }
  void run() override { prim_.run(); }
  void finish() override {
    prim_.finish();
    block_output(shape_, plain_out_, out_);
  }
  std::string impl() const override { return prim_.impl(); }

 private:
  BlockedConvShape shape_;
  rt::NDArray out_, plain_out_;
  std::vector<rt::NDArray> plain_in_;  // referenced by the primitive's memories
  Primitive prim_;
};

// dwsep_nchwc: oneDNN's two primitives, the depthwise convolution and then
// the 1x1 one, chained through the layout oneDNN picks for the depthwise
// output (a reorder between them runs inside the timed call only if the
// second primitive wants another layout). Data and weights are unblocked
// and reordered at set-up; finish() blocks the output.
class DwsepChain : public Contender {
 public:
  DwsepChain(const ContenderOp& op, const std::vector<rt::NDArray>& in, const rt::NDArray& out)
      : eng_(dnnl::engine::kind::cpu, 0), strm_(eng_), out_(out) {
    auto at = [&](const char* n) { return op.ints.at(n); };
    const int64_t N = at("N"), C = at("C"), H = at("H"), W = at("W"), K = at("K"), R = at("R"), S = at("S");
    const int64_t stride = at("stride"), pad = at("pad"), dil = at("dilation"), cb = at("cb"), kb = at("kb");
    const int64_t OH = out.shape()[2], OW = out.shape()[3];
    const bool bias = at("bias") != 0;
    dw_shape_ = {N, C, H, W, C, 1, R, S, OH, OW, cb, cb};
    pw_shape_ = {N, C, OH, OW, K, C, 1, 1, OH, OW, cb, kb};
    plain_in_ = {unblock_data(dw_shape_, in[0]), unblock_depthwise_weight(dw_shape_, in[1]),
                 unblock_weight(pw_shape_, in[2])};
    plain_out_ = rt::NDArray::empty({N, K, OH, OW}, out.dtype());
    using cf = dnnl::convolution_forward;
    const dims src_d{N, C, H, W}, dw_w{C, 1, 1, R, S}, mid_d{N, C, OH, OW}, pw_w{K, C, 1, 1}, dst_d{N, K, OH, OW};
    cf::desc d1 = bias ? cf::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any(src_d),
                                  any(dw_w), plain({C}), any(mid_d), {stride, stride}, {dil - 1, dil - 1}, {pad, pad},
                                  {pad, pad})
                       : cf::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any(src_d),
                                  any(dw_w), any(mid_d), {stride, stride}, {dil - 1, dil - 1}, {pad, pad}, {pad, pad});
    cf::desc d2 = bias ? cf::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any(mid_d),
                                  any(pw_w), plain({K}), any(dst_d), {1, 1}, {0, 0}, {0, 0}, {0, 0})
                       : cf::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any(mid_d),
                                  any(pw_w), any(dst_d), {1, 1}, {0, 0}, {0, 0}, {0, 0});
    cf::primitive_desc pd1(d1, activation_attr(op, "dw_"), eng_), pd2(d2, activation_attr(op), eng_);
    args1_[DNNL_ARG_SRC] = reordered(plain_in_[0], plain(src_d), pd1.src_desc());
    args1_[DNNL_ARG_WEIGHTS] = reordered(plain_in_[1], plain(dw_w), pd1.weights_desc());
    args2_[DNNL_ARG_WEIGHTS] = reordered(plain_in_[2], plain(pw_w), pd2.weights_desc());
    if (bias) {
      args1_[DNNL_ARG_BIAS] = dnnl::memory(plain({C}), eng_, in[3].data());
      args2_[DNNL_ARG_BIAS] = dnnl::memory(plain({K}), eng_, in[4].data());
    }
    mid_ = dnnl::memory(pd1.dst_desc(), eng_);
    args1_[DNNL_ARG_DST] = mid_;
    if (pd2.src_desc() != pd1.dst_desc()) {
      mid2_ = dnnl::memory(pd2.src_desc(), eng_);
      between_ = dnnl::reorder(mid_, mid2_);
    }
    args2_[DNNL_ARG_SRC] = mid2_ ? mid2_ : mid_;
    dst_ = dnnl::memory(pd2.dst_desc(), eng_);
    user_dst_ = dnnl::memory(plain(dst_d), eng_, plain_out_.data());
    args2_[DNNL_ARG_DST] = dst_;
    strm_.wait();
    dw_ = cf(pd1);
    pw_ = cf(pd2);
    impl_ = std::string(pd1.impl_info_str()) + " then " + (mid2_ ? "reorder, " : "") + pd2.impl_info_str();
  }
  void run() override {
    dw_.execute(strm_, args1_);
    if (mid2_) between_.execute(strm_, mid_, mid2_);
    pw_.execute(strm_, args2_);
    strm_.wait();
  }
  void finish() override {
    dnnl::reorder(dst_, user_dst_).execute(strm_, dst_, user_dst_);
    strm_.wait();
    block_output(pw_shape_, plain_out_, out_);
  }
  std::string impl() const override { return impl_; }

 private:
  dnnl::memory reordered(const rt::NDArray& a, const dnnl::memory::desc& user_md, const dnnl::memory::desc& want) {
    dnnl::memory user(user_md, eng_, a.data());
    if (want == user_md) return user;
    dnnl::memory m(want, eng_);
    dnnl::reorder(user, m).execute(strm_, user, m);
    return m;
  }

  dnnl::engine eng_;
  dnnl::stream strm_;
  rt::NDArray out_, plain_out_;
  std::vector<rt::NDArray> plain_in_;
  BlockedConvShape dw_shape_{}, pw_shape_{};
  std::unordered_map<int, dnnl::memory> args1_, args2_;
  dnnl::memory mid_, mid2_, dst_, user_dst_;
  dnnl::reorder between_;
  dnnl::convolution_forward dw_, pw_;
  std::string impl_;
};

std::unique_ptr<Contender> pool(const ContenderOp& op, const std::vector<rt::NDArray>& in, const rt::NDArray& out,
                                bool max) {
  int64_t stride = param_or(op, "stride", 1), pad = param_or(op, "pad", 0);
  auto src = plain(shape_of(in[0])), dst = plain(shape_of(out));
  auto p = std::make_unique<Primitive>();
  using pf = dnnl::pooling_forward;
  pf::desc d(dnnl::prop_kind::forward_inference,
             max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding, src, dst,
             {stride, stride}, {op.ints.at("R"), op.ints.at("S")}, {pad, pad}, {pad, pad});
  pf::primitive_desc pd(d, p->engine());
  p->input(DNNL_ARG_SRC, in[0], src, pd.src_desc());
  p->output(out, dst, pd.dst_desc());
  p->set(pf(pd), pd.impl_info_str());
  return p;
}

// The blocked pools: the data is unblocked at set-up, the plain pool runs
// (oneDNN reorders to the layout it picks), finish() blocks the output.
class BlockedPool : public Contender {
 public:
  BlockedPool(const ContenderOp& op, const std::vector<rt::NDArray>& in, const rt::NDArray& out)
      : shape_(op.blocked), out_(out) {
    plain_out_ = rt::NDArray::empty({shape_.N, shape_.K, shape_.OH, shape_.OW}, out.dtype());
    plain_in_ = {unblock_data(shape_, in[0])};
    pool_ = pool(op, plain_in_, plain_out_, op.op == "max_pool2d_nchwc");
  }
  void run() override { pool_->run(); }
  void finish() override {
    pool_->finish();
    block_output(shape_, plain_out_, out_);
  }
  std::string impl() const override { return pool_->impl(); }

 private:
  BlockedConvShape shape_;
  rt::NDArray out_, plain_out_;
  std::vector<rt::NDArray> plain_in_;
  std::unique_ptr<Contender> pool_;
};

std::unique_ptr<Contender> softmax(const std::vector<rt::NDArray>& in, const rt::NDArray& out) {
  auto md = plain(shape_of(in[0]));
  auto p = std::make_unique<Primitive>();
  dnnl::softmax_forward::desc d(dnnl::prop_kind::forward_inference, md, 1);
  dnnl::softmax_forward::primitive_desc pd(d, p->engine());
  p->input(DNNL_ARG_SRC, in[0], md, pd.src_desc());
  p->output(out, md, pd.dst_desc());
  p->set(dnnl::softmax_forward(pd), pd.impl_info_str());
  return p;
}

std::unique_ptr<Contender> layer_norm(const std::vector<rt::NDArray>& in, const rt::NDArray& out) {
  auto md = plain(shape_of(in[0]));
  auto vec = plain({in[0].shape().back()});
  auto p = std::make_unique<Primitive>();
  using ln = dnnl::layer_normalization_forward;
  ln::desc d(dnnl::prop_kind::forward_inference, md, 1e-5f,
             dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift);
  ln::primitive_desc pd(d, p->engine());
  p->input(DNNL_ARG_SRC, in[0], md, pd.src_desc());
  p->input(DNNL_ARG_SCALE, in[1], vec, vec);
  p->input(DNNL_ARG_SHIFT, in[2], vec, vec);
  p->output(out, md, pd.dst_desc());
  p->set(ln(pd), pd.impl_info_str());
  return p;
}

std::unique_ptr<Contender> make_onednn_contender(const ContenderOp& op, const std::vector<rt::NDArray>& inputs,
                                                 const rt::NDArray& out) {
  const bool gemm = op.op == "matmul" || op.op == "batch_matmul" || op.op == "dense";
  user_check(op.f32 || (gemm && op.dtype == "bf16") || op.op == "qmatmul" || op.op == "qdense" ||
             op.op == "qconv2d_nchwc" || op.op == "conv2d_nchwc_bf16")
      << "the oneDNN contender compares f32 ops, bf16 GEMMs, conv2d_nchwc_bf16 and the int8 qmatmul, qdense and "
         "qconv2d_nchwc only";
  try {
    if (op.op == "qconv2d_nchwc") return std::make_unique<DotBlockedConv>(op, inputs, out, true);
    if (op.op == "conv2d_nchwc_bf16") return std::make_unique<DotBlockedConv>(op, inputs, out, false);
    if (op.op == "qmatmul") return qgemm(op, inputs, out, false);
    if (op.op == "qdense") return qgemm(op, inputs, out, true);
    if (op.op == "matmul") return matmul(op, inputs, out);
    if (op.op == "batch_matmul") return batch_matmul(op, inputs, out);
    if (op.op == "dense") return dense(op, inputs, out);
    if (op.op == "conv2d") return conv(op, inputs, out, false, false);
    if (op.op == "conv2d_nhwc") return conv(op, inputs, out, true, false);
    if (op.op == "conv2d_nchwc") return std::make_unique<BlockedConv>(op, inputs, out, false);
    if (op.op == "depthwise_conv2d_nchwc") return std::make_unique<BlockedConv>(op, inputs, out, true);
    if (op.op == "dwsep_nchwc") return std::make_unique<DwsepChain>(op, inputs, out);
    if (op.op == "depthwise_conv2d") return conv(op, inputs, out, false, true);
    if (op.op == "max_pool2d") return pool(op, inputs, out, true);
    if (op.op == "avg_pool2d") return pool(op, inputs, out, false);
    if (is_blocked_pool(op.op)) return std::make_unique<BlockedPool>(op, inputs, out);
    if (op.op == "softmax") return softmax(inputs, out);
    if (op.op == "layer_norm") return layer_norm(inputs, out);
  } catch (const dnnl::error& e) {
    user_error() << "oneDNN cannot run " << op.canonical << ": " << e.what();
  }
  user_error() << "oneDNN has no contender for op '" << op.op << "'";
}

class OnednnPlugin : public ContenderPlugin {
 public:
  std::string unavailable_reason() const override { return ""; }  // loading the plug-in loaded oneDNN
  std::string version() const override { return onednn_version(); }
  std::unique_ptr<Contender> make(const ContenderOp& op, const std::vector<rt::NDArray>& inputs,
                                  const rt::NDArray& out) const override {
    return make_onednn_contender(op, inputs, out);
  }
};

}  // namespace
}  // namespace kiln::baselines

extern "C" const kiln::baselines::ContenderPlugin* KILN_CONTENDER_ENTRY() {
  static const kiln::baselines::OnednnPlugin plugin;
  return &plugin;
}
