// Training checkpoint: the loader takes a path, so each input is written to a private file.
#include <unistd.h>

#include <cstdio>

#include "core/engine/checkpoint.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/hetsgd_fuzz_" + std::to_string(::getpid()) + ".ckpt";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  const bool written = std::fwrite(data, 1, size, f) == size;
  if (std::fclose(f) != 0 || !written) return 0;
  hetsgd::fuzz::expect_clean(path, [&] { hetsgd::load_checkpoint(path); });
  std::remove(path.c_str());  // no scratch file outlives the run (a crash keeps its input)
  return 0;
}
