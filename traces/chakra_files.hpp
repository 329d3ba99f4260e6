#pragma once
// Chakra traces on disk, named as ASTRA-sim's --workload-configuration expects them:
// <prefix>.<rank>.et, one per rank, in one folder; the process groups in comm_group.json beside
// them (ASTRA-sim's --comm-group-configuration format: {"<pg_name>": [ranks...]}).
#include <string>

#include "traces/chakra_reader.hpp"

namespace meshsim {

inline constexpr const char* kChakraCommGroupFile = "comm_group.json";

std::string chakra_rank_path(const std::string& dir, const std::string& prefix, int rank);

// Reads `path`: a folder holding the files of one prefix, or a path prefix (folder/prefix) as
// ASTRA-sim takes it. InputError naming the folder when no rank file is there, when several
// prefixes are, and naming the first missing rank's file when ranks 0 .. highest are not all there.
ChakraInput read_chakra_files(const std::string& path);

}  // namespace meshsim
