#pragma once
// Seeded mutations for the parser fuzz driver: the same seed gives the same inputs on every
// machine (std::mt19937_64 is fully specified by the standard; no distribution classes, whose
// output is implementation-defined, are used).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace meshsim::fuzz {

class Mutator {
 public:
  explicit Mutator(std::uint64_t seed) : rng_(seed) {}

  // A JSON document with 1 to 4 structural changes (a value replaced by an edge case, a key or
  // element removed, an element duplicated, a type changed), or raw byte changes to its text.
  std::string mutate_json(const nlohmann::json& doc, const std::string& text);
  // An argv with 1 to 3 changes: a value replaced by an edge case (0, -1, 2^63, 1e308, nan, "",
  // "2,,4", ...), a token dropped or duplicated, a flag's "=" form, a flag of another seed.
  std::vector<std::string> mutate_argv(std::vector<std::string> argv,
                                       const std::vector<std::string>& vocabulary);

  // A binary input with 1 to 3 byte changes (a bit flipped, bytes removed, inserted, duplicated,
  // or the input cut short).
  std::string mutate_binary(std::string bytes);

  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }

 private:
  nlohmann::json edge_value();
  std::string edge_text();
  void mutate_node(nlohmann::json& doc);
  std::string mutate_bytes(std::string text);

  std::mt19937_64 rng_;
};

}  // namespace meshsim::fuzz
