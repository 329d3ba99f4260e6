#pragma once
// Is the machine quiet enough to calibrate on? (ARCHITECTURE.md §5) A calibration fitted while
// another job competes for the cores fits that job's noise: the profile then differs from run to
// run and every prediction built on it moves with the load. So a reference kernel is timed on
// every rank at checkpoints — before the first microbenchmark, between the categories and after
// the last — and the 1-minute load average is read beside it. The verdict:
//   drift   the largest over the smallest checkpoint median of the reference kernel, minus 1:
//           the machine's speed changed while the microbenchmarks ran;
//   spread  the largest p90 / p10 - 1 of one checkpoint's repeats (every rank's pooled): the
//           machine's speed was not steady even within a fraction of a second.
// Unstable when either exceeds its threshold. kMaxDrift = 10 %: the quantity calibration feeds
// (a compute efficiency) must be right within a few percent for a 10 % MAPE, and a competing
// process on one of two cores slows a single-threaded GEMM by well over 10 % when it lands on
// its core. kMaxSpread = 25 %: a 512^3 GEMM of a few ms on an idle core is expected to repeat
// within a few percent (not yet measured on a quiet machine: the development machine was shared),
// while a time slice lost to another process (several ms on Linux' CFS) shows as tens of percent
// (measured: 2.6 against 6.6 ms under other builds, README). The load average does not decide (it
// includes our own ranks and lags by a minute); it is reported so that a refusal names what was
// running.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace meshsim {

inline constexpr double kMaxDrift = 0.10;
inline constexpr double kMaxSpread = 0.25;

struct StabilityCheckpoint {
  std::string phase;                // "start", "after compute", ...
  std::vector<double> reference_s;  // every repeat of the reference kernel on every rank
  double load_1min = -1;            // /proc/loadavg's first field; < 0 unknown
};

struct StabilityVerdict {
  bool stable = true;
  double drift = 0;
  double spread = 0;
  double max_load = -1;  // the highest 1-minute load average seen; < 0 unknown
  std::string summary;   // one line: the figures, their limits and the load
};

// The verdict on checkpoints (at least one, each with repeats); `cores` online cores and
// `ranks_on_node` of our own ranks on this node, for the summary.
StabilityVerdict judge_stability(const std::vector<StabilityCheckpoint>& checkpoints, int cores,
                                 int ranks_on_node);

// The one-line refusal when the last of `attempts` calibrations was not steady and --force was
// not given (the command then exits 5 and writes nothing); nullopt when the profile is written.
std::optional<std::string> stability_refusal(const StabilityVerdict& verdict, int attempts,
                                             bool force);

// The 1-minute load average of /proc/loadavg's text; nullopt when malformed.
std::optional<double> parse_loadavg(std::string_view text);

nlohmann::ordered_json stability_json(const std::vector<StabilityCheckpoint>& checkpoints,
                                      const StabilityVerdict& verdict);

}  // namespace meshsim
