#pragma once
// What `meshsim validate` prints: the measured step time and, per rank, compute-busy, comm-busy,
// exposed comm (comm not covered by compute on that rank) and idle time, from the measured
// timeline, the mean exposed comm per mesh dimension (tp, cp, ep, pp, dp: the comm group's, as the
// simulator's step breakdown keys it), and the numerics against the float64 reference — as a table
// or as one schema-versioned JSON object.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/program.hpp"
#include "sim/timeline.hpp"
#include "validate/check/numerics.hpp"

namespace meshsim {

inline constexpr int kValidateReportSchemaVersion = 1;

struct MeasuredRankStats {
  int rank = 0;
  std::int64_t ops = 0;
  Nanos compute = 0;       // union of compute-op intervals
  Nanos comm = 0;          // union of comm-op intervals (dispatch to completion)
  Nanos exposed_comm = 0;  // comm time not covered by compute
  Nanos idle = 0;          // within [0, makespan], neither compute nor comm
  Nanos end = 0;           // the rank's last completion
};

std::vector<MeasuredRankStats> measured_rank_stats(const Program& program,
                                                   const Timeline& timeline);

struct ValidateRunInfo {
  std::string command_line;
  std::string backend;  // "cpu+mpi (Open MPI v4.1.4, MPI_THREAD_MULTIPLE)"
  std::string kernels;  // what ran the compute ops
  std::uint64_t seed = 0;
  std::vector<std::int64_t> memory_bytes;  // per rank: tensor slots + scratch
  std::optional<NumericsReport> numerics;  // empty: not checked
  std::string numerics_note;               // what the reference is, or why there is none
  double wall_s = 0;                       // the whole command on rank 0
};

std::string measured_report_text(const Program& program, const Timeline& timeline,
                                 const ValidateRunInfo& info);
nlohmann::ordered_json measured_report_json(const Program& program, const Timeline& timeline,
                                            const ValidateRunInfo& info);

// The numerics part of both: "numerics against <reference>: PASS|FAIL" and the per-tensor table
// (the tensor column as wide as the longest name, at least 8), or its JSON object.
std::string numerics_text(const NumericsReport& numerics, const std::string& reference);
nlohmann::ordered_json numerics_json(const NumericsReport& numerics, const std::string& reference);

}  // namespace meshsim
