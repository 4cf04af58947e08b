// Model file: any bytes give a model whose parameters fit its shape, or a hetsgd::Error.
#include "core/model_io.h"
#include "core/param_layout.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  hetsgd::fuzz::expect_clean("fuzz.model", [&] {
    const hetsgd::SavedModel m =
        hetsgd::parse_model(hetsgd::fuzz::as_text(data, size), "fuzz.model");
    if (static_cast<std::size_t>(hetsgd::ParamLayout(m.config).total()) != m.params.size()) {
      __builtin_trap();
    }
  });
  return 0;
}
