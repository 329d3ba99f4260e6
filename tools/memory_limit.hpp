#pragma once
// The memory a validation may use per rank (`--max-memory BYTES|NMB|NGB`), and the refusal of a
// run whose estimate (validate/run/memory_estimate.hpp) exceeds it — before anything is
// allocated, so that a request that cannot fit fails in a second with one line instead of being
// killed minutes later. The default is kDefaultMemoryFraction of the memory Linux reports
// available (/proc/meminfo MemAvailable) shared by the ranks on this node.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tools/cli_args.hpp"
#include "validate/run/memory_estimate.hpp"

namespace meshsim {

// Half the available memory: the rest for MPI, the BLAS, the OS and whatever else runs.
inline constexpr double kDefaultMemoryFraction = 0.5;

struct MemoryLimit {
  std::int64_t bytes = 0;
  std::string source;  // "--max-memory" or how the default was derived
};

// MemAvailable of /proc/meminfo's text, in bytes; nullopt when absent or malformed.
std::optional<std::int64_t> meminfo_available_bytes(std::string_view meminfo);

// "4096", "512MB", "2.5GB" (decimal units; also kB, TB); InputError naming `flag` otherwise.
std::int64_t parse_memory_size(std::string_view text, std::string_view flag);

// The default for `ranks_on_node` ranks sharing `available` bytes.
MemoryLimit default_memory_limit(std::int64_t available, int ranks_on_node);

// --max-memory when given, else the default from /proc/meminfo (no limit when unreadable).
MemoryLimit memory_limit(const Args& args, int ranks_on_node);

OptionSpec max_memory_option();

// InputError "<what> needs about X per rank (...) but the limit is Y (...)" when over the limit.
void check_memory(const RankMemoryEstimate& estimate, const MemoryLimit& limit,
                  std::string_view what);

// "memory: about X per rank estimated (rank r: ...), limit Y (source)".
std::string memory_line(const RankMemoryEstimate& estimate, const MemoryLimit& limit);

}  // namespace meshsim
