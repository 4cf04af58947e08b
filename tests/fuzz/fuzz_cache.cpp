// Binary dataset cache: any bytes give a Dataset that validates or a hetsgd::Error.
#include "datasets/binary_cache.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  hetsgd::fuzz::expect_clean("fuzz.bin", [&] {
    hetsgd::datasets::parse_cache(hetsgd::fuzz::as_text(data, size), "fuzz.bin")
        .validate("fuzz.bin");
  });
  return 0;
}
