#pragma once
// The parsers under fuzz, one target each: a seed corpus folder under tests/fuzz/corpus/ and what
// runs on one mutated input — the one harness of both drivers, the seeded mutation driver
// (fuzz_main.cpp) and the libFuzzer targets (libfuzzer_main.cpp). A target "rejects" an input with
// InputError (exit 2 in the CLI); any other exception, a crash or a sanitizer report is a failure
// of the fuzz run.
#include <string>
#include <vector>

namespace meshsim::fuzz {

enum class InputKind { json, argv, bytes };

// What one input did: parsed, rejected with one line, or failed (internal error, crash, hang).
struct Outcome {
  enum { accepted, rejected, failed, timed_out } result;
  std::string detail;  // the failure's message
};

struct Target {
  const char* name;  // also the corpus folder
  InputKind kind;
  Outcome (*run)(const std::string& input);  // argv targets: one argument per line
  // Seeds made by the target itself instead of read from its corpus folder (binary formats, so
  // that no binary file is checked in); null: the corpus folder's files.
  std::vector<std::string> (*seeds)() = nullptr;
};

const std::vector<Target>& targets();
// The target called `name`; null when there is none.
const Target* target_named(const std::string& name);

}  // namespace meshsim::fuzz
