// Binary dataset cache: any bytes give a Dataset that validates or a hetsgd::Error, both as
// given and with the checksum made valid (so the content checks behind it are reached).
#include "datasets/binary_cache.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes = hetsgd::fuzz::as_text(data, size);
  hetsgd::fuzz::expect_clean(
      "fuzz.bin", [&] { hetsgd::datasets::parse_cache(bytes, "fuzz.bin").validate("fuzz.bin"); });
  const std::string sealed = hetsgd::fuzz::resealed(bytes);
  hetsgd::fuzz::expect_clean(
      "fuzz.bin", [&] { hetsgd::datasets::parse_cache(sealed, "fuzz.bin").validate("fuzz.bin"); });
  return 0;
}
