#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/error.hpp"
#include "tools/output_file.hpp"

using namespace meshsim;
namespace fs = std::filesystem;

TEST_CASE("the file appears whole, replacing an older one, with no temporary left") {
  const fs::path dir = fs::temp_directory_path() / "meshsim_output_file_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "out.json").string();
  write_file_atomically(path, "old", "--trace");
  write_file_atomically(path, "{\"new\": true}\n", "--trace");
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == "{\"new\": true}\n");
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  CHECK(files == 1);
  fs::remove_all(dir);
}

TEST_CASE("an unwritable path is an InputError naming the flag, and leaves nothing") {
  const std::string path = "/nonexistent-dir/for/sure/out.json";
  try {
    write_file_atomically(path, "x", "--trace");
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) ==
          "--trace /nonexistent-dir/for/sure/out.json: cannot write the file");
  }
  CHECK_FALSE(fs::exists(path));
}

TEST_CASE("staged outputs appear together on commit, and not at all without it") {
  const fs::path dir = fs::temp_directory_path() / "meshsim_output_files_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string a = (dir / "a.json").string();
  const std::string b = (dir / "b.svg").string();
  {
    OutputFiles files;
    files.stage(a, "A", "--save-program");
    files.stage(b, "B", "--diagram");
    CHECK_FALSE(fs::exists(a));  // staged, not yet in place
  }                              // dropped without commit: a later step failed
  CHECK_FALSE(fs::exists(a));
  CHECK_FALSE(fs::exists(b));
  CHECK(fs::is_empty(dir));  // no temporary left
  {
    OutputFiles files;
    files.stage(a, "A", "--save-program");
    files.stage(b, "B", "--diagram");
    files.commit();
  }
  CHECK(fs::file_size(a) == 1);
  CHECK(fs::file_size(b) == 1);
  fs::remove_all(dir);
}
