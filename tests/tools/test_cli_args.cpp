#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/error.hpp"
#include "tools/cli_args.hpp"

using namespace meshsim;

namespace {

const std::vector<OptionSpec> kSpecs = {
    {"--cp", "N", "ranks"}, {"--variant", "V", "variant"}, {"--json", "", "json"}};

std::string error_of(std::vector<std::string> argv) {
  try {
    Args a("ring-attention", kSpecs, argv);
    a.get_int("--cp", 8, 1, 1024);
    a.get_choice("--variant", "ring", {"ring", "zigzag"});
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("values with a space or with =, switches, defaults") {
  const std::vector<std::string> argv = {"--cp", "16", "--variant=zigzag", "--json"};
  const Args a("ring-attention", kSpecs, argv);
  CHECK(a.get_int("--cp", 8, 1, 1024) == 16);
  CHECK(a.get_choice("--variant", "ring", {"ring", "zigzag"}) == "zigzag");
  CHECK(a.has("--json"));
  CHECK_FALSE(a.help_requested());
  const Args none("ring-attention", kSpecs, std::vector<std::string>{});
  CHECK(none.get_int("--cp", 8, 1, 1024) == 8);
  CHECK_FALSE(none.has("--json"));
}

TEST_CASE("errors name the flag and what was expected") {
  CHECK(error_of({"--cp", "0"}) == "--cp expects an integer in [1, 1024], got '0'");
  CHECK(error_of({"--cp", "12x"}).find("--cp expects an integer") == 0);
  CHECK(error_of({"--cp", "-3"}).find("got '-3'") != std::string::npos);
  CHECK(error_of({"--cp"}) == "--cp expects a value (N)");
  CHECK(error_of({"--cp", "2", "--cp", "4"}) == "--cp given more than once");
  CHECK(error_of({"--variant", "spiral"}) == "--variant expects one of ring|zigzag, got 'spiral'");
  CHECK(error_of({"--bogus"}).find("unknown flag --bogus") != std::string::npos);
  CHECK(error_of({"stray"}).find("unexpected argument 'stray'") != std::string::npos);
  CHECK(error_of({"--json=1"}) == "--json takes no value");
}

TEST_CASE("help lists every flag and the example") {
  const std::vector<std::string> argv = {"--help"};
  const Args a("ring-attention", kSpecs, argv);
  CHECK(a.help_requested());
  const std::string h = a.help_text("Simulate.", "meshsim ring-attention --cp 8");
  for (const char* s :
       {"--cp N", "--variant V", "--json", "--help", "example:", "meshsim ring-attention --cp 8"}) {
    CHECK(h.find(s) != std::string::npos);
  }
}

TEST_CASE("names_flag finds a mode flag before the flags are parsed") {
  const std::vector<std::string> a = {"--model", "x", "--kineto=t.json"};
  const std::vector<std::string> b = {"--kineto", "t.json"};
  const std::vector<std::string> c = {"--kinetoX", "--from", "--kineto-file"};
  CHECK(names_flag(a, "--kineto"));
  CHECK(names_flag(b, "--kineto"));
  CHECK_FALSE(names_flag(c, "--kineto"));
  CHECK_FALSE(names_flag({}, "--kineto"));
}
