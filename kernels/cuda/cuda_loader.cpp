// The CUDA seam of the `hetsgd` binary: kernels/cuda/api.h's functions load the CUDA backend
// (libhetsgd_cuda.so and, through it, the CUDA runtime, cuBLAS, cuSPARSE and NCCL) on the first
// call that needs a GPU, so a command that never asks for one (`--version`, a CPU-only run)
// maps none of them. The definitions are weak: a binary that links the backend itself (the
// tests, the GPU benchmark) gets the backend's strong definitions instead.
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <mutex>
#include <string>

#include "core/error.h"
#include "kernels/cuda/api.h"
#include "kernels/cuda/backend_table.h"

#define HETSGD_WEAK __attribute__((weak))

namespace hetsgd::cuda {
namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// No NVIDIA kernel driver, no GPU: answered without loading anything. Naming the module
// (HETSGD_CUDA_MODULE) loads it regardless, so that loading can be tested without a GPU.
bool driver_present() {
  return exists("/proc/driver/nvidia/version") || exists("/dev/nvidia0") ||
         exists("/dev/nvidiactl") || std::getenv("HETSGD_CUDA_MODULE") != nullptr;
}

std::string executable_dir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  const auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

struct Loaded {
  const BackendTable* table = nullptr;
  std::string error;  ///< why loading failed (every path tried)
};

// HETSGD_CUDA_MODULE, next to the binary, ../lib, the build tree, then the loader's path.
Loaded load() {
  Loaded out;
  std::string tried;
  const std::string dir = executable_dir();
  const char* env = std::getenv("HETSGD_CUDA_MODULE");
  const std::string candidates[] = {env != nullptr ? env : "", dir + "/libhetsgd_cuda.so",
                                    dir + "/../lib/libhetsgd_cuda.so", HETSGD_CUDA_MODULE_PATH,
                                    "libhetsgd_cuda.so"};
  for (const std::string& path : candidates) {
    if (path.empty() || (path.find('/') != std::string::npos && !exists(path))) continue;
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = ::dlerror();
      tried += "; " + path + ": " + (e != nullptr ? e : "dlopen failed");
      continue;
    }
    using Entry = const BackendTable* (*)();
    auto entry = reinterpret_cast<Entry>(::dlsym(h, "hetsgd_cuda_backend_table"));
    const BackendTable* t = entry != nullptr ? entry() : nullptr;
    if (t == nullptr || t->version != kBackendTableVersion) {
      tried += "; " + path + ": not a CUDA backend of this build";
      continue;
    }
    out.table = t;
    return out;
  }
  out.error = tried.empty() ? "libhetsgd_cuda.so not found next to the binary" : tried.substr(2);
  return out;
}

const Loaded& backend() {
  static const Loaded loaded = load();
  return loaded;
}

// The table, or DeviceUnavailable naming `what` and why the backend did not load.
const BackendTable& require(const std::string& what) {
  const Loaded& l = backend();
  if (l.table == nullptr) {
    throw DeviceUnavailable(what + ": the CUDA backend could not be loaded (" + l.error + ")");
  }
  return *l.table;
}

bool any_cuda(const std::vector<Device*>& devices) {
  for (const Device* d : devices) {
    if (d != nullptr && d->id().kind == DeviceKind::kCuda) return true;
  }
  return false;
}

}  // namespace

HETSGD_WEAK int device_count() {
  if (!driver_present()) return 0;
  const Loaded& l = backend();
  return l.table != nullptr ? l.table->device_count() : 0;
}

HETSGD_WEAK std::string device_name(int ordinal) {
  return require("cuda:" + std::to_string(ordinal)).device_name(ordinal);
}

HETSGD_WEAK std::unique_ptr<Device> make_device(int ordinal, const ModelConfig& config,
                                                const DeviceOptions& options) {
  const std::string what = "cuda:" + std::to_string(ordinal);
  if (!driver_present()) {
    throw DeviceUnavailable(what + ": no NVIDIA driver on this machine (no /dev/nvidia0)");
  }
  return require(what).make_device(ordinal, config, options);
}

HETSGD_WEAK std::unique_ptr<Communicator> make_cuda_communicator(
    const std::vector<Device*>& devices) {
  if (!any_cuda(devices)) return nullptr;
  return require("CUDA communicator").make_cuda_communicator(devices);
}

HETSGD_WEAK CrossRankOffer nccl_cross_rank_offer(const std::vector<Device*>& devices) {
  if (!any_cuda(devices)) return {};
  return require("NCCL cross-rank sum").nccl_cross_rank_offer(devices);
}

}  // namespace hetsgd::cuda
