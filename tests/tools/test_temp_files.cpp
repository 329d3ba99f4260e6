#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <sys/wait.h>
#include <unistd.h>

#include "tools/temp_files.hpp"

using namespace meshsim;
namespace fs = std::filesystem;

TEST_CASE("registered temporaries are counted until unregistered") {
  const int before = registered_temporaries();
  register_temporary("/tmp/meshsim-a.tmp.1");
  register_temporary("/tmp/meshsim-b.tmp.1");
  CHECK(registered_temporaries() == before + 2);
  unregister_temporary("/tmp/meshsim-a.tmp.1");
  unregister_temporary("/tmp/meshsim-never-registered");
  CHECK(registered_temporaries() == before + 1);
  unregister_temporary("/tmp/meshsim-b.tmp.1");
  CHECK(registered_temporaries() == before);
}

TEST_CASE("a registered temporary is removed when the process exits without removing it") {
  const fs::path path = fs::temp_directory_path() / "meshsim_temp_files_exit.tmp";
  fs::remove(path);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::ofstream(path) << "x";
    register_temporary(path.string());
    std::exit(0);  // atexit handlers run, destructors of locals do not
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK_FALSE(fs::exists(path));
}
