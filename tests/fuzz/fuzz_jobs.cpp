// Jobs file of `hetsgd share`: any bytes give a JobsFile or a hetsgd::Error.
#include "core/tenancy/jobs_file.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  hetsgd::fuzz::expect_clean("fuzz.json", [&] {
    hetsgd::tenancy::parse_jobs_file(std::string(hetsgd::fuzz::as_text(data, size)), "fuzz.json");
  });
  return 0;
}
