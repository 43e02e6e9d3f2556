// The worker loop of IsolatedRunner (see measure_worker.h).
#include "runtime/measure_worker.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "base/error.h"
#include "runtime/cuda_driver.h"
#include "runtime/gpu_artifact.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "runtime/time_evaluator.h"
#include "runtime/process_util.h"

namespace kiln {
namespace {

// A kernel call that returned non-zero during timing.
struct KernelFailed {
  int32_t code;
};

std::string index_str(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] > 0 ? flat % shape[d] : 0;
    flat = shape[d] > 0 ? flat / shape[d] : 0;
  }
  std::ostringstream os;
  os << "[";
  for (size_t d = 0; d < idx.size(); ++d) os << (d ? ", " : "") << idx[d];
  os << "]";
  return os.str();
}

class Worker {
 public:
  Worker(const MeasureJob& job, const MeasureOptions& options) : job_(job) {
    for (size_t i = 0; i < job.args.size(); ++i) {
      const ArgSpec& a = job.args[i];
      rt::NDArray arr = rt::NDArray::empty(a.shape, a.dtype);
      if (i < job.num_inputs) {
        arr.fill_random(job.input_seed + i);
        pristine_.push_back(arr.copy());
      }
      arrays_.push_back(arr);
      ptrs_.push_back(arr.data());
    }
    if (options.number > 0) {
      time_.number = options.number;
      time_.min_repeat_ms = 0;
    } else {
      time_.number = 1;
      time_.min_repeat_ms = options.min_repeat_ms;
    }
    time_.repeat = options.repeat;
    time_.warmup = options.warmup;
    time_.cooldown_ms = options.cooldown_ms;
    time_.flush_cache = options.flush_cache;
  }

  // Whether the worker must end after its reply: the GPU context is lost.
  bool fatal() const { return fatal_; }

  // Returns (error kind, message, samples) encoded for the parent.
  std::string measure(const std::string& path, const std::string& entry, double screen_ms) {
    rt::TimeOptions timing = time_;
    timing.screen_ms = screen_ms;
    if (is_gpu_artifact(path)) return measure_gpu(path, timing);
    std::shared_ptr<rt::Module> module;
    try {
      module = rt::Module::load(path);
    } catch (const std::exception& e) {
      return reply(ErrorKind::kRuntimeCrash, e.what());
    }
    kiln_packed_fn fn = module->get_function(entry);
    if (!fn) return reply(ErrorKind::kRuntimeCrash, "the artifact " + path + " has no kernel '" + entry + "'");

    // The check run: pristine inputs (a faulty earlier kernel may have
    // written them), outputs poisoned (all bits set: NaN for floats) so an
    // element the kernel never writes cannot pass by luck.
    for (size_t i = 0; i < pristine_.size(); ++i)
      std::memcpy(arrays_[i].data(), pristine_[i].data(), pristine_[i].nbytes());
    for (size_t i = job_.num_inputs; i < arrays_.size(); ++i)
      std::memset(arrays_[i].data(), 0xff, arrays_[i].nbytes());
    const int32_t rc = fn(ptrs_.data());
    if (rc != 0) return reply(ErrorKind::kRuntimeCrash, "the kernel returned " + std::to_string(rc));
    std::string wrong = check_reference();
    if (!wrong.empty()) return reply(ErrorKind::kWrongResult, wrong);

    try {
      rt::TimeResult t = rt::time_function(
          [&] {
            const int32_t code = fn(ptrs_.data());
            if (code != 0) throw KernelFailed{code};
          },
          timing);
      return reply(ErrorKind::kNone, "", t.samples_ms);
    } catch (const KernelFailed& f) {
      return reply(ErrorKind::kRuntimeCrash, "the kernel returned " + std::to_string(f.code) + " while being timed");
    } catch (const std::exception& e) {
      return reply(ErrorKind::kRuntimeCrash, std::string("timing failed: ") + e.what());
    }
  }

 private:
  // A GPU candidate: the arguments live on the first GPU (made once per
  // worker: the context belongs to this process), the check run downloads
  // the outputs, timing uses CUDA events. A sticky CUDA error ends the
  // worker after its reply; the next candidate gets a fresh process.
  std::string measure_gpu(const std::string& path, const rt::TimeOptions& timing) {
    try {
      if (!gpu_) gpu_ = std::make_unique<GpuState>(arrays_);
      const GpuArtifact art = read_gpu_artifact(path);
      rt::cuda::CudaModule module(art.image);
      const std::vector<rt::cuda::KernelLaunch> launches = kernel_launches(module, art.kernels);
      for (size_t i = 0; i < pristine_.size(); ++i) gpu_->buffers[i].upload(pristine_[i].data(), pristine_[i].nbytes());
      for (size_t i = job_.num_inputs; i < arrays_.size(); ++i) gpu_->buffers[i].fill_bytes(0xff);
      rt::cuda::launch(launches, gpu_->pointers);
      for (size_t i = job_.num_inputs; i < arrays_.size(); ++i)
        gpu_->buffers[i].download(arrays_[i].data(), arrays_[i].nbytes());
      std::string wrong = check_reference();
      if (!wrong.empty()) return reply(ErrorKind::kWrongResult, wrong);
      rt::TimeOptions t = timing;
      t.flush_cache = true;  // a GPU's L2 holds whole layers: always start cold
      const rt::TimeResult r = rt::cuda::time_launches(launches, gpu_->pointers, t, gpu_->context.device().l2_bytes);
      return reply(ErrorKind::kNone, "", r.samples_ms);
    } catch (const rt::cuda::CudaError& e) {
      fatal_ = e.sticky();
      return reply(ErrorKind::kRuntimeCrash, e.what());
    } catch (const UserError& e) {
      return reply(ErrorKind::kDeviceError, e.what());
    }
  }

  // "" when every reference sample matches; else the first bad element.
  std::string check_reference() const {
    for (const ReferenceSample& ref : job_.reference) {
      const size_t arg = job_.num_inputs + static_cast<size_t>(ref.output);
      const rt::NDArray& out = arrays_[arg];
      int64_t bad = 0, first = -1;
      double got_first = 0, want_first = 0;
      const size_t count = ref.expected.size();
      for (size_t k = 0; k < count; ++k) {
        const int64_t at = ref.whole() ? static_cast<int64_t>(k) : ref.flat_index[k];
        const double got = out.get(at);
        const double want = ref.expected[k];
        // NaN matches only NaN; written so that a NaN on one side never matches.
        if (std::isnan(want) ? std::isnan(got) : std::fabs(got - want) <= ref.tolerance * (1 + std::fabs(want)))
          continue;
        if (bad++ == 0) {
          first = at;
          got_first = got;
          want_first = want;
        }
      }
      if (bad == 0) continue;
      const ArgSpec& a = job_.args[arg];
      std::ostringstream os;
      os.precision(9);
      os << "output " << a.name << index_str(a.shape, first) << " is " << got_first << ", expected " << want_first
         << " (tolerance " << ref.tolerance << " * (1 + |expected|)); " << bad << " of " << count
         << (ref.whole() ? " elements differ" : " checked elements differ");
      return os.str();
    }
    return "";
  }

  static std::string reply(ErrorKind kind, const std::string& message, const std::vector<double>& samples = {}) {
    proc::Writer w;
    w.i64(static_cast<int64_t>(kind)).str(message).f64s(samples);
    return w.bytes();
  }

  struct GpuState {
    explicit GpuState(const std::vector<rt::NDArray>& arrays) : context(0) {
      for (const rt::NDArray& a : arrays) {
        buffers.emplace_back(a.nbytes());
        pointers.push_back(buffers.back().ptr());
      }
    }
    rt::cuda::Context context;
    std::vector<rt::cuda::DeviceBuffer> buffers;
    std::vector<uint64_t> pointers;
  };

  const MeasureJob& job_;
  std::unique_ptr<GpuState> gpu_;
  bool fatal_ = false;
  std::vector<rt::NDArray> arrays_;    // job.args order
  std::vector<rt::NDArray> pristine_;  // the inputs as generated
  std::vector<void*> ptrs_;
  rt::TimeOptions time_;
};

}  // namespace

void serve_measurements(int fd, const MeasureJob& job, const MeasureOptions& options) {
  std::unique_ptr<Worker> worker;
  try {
    worker = std::make_unique<Worker>(job, options);
  } catch (const std::exception& e) {
    proc::send_frame(fd, proc::Writer().str(std::string("cannot set up the kernel's buffers: ") + e.what()).bytes());
    return;
  }
  if (!proc::send_frame(fd, proc::Writer().str("").bytes())) return;
  std::string request;
  while (proc::recv_frame(fd, std::nullopt, &request) == proc::RecvStatus::kOk) {
    proc::Reader in(request);
    const std::string path = in.str();
    const std::string entry = in.str();
    const double screen_ms = in.f64();
    if (!proc::send_frame(fd, worker->measure(path, entry, screen_ms))) return;
    if (worker->fatal()) return;
  }
}

std::string encode_measure_request(const BuildResult& build, double screen_ms) {
  return proc::Writer().str(build.artifact).str(build.entry).f64(screen_ms).bytes();
}

std::string decode_worker_ready(const std::string& payload) { return proc::Reader(payload).str(); }

MeasureResult decode_measure_reply(const std::string& payload) {
  proc::Reader in(payload);
  MeasureResult r;
  r.error = static_cast<ErrorKind>(in.i64());
  r.message = in.str();
  r.samples_ms = in.f64s();
  return r;
}

}  // namespace kiln
