// XC Repository text reader: any bytes give a Dataset that validates or a hetsgd::Error.
#include "datasets/xc_format.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  hetsgd::fuzz::single_thread();
  hetsgd::datasets::TextReadOptions small;
  small.chunk_bytes = 64;  // many chunks even on short inputs: exercises the merge
  hetsgd::fuzz::expect_clean("fuzz.txt", [&] {
    hetsgd::datasets::parse_xc(hetsgd::fuzz::as_text(data, size), "fuzz.txt", small)
        .validate("fuzz.txt");
  });
  return 0;
}
