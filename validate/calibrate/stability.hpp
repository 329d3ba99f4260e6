#pragma once
// Is the machine quiet enough to calibrate on? (ARCHITECTURE.md §5) A calibration fitted while
// another job competes for the cores fits that job's noise: the profile then differs from run to
// run and every prediction built on it moves with the load. So a reference kernel is timed on
// every rank at checkpoints — before the first microbenchmark, between the categories and after
// the last — and the 1-minute load average is read beside it. The verdict:
//   drift   the largest over the smallest checkpoint median of the reference kernel, minus 1:
//           the machine's speed changed while the microbenchmarks ran;
//   spread  per checkpoint, the largest over ranks of one rank's interquartile ratio p75 / p25 - 1
//           of its repeats; the verdict takes the median over the checkpoints: the machine's
//           speed was not steady even within a fraction of a second, most of the time.
// Unstable when either exceeds its threshold. kMaxDrift = 10 %: the quantity calibration feeds
// (a compute efficiency) must be right within a few percent for a 10 % MAPE, and a competing
// process on one of two cores slows a single-threaded GEMM by well over 10 % when it lands on
// its core. kMaxSpread = 25 %. Measured on this 2-core machine with 2 processes each timing 20
// repeats of the reference kernel (about 2.7 ms): idle, one rank's p75 / p25 - 1 is 1-5 %, with
// an odd batch up to 45 % (a time slice lost to the system, one or two repeats of 20 at 5-7 ms);
// with a busy loop beside them every batch of both ranks reads 120-155 % (one CFS slice of
// about 4 ms lost in a quarter to a half of the repeats). So the quartiles, not p10 / p90: with
// p90 / p10 pooled over the ranks an idle machine read up to 157 % and was refused three
// attempts in a row. The median over the checkpoints forgives one noisy checkpoint (the
// calibration's own estimators are robust to a lost slice); a load present for most of the
// calibration is refused, and one that starts midway and slows the kernel shows as drift. The
// load average does not decide (it includes our own ranks and lags by a minute); it is reported
// so that a refusal names what was running.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace meshsim {

inline constexpr double kMaxDrift = 0.10;
inline constexpr double kMaxSpread = 0.25;

struct StabilityCheckpoint {
  std::string phase;  // "start", "after compute", ...
  // Per rank, every timed repeat of the reference kernel (s).
  std::vector<std::vector<double>> reference_s;
  double load_1min = -1;  // /proc/loadavg's first field; < 0 unknown
};

struct StabilityVerdict {
  bool stable = true;
  double drift = 0;
  double spread = 0;     // the median over checkpoints of checkpoint_spread
  double max_load = -1;  // the highest 1-minute load average seen; < 0 unknown
  std::string summary;   // one line: the figures, their limits and the load
};

// A checkpoint's reading of the reference kernel: the median of its repeats pooled over the
// ranks (s); InvariantError when it has none.
double reference_reading(const StabilityCheckpoint& checkpoint);

// One checkpoint's spread: the largest over its ranks of p75 / p25 - 1 (nearest rank) of that
// rank's repeats; 0 when no rank has repeats.
double checkpoint_spread(const StabilityCheckpoint& checkpoint);

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
