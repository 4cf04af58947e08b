// LIBSVM reader, through format detection as the command line reads a header-less file.
#include "datasets/libsvm_format.h"
#include "datasets/load.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  hetsgd::fuzz::single_thread();
  const std::string_view text = hetsgd::fuzz::as_text(data, size);
  hetsgd::datasets::TextReadOptions small;
  small.chunk_bytes = 64;
  hetsgd::fuzz::expect_clean("fuzz.svm", [&] {
    hetsgd::datasets::detect_format_of(text, "fuzz.svm");
    hetsgd::datasets::parse_libsvm(text, "fuzz.svm", 0, 0, true, small).validate("fuzz.svm");
  });
  // Bounds given by a training set or a model, as for a test file.
  hetsgd::fuzz::expect_clean("fuzz.svm", [&] {
    hetsgd::datasets::parse_libsvm(text, "fuzz.svm", 50, 20, true, small).validate("fuzz.svm");
  });
  return 0;
}
