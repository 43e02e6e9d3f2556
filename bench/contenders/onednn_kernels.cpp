#include "bench/contenders/onednn_kernels.h"

#include <dnnl.hpp>
#include <stdexcept>
#include <unordered_map>

namespace kiln::baselines {

std::string onednn_version() {
  const dnnl_version_t* v = dnnl::version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

namespace {

class Matmul : public OnednnContender {
 public:
  Matmul(const rt::NDArray& A, const rt::NDArray& B, const rt::NDArray& C) : A_(A), B_(B), C_(C) {
    if (A.ndim() != 2 || B.ndim() != 2 || C.ndim() != 2 || A.shape()[1] != B.shape()[0])
      throw std::invalid_argument("onednn_matmul: shapes do not form a matmul");
  }
  void run() override {
    int64_t m = A_.shape()[0], k = A_.shape()[1], n = B_.shape()[1];
    dnnl_status_t st = dnnl_sgemm('N', 'N', m, n, k, 1.0f, A_.data_as<float>(), k, B_.data_as<float>(), n, 0.0f,
                                  C_.data_as<float>(), n);
    if (st != dnnl_success) throw std::runtime_error("dnnl_sgemm failed with status " + std::to_string(st));
  }
  void finish() override {}
  std::string impl() const override { return "dnnl_sgemm"; }

 private:
  rt::NDArray A_, B_, C_;
};

class Conv2d : public OnednnContender {
 public:
  Conv2d(const rt::NDArray& data, const rt::NDArray& weight, const rt::NDArray& out, int64_t stride, int64_t pad,
         int64_t dilation)
      : eng_(dnnl::engine::kind::cpu, 0), strm_(eng_) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    dnnl::memory::dims src_dims(data.shape().begin(), data.shape().end());
    dnnl::memory::dims wei_dims(weight.shape().begin(), weight.shape().end());
    dnnl::memory::dims dst_dims(out.shape().begin(), out.shape().end());
    user_src_ = dnnl::memory({src_dims, dt::f32, tag::nchw}, eng_, data.data());
    user_wei_ = dnnl::memory({wei_dims, dt::f32, tag::oihw}, eng_, weight.data());
    user_dst_ = dnnl::memory({dst_dims, dt::f32, tag::nchw}, eng_, out.data());
    // oneDNN counts dilation from 0 (0 = dense).
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                         dnnl::memory::desc(src_dims, dt::f32, tag::any),
                                         dnnl::memory::desc(wei_dims, dt::f32, tag::any),
                                         dnnl::memory::desc(dst_dims, dt::f32, tag::any), {stride, stride},
                                         {dilation - 1, dilation - 1}, {pad, pad}, {pad, pad});
    pd_ = dnnl::convolution_forward::primitive_desc(desc, eng_);
    auto to_layout = [&](dnnl::memory& user, const dnnl::memory::desc& want) {
      if (user.get_desc() == want) return user;
      dnnl::memory m(want, eng_);
      dnnl::reorder(user, m).execute(strm_, user, m);
      return m;
    };
    src_ = to_layout(user_src_, pd_.src_desc());
    wei_ = to_layout(user_wei_, pd_.weights_desc());
    dst_ = pd_.dst_desc() == user_dst_.get_desc() ? user_dst_ : dnnl::memory(pd_.dst_desc(), eng_);
    strm_.wait();
    conv_ = dnnl::convolution_forward(pd_);
  }
  void run() override {
    conv_.execute(strm_, {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, wei_}, {DNNL_ARG_DST, dst_}});
    strm_.wait();
  }
  void finish() override {
    if (dst_ != user_dst_) dnnl::reorder(dst_, user_dst_).execute(strm_, dst_, user_dst_);
    strm_.wait();
  }
  std::string impl() const override { return pd_.impl_info_str(); }

 private:
  dnnl::engine eng_;
  dnnl::stream strm_;
  dnnl::memory user_src_, user_wei_, user_dst_, src_, wei_, dst_;
  dnnl::convolution_forward::primitive_desc pd_;
  dnnl::convolution_forward conv_;
};

}  // namespace

std::unique_ptr<OnednnContender> onednn_matmul(const rt::NDArray& A, const rt::NDArray& B, const rt::NDArray& C) {
  return std::make_unique<Matmul>(A, B, C);
}

std::unique_ptr<OnednnContender> onednn_conv2d(const rt::NDArray& data, const rt::NDArray& weight,
                                               const rt::NDArray& out, int64_t stride, int64_t pad, int64_t dilation) {
  return std::make_unique<Conv2d>(data, weight, out, stride, pad, dilation);
}

}  // namespace kiln::baselines
