#include <doctest/doctest.h>

#include <string>

#include "sim/error.hpp"
#include "tools/memory_limit.hpp"

using namespace meshsim;

TEST_CASE("memory limit: MemAvailable is read from /proc/meminfo's text, in bytes") {
  const std::string meminfo =
      "MemTotal:       24000000 kB\nMemFree:        18000000 kB\n"
      "MemAvailable:   22000000 kB\nBuffers:          100 kB\n";
  CHECK(meminfo_available_bytes(meminfo) == std::int64_t{22000000} * 1024);
  CHECK_FALSE(meminfo_available_bytes("MemTotal: 5 kB\n").has_value());
  CHECK_FALSE(meminfo_available_bytes("MemAvailable: lots\n").has_value());
}

TEST_CASE("memory limit: sizes in bytes or with a decimal unit") {
  CHECK(parse_memory_size("4096", "--max-memory") == 4096);
  CHECK(parse_memory_size("512MB", "--max-memory") == 512'000'000);
  CHECK(parse_memory_size("2.5GB", "--max-memory") == 2'500'000'000);
  for (const char* bad : {"", "0", "-1GB", "2XB", "GB", "1e30"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(parse_memory_size(bad, "--max-memory"), doctest::Contains("--max-memory"),
                         InputError);
  }
}

TEST_CASE("memory limit: the default is half the available memory shared by the node's ranks") {
  // 0.5 x 8 GB / 4 ranks = 1 GB per rank.
  const MemoryLimit m = default_memory_limit(8'000'000'000, 4);
  CHECK(m.bytes == 1'000'000'000);
  CHECK(m.source.find("--max-memory") != std::string::npos);
  CHECK(m.source.find("4 ranks") != std::string::npos);
}

TEST_CASE("memory limit: over the limit is one line naming estimate, limit and flag") {
  RankMemoryEstimate e;
  e.slots = 6'000'000'000;
  e.comm = 1'200'000'000;
  const MemoryLimit limit{2'000'000'000, "--max-memory"};
  CHECK_THROWS_WITH_AS(check_memory(e, limit, "validate pipeline"),
                       "validate pipeline needs about 7.20 GB per rank (rank 0: tensor slots "
                       "6.00 GB, communication scratch 1.20 GB) but the limit is 2.00 GB "
                       "(--max-memory): use smaller sizes or raise --max-memory",
                       InputError);
  const MemoryLimit enough{7'200'000'000, "--max-memory"};
  CHECK_NOTHROW(check_memory(e, enough, "validate pipeline"));  // equal to the limit fits
}
