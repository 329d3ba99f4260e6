#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/error.hpp"
#include "tools/output_file.hpp"
#include "tools/temp_files.hpp"

using namespace meshsim;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const char* name) {
  const fs::path dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int entries(const fs::path& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

std::string error_of(const auto& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("the file appears whole, replacing an older one, with no temporary left") {
  const fs::path dir = fresh_dir("meshsim_output_file_test");
  const std::string path = (dir / "out.json").string();
  write_file_atomically(path, "old", "--trace");
  write_file_atomically(path, "{\"new\": true}\n", "--trace");
  CHECK(read_all(path) == "{\"new\": true}\n");
  CHECK(entries(dir) == 1);
  CHECK(registered_temporaries() == 0);
  fs::remove_all(dir);
}

TEST_CASE(
    "an unwritable path is an InputError naming the flag and the reason, and leaves nothing") {
  const std::string path = "/nonexistent-dir/for/sure/out.json";
  CHECK(error_of([&] { write_file_atomically(path, "x", "--trace"); }) ==
        "--trace /nonexistent-dir/for/sure/out.json: cannot write the file: No such file or "
        "directory");
  CHECK(error_of([&] { check_output_path(path, "--trace"); }) ==
        "--trace /nonexistent-dir/for/sure/out.json: the folder /nonexistent-dir/for/sure does "
        "not exist");
  CHECK_FALSE(fs::exists(path));
}

TEST_CASE("output paths are checked before any work: folder, file in place of a folder, '-'") {
  const fs::path dir = fresh_dir("meshsim_output_check_test");
  std::ofstream(dir / "plain") << "x";
  const std::string under_file = (dir / "plain" / "t.json").string();
  CHECK(error_of([&] { check_output_path(under_file, "--trace"); }) ==
        "--trace " + under_file + ": " + (dir / "plain").string() + " is not a folder");
  CHECK(error_of([&] { check_output_path(dir.string(), "--out"); }) ==
        "--out " + dir.string() + ": is a folder, expected a file name");
  CHECK(error_of([&] { check_output_path("-", "--trace"); }) == "no error");
  CHECK(error_of([&] { check_output_path((dir / "new.json").string(), "--trace"); }) == "no error");
  // --dump DIR: created with its parents under an existing folder, never under a file.
  CHECK(error_of([&] { check_output_dir((dir / "a" / "b").string(), "--dump"); }) == "no error");
  CHECK(error_of([&] { check_output_dir((dir / "plain" / "b").string(), "--dump"); }) ==
        "--dump " + (dir / "plain" / "b").string() + ": " + (dir / "plain").string() +
            " is not a folder");
  fs::remove_all(dir);
}

TEST_CASE("a symlink is followed: its target is written and the link stays a link") {
  const fs::path dir = fresh_dir("meshsim_output_symlink_test");
  std::ofstream(dir / "real.json") << "old";
  fs::create_symlink("real.json", dir / "link.json");
  fs::create_symlink("later.json", dir / "dangling.json");
  write_file_atomically((dir / "link.json").string(), "new", "--trace");
  write_file_atomically((dir / "dangling.json").string(), "made", "--trace");
  CHECK(fs::is_symlink(dir / "link.json"));
  CHECK(read_all(dir / "real.json") == "new");
  CHECK(fs::is_symlink(dir / "dangling.json"));
  CHECK(read_all(dir / "later.json") == "made");
  CHECK(entries(dir) == 4);  // no temporary left
  fs::remove_all(dir);
}

TEST_CASE("a FIFO is written in place, not replaced by a regular file") {
  const fs::path dir = fresh_dir("meshsim_output_fifo_test");
  const fs::path fifo = dir / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string got;
  std::thread reader([&] { got = read_all(fifo); });  // open blocks until the writer opens
  write_file_atomically(fifo.string(), "through the pipe", "--trace");
  reader.join();
  CHECK(got == "through the pipe");
  CHECK(fs::is_fifo(fifo));
  CHECK(entries(dir) == 1);
  fs::remove_all(dir);
}

TEST_CASE("a device is written in place and its write error is reported with the reason") {
  // /dev/full accepts open(2) and fails every write(2) with ENOSPC (Linux null(4) man page).
  REQUIRE(fs::is_character_file("/dev/full"));
  CHECK(error_of([] { write_file_atomically("/dev/full", "x", "--trace"); }) ==
        "--trace /dev/full: cannot write the file: No space left on device");
  CHECK(fs::is_character_file("/dev/full"));
}

TEST_CASE("staged outputs appear together on commit, and not at all without it") {
  const fs::path dir = fresh_dir("meshsim_output_files_test");
  const std::string a = (dir / "a.json").string();
  const std::string b = (dir / "b.svg").string();
  {
    OutputFiles files;
    files.stage(a, "A", "--save-program");
    files.stage(b, "B", "--diagram");
    CHECK_FALSE(fs::exists(a));  // staged, not yet in place
    CHECK(registered_temporaries() == 2);
  }  // dropped without commit: a later step failed
  CHECK_FALSE(fs::exists(a));
  CHECK_FALSE(fs::exists(b));
  CHECK(fs::is_empty(dir));  // no temporary left
  CHECK(registered_temporaries() == 0);
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

TEST_CASE("a staged temporary is removed when SIGINT or SIGTERM ends the process") {
  for (int sig : {SIGINT, SIGTERM}) {
    const fs::path dir = fresh_dir("meshsim_output_signal_test");
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      std::signal(sig, SIG_DFL);  // as in meshsim itself (the test framework catches signals)
      OutputFiles files;
      files.stage((dir / "t.json").string(), "partial", "--trace");
      ::kill(::getpid(), sig);
      ::_exit(0);  // not reached: the handler ends the process by the signal
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
    CHECK(fs::is_empty(dir));
    fs::remove_all(dir);
  }
}
