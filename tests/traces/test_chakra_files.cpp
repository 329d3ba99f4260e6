#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "sim/error.hpp"
#include "traces/chakra_files.hpp"

using namespace meshsim;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() /
                  ("meshsim-chakra-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
  }
};

}  // namespace

TEST_CASE("Chakra files: <prefix>.<rank>.et in one folder, or a path prefix") {
  const TempDir d;
  CHECK(chakra_rank_path(d.path.string(), "step", 3) == (d.path / "step.3.et").string());
  d.write("step.0.et", "a");
  d.write("step.1.et", "b");
  d.write("notes.txt", "x");
  d.write(kChakraCommGroupFile, "{}");
  const ChakraInput in = read_chakra_files(d.path.string());
  REQUIRE(in.ranks.size() == 2);
  CHECK(in.ranks[1].bytes == "b");
  CHECK(in.ranks[1].origin == (d.path / "step.1.et").string());
  CHECK(in.comm_groups == "{}");
  d.write("other.0.et", "c");
  CHECK_THROWS_WITH_AS(read_chakra_files(d.path.string()),
                       doctest::Contains("rank files of several traces (other, step)"), InputError);
  CHECK(read_chakra_files((d.path / "other").string()).ranks.size() == 1);
}

TEST_CASE("Chakra files: a missing rank is named with its file") {
  const TempDir d;
  d.write("t.0.et", "a");
  d.write("t.2.et", "c");
  const std::string missing =
      "rank 1's file " + (d.path / "t.1.et").string() + " is missing (ranks 0 to 2 expected)";
  CHECK_THROWS_WITH_AS(read_chakra_files(d.path.string()), doctest::Contains(missing.c_str()),
                       InputError);
  const TempDir empty;
  CHECK_THROWS_WITH_AS(read_chakra_files(empty.path.string()),
                       doctest::Contains("no Chakra rank files"), InputError);
}
