#include "traces/chakra_files.hpp"

#include <charconv>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/json_fields.hpp"

namespace meshsim {
namespace {

namespace fs = std::filesystem;

// "<prefix>.<rank>.et" -> rank; nullopt for other names.
std::optional<int> rank_of(const std::string& name, std::string& prefix) {
  if (!name.ends_with(".et")) return std::nullopt;
  const std::string stem = name.substr(0, name.size() - 3);
  const std::size_t dot = stem.rfind('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == stem.size()) return std::nullopt;
  int rank = -1;
  const char* first = stem.data() + dot + 1;
  const char* last = stem.data() + stem.size();
  const auto [end, ec] = std::from_chars(first, last, rank);
  if (ec != std::errc() || end != last || rank < 0 || (*first == '0' && last - first > 1)) {
    return std::nullopt;
  }
  prefix = stem.substr(0, dot);
  return rank;
}

}  // namespace

std::string chakra_rank_path(const std::string& dir, const std::string& prefix, int rank) {
  return (fs::path(dir) / fmt::format("{}.{}.et", prefix, rank)).string();
}

ChakraInput read_chakra_files(const std::string& path) {
  std::error_code ec;
  const bool is_dir = fs::is_directory(path, ec);
  const fs::path dir = is_dir ? fs::path(path) : fs::path(path).parent_path();
  const std::string want = is_dir ? "" : fs::path(path).filename().string();
  const std::string shown = dir.empty() ? "." : dir.string();
  if (!fs::is_directory(dir.empty() ? fs::path(".") : dir, ec)) {
    throw InputError(fmt::format("--chakra {}: no such folder", path));
  }
  std::map<std::string, std::set<int>> by_prefix;
  for (const auto& e : fs::directory_iterator(dir.empty() ? fs::path(".") : dir, ec)) {
    std::string prefix;
    const auto rank = rank_of(e.path().filename().string(), prefix);
    if (rank && (want.empty() || prefix == want)) by_prefix[prefix].insert(*rank);
  }
  if (by_prefix.empty()) {
    throw InputError(fmt::format("--chakra {}: no Chakra rank files ({}.<rank>.et) in {}", path,
                                 want.empty() ? "<prefix>" : want, shown));
  }
  if (by_prefix.size() > 1) {
    std::string names;
    for (const auto& [p, r] : by_prefix) names += (names.empty() ? "" : ", ") + p;
    throw InputError(
        fmt::format("--chakra {}: rank files of several traces ({}); give the path prefix of one",
                    path, names));
  }
  const auto& [prefix, ranks] = *by_prefix.begin();
  ChakraInput input;
  const int highest = *ranks.rbegin();
  for (int r = 0; r <= highest; ++r) {
    const std::string file = chakra_rank_path(dir.string(), prefix, r);
    if (!ranks.contains(r)) {
      throw InputError(
          fmt::format("--chakra {}: rank {}'s file {} is missing (ranks 0 to {} "
                      "expected)",
                      path, r, file, highest));
    }
    input.ranks.push_back(ChakraRankFile{file, read_text_file(file)});
  }
  const fs::path groups = dir / kChakraCommGroupFile;
  if (fs::exists(groups, ec)) {
    input.comm_groups_origin = groups.string();
    input.comm_groups = read_text_file(input.comm_groups_origin);
  }
  return input;
}

}  // namespace meshsim
