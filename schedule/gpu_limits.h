// What a GPU schedule may use: the limits of one NVIDIA architecture (or of
// the device at hand). Templates size their tiles from it, and lowering
// checks launch dimensions and shared memory against it, so that a schedule
// that could not launch is a user error in schedule terms, not a failed
// launch.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace kiln {

// The most blocks a grid has along y and along z on every NVIDIA
// architecture (x allows 2^31 - 1). A template that binds block loops to
// blockIdx.y or .z folds them into blockIdx.x when they count more.
constexpr int64_t kGpuMaxGridYZ = 65535;

struct GpuLimits {
  std::string arch = "sm_90";  // -arch of the target ("sm_90a" keeps its suffix)
  int sm_version = 90;         // 70, 72, 75, 80, 86, 87, 89, 90
  int warp_size = 32;
  int64_t max_threads_per_block = 1024;
  std::array<int64_t, 3> max_block_dim{{1024, 1024, 64}};
  std::array<int64_t, 3> max_grid_dim{{2147483647, kGpuMaxGridYZ, kGpuMaxGridYZ}};
  // Statically declared shared memory (what kiln emits) is limited to 48 KiB
  // per block on every architecture; larger tiles need the opt-in limit and
  // dynamic shared memory.
  int64_t max_shared_static_per_block = 48 * 1024;
  int64_t max_shared_optin_per_block = 227 * 1024;
  int64_t max_shared_per_sm = 228 * 1024;
  int max_registers_per_thread = 255;
  int64_t registers_per_sm = 65536;
  int64_t max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int sm_count = 132;
  std::string source = "table";  // "table": from the per-arch table; "device": read from the GPU
};

// The limits of `arch` ("sm_70" ... "sm_90a") from kiln's table: the
// architecture's documented limits and the SM count of its flagship data
// centre part (V100, T4, A100, A10, L4, H100 SXM; for the embedded sm_72 and
// sm_87, Jetson AGX Xavier and AGX Orin). user_error for an arch kiln does
// not know (outside sm_70..sm_90a, or one of the table's gaps such as sm_71).
GpuLimits gpu_limits_for_arch(const std::string& arch);

// "sm_70, sm_72, sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a".
std::string known_gpu_archs();

// Whether `arch` is one of known_gpu_archs().
bool is_known_gpu_arch(const std::string& arch);

}  // namespace kiln
