#include "runtime/gpu_artifact.h"

#include <fstream>
#include <iterator>

#include "base/error.h"
#include "runtime/process_util.h"

namespace kiln {

namespace {
const std::string kMagic = "kiln-gpu-artifact-4\n";
}

bool is_gpu_artifact(const std::string& path) {
  const std::string suffix = kGpuArtifactSuffix;
  return path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<rt::cuda::KernelLaunch> kernel_launches(const rt::cuda::CudaModule& module,
                                                    const std::vector<GpuArtifactKernel>& kernels) {
  std::vector<rt::cuda::KernelLaunch> out;
  for (const GpuArtifactKernel& k : kernels) {
    rt::cuda::KernelLaunch l;
    l.function = module.kernel(k.name, k.dynamic_shared_bytes);
    l.name = k.name;
    l.grid = k.grid;
    l.block = k.block;
    l.shared_bytes = k.shared_bytes;
    l.dynamic_shared_bytes = k.dynamic_shared_bytes;
    l.arg_indices = k.arg_indices;
    l.tensor_maps = k.tensor_maps;
    out.push_back(l);
  }
  return out;
}

bool looks_like_gpu_artifact(const std::string& bytes) { return bytes.compare(0, kMagic.size(), kMagic) == 0; }

void write_gpu_artifact(const GpuArtifact& a, const std::string& path) {
  proc::Writer w;
  w.str(a.arch).i64(static_cast<int64_t>(a.kernels.size()));
  for (const GpuArtifactKernel& k : a.kernels) {
    w.str(k.name);
    for (int d = 0; d < 3; ++d) w.i64(k.grid[d]).i64(k.block[d]);
    w.i64(k.shared_bytes).i64(k.dynamic_shared_bytes).i64(static_cast<int64_t>(k.arg_indices.size()));
    for (int i : k.arg_indices) w.i64(i);
    w.i64(static_cast<int64_t>(k.tensor_maps.size()));
    for (const rt::cuda::TensorMapSpec& m : k.tensor_maps) {
      w.i64(m.rank).i64(m.element_bytes);
      for (uint64_t x : m.dims) w.i64(static_cast<int64_t>(x));
      for (uint64_t x : m.strides) w.i64(static_cast<int64_t>(x));
      for (uint32_t x : m.box) w.i64(x);
      w.i64(m.swizzle);
    }
  }
  w.str(std::string(a.image.begin(), a.image.end()));
  std::ofstream out(path, std::ios::binary);
  out << kMagic << w.bytes();
  user_check(out.good()) << "cannot write the GPU artifact '" << path << "'";
}

GpuArtifact read_gpu_artifact(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  user_check(in.good()) << "cannot read the GPU artifact '" << path << "'";
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  user_check(bytes.compare(0, kMagic.size(), kMagic) == 0) << "'" << path << "' is not a kiln GPU artifact";
  GpuArtifact a;
  try {
    const std::string body = bytes.substr(kMagic.size());
    proc::Reader r(body);
    a.arch = r.str();
    const int64_t n = r.i64();
    user_check(n >= 0 && n < 1024) << "'" << path << "' is a damaged GPU artifact (" << n << " kernels)";
    for (int64_t i = 0; i < n; ++i) {
      GpuArtifactKernel k;
      k.name = r.str();
      for (int d = 0; d < 3; ++d) {
        k.grid[d] = static_cast<unsigned>(r.i64());
        k.block[d] = static_cast<unsigned>(r.i64());
      }
      k.shared_bytes = static_cast<unsigned>(r.i64());
      k.dynamic_shared_bytes = static_cast<unsigned>(r.i64());
      const int64_t args = r.i64();
      user_check(args >= 0 && args < 4096) << "'" << path << "' is a damaged GPU artifact";
      for (int64_t j = 0; j < args; ++j) k.arg_indices.push_back(static_cast<int>(r.i64()));
      const int64_t maps = r.i64();
      user_check(maps == 0 || maps == args) << "'" << path << "' is a damaged GPU artifact";
      for (int64_t j = 0; j < maps; ++j) {
        rt::cuda::TensorMapSpec m;
        m.rank = static_cast<int>(r.i64());
        m.element_bytes = static_cast<int>(r.i64());
        for (uint64_t& x : m.dims) x = static_cast<uint64_t>(r.i64());
        for (uint64_t& x : m.strides) x = static_cast<uint64_t>(r.i64());
        for (uint32_t& x : m.box) x = static_cast<uint32_t>(r.i64());
        m.swizzle = static_cast<int>(r.i64());
        user_check(m.rank == 0 || rt::cuda::tensor_map_problem(m).empty())
            << "'" << path << "' is a damaged GPU artifact (kernel " << k.name << ": "
            << rt::cuda::tensor_map_problem(m) << ")";
        k.tensor_maps.push_back(m);
      }
      a.kernels.push_back(k);
    }
    const std::string image = r.str();
    a.image.assign(image.begin(), image.end());
  } catch (const InternalError&) {
    user_error() << "'" << path << "' is a truncated GPU artifact";
  }
  return a;
}

}  // namespace kiln
