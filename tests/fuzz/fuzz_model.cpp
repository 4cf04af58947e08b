// Model file: any bytes give a model whose parameters fit its shape and are finite, or a
// hetsgd::Error; both as given and with the checksum made valid.
#include <cmath>

#include "core/model/model_io.h"
#include "core/param_layout.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

void check(std::string_view bytes) {
  hetsgd::fuzz::expect_clean("fuzz.model", [&] {
    const hetsgd::SavedModel m = hetsgd::parse_model(bytes, "fuzz.model");
    if (static_cast<std::size_t>(hetsgd::ParamLayout(m.config).total()) != m.params.size()) {
      __builtin_trap();
    }
    for (float v : m.params) {
      if (!std::isfinite(v)) __builtin_trap();
    }
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes = hetsgd::fuzz::as_text(data, size);
  check(bytes);
  check(hetsgd::fuzz::resealed(bytes));
  return 0;
}
