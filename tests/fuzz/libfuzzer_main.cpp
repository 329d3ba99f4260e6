// One libFuzzer target (built with MESHSIM_LIBFUZZER, clang only): MESHSIM_FUZZ_TARGET names the
// parser, whose harness is the seeded driver's (tests/fuzz/fuzz_targets.hpp). An input that a
// harness counts as failed (an internal error, an out-of-memory, a crash or a sanitizer report of a
// CLI child) aborts, so libFuzzer keeps it as a crash. Run by tests/fuzz/run_libfuzzer.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include "tests/fuzz/fuzz_targets.hpp"

namespace {

const meshsim::fuzz::Target& this_target() {
  static const meshsim::fuzz::Target* target = meshsim::fuzz::target_named(MESHSIM_FUZZ_TARGET);
  if (target == nullptr) {
    std::cerr << "no fuzz target named " << MESHSIM_FUZZ_TARGET << "\n";
    std::abort();
  }
  return *target;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const meshsim::fuzz::Target& target = this_target();
  const std::string input(reinterpret_cast<const char*>(data), size);
  const meshsim::fuzz::Outcome out = target.run(input);
  if (out.result == meshsim::fuzz::Outcome::failed) {
    std::cerr << "FAIL " << target.name << ": " << out.detail << "\n";
    std::abort();
  }
  return 0;
}
