// meshsim_fuzz: a seeded mutation fuzzer of meshsim's parsers (CLI flags, hardware profiles,
// models, Programs, sweep rows, published-runs files, Chakra execution traces). Each input is a
// seed from tests/fuzz/corpus/<target>/ (or made by the target: Chakra traces) with a few
// mutations; the same --seed and --inputs give the same inputs everywhere. Exit 1 when any input
// ended in an internal error (anything but InputError), a crash or a sanitizer report; a CLI run
// that a mutated size makes longer than its alarm is counted as timed out.
//
//   meshsim_fuzz --corpus DIR [--inputs N] [--seed S] [--target NAME]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/fuzz/fuzz_targets.hpp"
#include "tests/fuzz/mutator.hpp"

namespace fs = std::filesystem;
using namespace meshsim::fuzz;

namespace {

struct Seed {
  std::string text;
  nlohmann::json json;            // json targets
  std::vector<std::string> argv;  // argv targets
};

struct Options {
  fs::path corpus;
  std::int64_t inputs = 6000;
  std::uint64_t seed = 1;
  std::string only;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<Seed> load_seeds(const fs::path& dir, const Target& t) {
  const InputKind kind = t.kind;
  if (t.seeds != nullptr) {
    std::vector<Seed> seeds;
    for (auto& bytes : t.seeds()) seeds.push_back(Seed{std::move(bytes), {}, {}});
    return seeds;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());  // directory order differs between machines
  std::vector<Seed> seeds;
  for (const auto& f : files) {
    Seed s;
    s.text = read_file(f);
    if (kind == InputKind::json) {
      s.json = nlohmann::json::parse(s.text);
    } else if (kind == InputKind::argv) {
      std::istringstream words(s.text);
      for (std::string w; words >> w;) s.argv.push_back(w);
    }
    seeds.push_back(std::move(s));
  }
  return seeds;
}

std::string join_lines(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += a + "\n";
  return out;
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--corpus")
      o.corpus = value;
    else if (flag == "--inputs")
      o.inputs = std::stoll(value);
    else if (flag == "--seed")
      o.seed = std::stoull(value);
    else if (flag == "--target")
      o.only = value;
    else
      throw std::invalid_argument("unknown flag " + flag);
  }
  if (o.corpus.empty()) throw std::invalid_argument("--corpus DIR is required");
  if (!o.only.empty() && target_named(o.only) == nullptr) {
    throw std::invalid_argument("--target: no fuzz target named " + o.only);
  }
  return o;
}

// Inputs per target: the CLI target forks and simulates, so it gets one share to every JSON
// target's two.
std::int64_t share(const Target& t, const Options& o, std::int64_t shares) {
  if (!o.only.empty()) return t.name == o.only ? o.inputs : 0;
  return o.inputs * (t.kind == InputKind::argv ? 1 : 2) / shares;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse_options(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "meshsim_fuzz: " << e.what() << "\n";
    return 2;
  }
  const auto started = std::chrono::steady_clock::now();
  std::int64_t shares = 0;
  for (const auto& t : targets()) shares += t.kind == InputKind::argv ? 1 : 2;
  std::map<std::string, std::int64_t> totals;
  std::int64_t failures = 0;
  for (const auto& t : targets()) {
    const std::vector<Seed> seeds = load_seeds(o.corpus / t.name, t);
    std::vector<std::string> vocabulary;  // every flag of the target's seeds
    for (const auto& s : seeds) {
      for (const auto& w : s.argv) {
        if (w.starts_with("--")) vocabulary.push_back(w);
      }
    }
    const std::int64_t n = share(t, o, shares);
    std::int64_t counts[4] = {0, 0, 0, 0};
    for (std::int64_t i = 0; i < n; ++i) {
      Mutator m(o.seed * 1'000'003 + static_cast<std::uint64_t>(i));
      const Seed& s = seeds[static_cast<std::size_t>(i) % seeds.size()];
      const std::string input = t.kind == InputKind::json ? m.mutate_json(s.json, s.text)
                                : t.kind == InputKind::bytes
                                    ? m.mutate_binary(s.text)
                                    : join_lines(m.mutate_argv(s.argv, vocabulary));
      const Outcome out = t.run(input);
      ++counts[out.result];
      if (out.result == Outcome::failed) {
        ++failures;
        std::cerr << fmt::format(
            "FAIL {} input {} (seed {}): {}\n--- input ---\n{}\n-------------\n", t.name, i, o.seed,
            out.detail, input.substr(0, 4000));
      }
    }
    std::cout << fmt::format(
        "{:<10} {:>6} inputs: {:>6} accepted, {:>6} rejected, {} timed out, "
        "{} failed\n",
        t.name, n, counts[0], counts[1], counts[3], counts[2]);
    totals["inputs"] += n;
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << fmt::format("fuzz: {} inputs, seed {}, {:.1f} s\n", totals["inputs"], o.seed, wall);
  std::cout << fmt::format("{} passed, {} failed\n", totals["inputs"] - failures, failures);
  return failures == 0 ? 0 : 1;
}
