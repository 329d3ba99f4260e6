#include "tools/memory_limit.hpp"

#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

constexpr std::int64_t kNoLimit = std::numeric_limits<std::int64_t>::max();

std::string breakdown(const RankMemoryEstimate& e) {
  std::string out = fmt::format("rank {}: tensor slots {}, communication scratch {}", e.rank,
                                format_bytes(e.slots), format_bytes(e.comm));
  if (e.kernels > 0) out += fmt::format(", kernel scratch {}", format_bytes(e.kernels));
  if (e.gather > 0)
    out += fmt::format(", gathered tensors and reference {}", format_bytes(e.gather));
  return out;
}

std::string limit_text(const MemoryLimit& limit) {
  if (limit.bytes == kNoLimit) return fmt::format("no limit ({})", limit.source);
  return fmt::format("{} ({})", format_bytes(limit.bytes), limit.source);
}

}  // namespace

std::optional<std::int64_t> meminfo_available_bytes(std::string_view meminfo) {
  std::istringstream in{std::string(meminfo)};
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("MemAvailable:")) continue;
    std::istringstream fields(line.substr(13));
    std::int64_t kb = -1;
    std::string unit;
    if (!(fields >> kb >> unit) || kb < 0 || unit != "kB") return std::nullopt;
    return kb * 1024;
  }
  return std::nullopt;
}

std::int64_t parse_memory_size(std::string_view text, std::string_view flag) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  if (unit == "kB" || unit == "KB") scale = 1e3;
  if (unit == "MB") scale = 1e6;
  if (unit == "GB") scale = 1e9;
  if (unit == "TB") scale = 1e12;
  const double bytes = value * scale;
  if (ec != std::errc() || scale == 0 || !(value > 0) || !std::isfinite(bytes) || bytes >= 9e18) {
    throw InputError(fmt::format(
        "{}: expected a positive size in bytes or with a unit (512MB, 2GB), got '{}'", flag, text));
  }
  return static_cast<std::int64_t>(bytes);
}

MemoryLimit default_memory_limit(std::int64_t available, int ranks_on_node) {
  const int ranks = ranks_on_node > 0 ? ranks_on_node : 1;
  MemoryLimit m;
  m.bytes =
      static_cast<std::int64_t>(kDefaultMemoryFraction * static_cast<double>(available)) / ranks;
  m.source = fmt::format(
      "--max-memory; default {:.0f} % of the {} available / {} rank{} on this node",
      100 * kDefaultMemoryFraction, format_bytes(available), ranks, ranks == 1 ? "" : "s");
  return m;
}

MemoryLimit memory_limit(const Args& args, int ranks_on_node) {
  if (args.has("--max-memory")) {
    return {parse_memory_size(args.get("--max-memory", ""), "--max-memory"), "--max-memory"};
  }
  std::ifstream in("/proc/meminfo");
  std::stringstream text;
  text << in.rdbuf();
  if (const auto available = meminfo_available_bytes(text.str())) {
    return default_memory_limit(*available, ranks_on_node);
  }
  return {kNoLimit, "--max-memory; /proc/meminfo unreadable"};
}

OptionSpec max_memory_option() {
  return {"--max-memory", "BYTES|NGB",
          "refuse to run when the estimated memory per rank exceeds this (4096, 512MB, 2GB) "
          "[half of MemAvailable / ranks on this node]"};
}

void check_memory(const RankMemoryEstimate& estimate, const MemoryLimit& limit,
                  std::string_view what) {
  if (estimate.total() <= limit.bytes) return;
  throw InputError(
      fmt::format("{} needs about {} per rank ({}) but the limit is {}: use smaller sizes or raise "
                  "--max-memory",
                  what, format_bytes(estimate.total()), breakdown(estimate), limit_text(limit)));
}

std::string memory_line(const RankMemoryEstimate& estimate, const MemoryLimit& limit) {
  return fmt::format("memory: about {} per rank estimated ({}), limit {}\n",
                     format_bytes(estimate.total()), breakdown(estimate), limit_text(limit));
}

}  // namespace meshsim
