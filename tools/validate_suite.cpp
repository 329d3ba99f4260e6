#include "tools/validate_suite.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "schedules/training_step.hpp"
#include "tools/cli_args.hpp"
#include "tools/workload_flags.hpp"
#include "validate/check/workload_registry.hpp"
#include "validate/run/microbench_stats.hpp"
#include "validate/run/robust_stats.hpp"

namespace meshsim {
namespace {

std::vector<std::string> split(const std::string& flags) {
  std::istringstream in(flags);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// A configuration given by a validation's own flags: parsed exactly as `meshsim validate` would.
SuiteConfig workload_config(std::string name, std::string workload, std::string flags,
                            int ranks_per_node) {
  auto parse = [workload, flags, ranks_per_node]() {
    const WorkloadFlags& table = workload_flags(workload);
    const Args args("validate " + workload, table.specs(FlagUse::validate), split(flags));
    return table.parse(args, ranks_per_node, FlagUse::validate);
  };
  SuiteConfig c;
  c.name = std::move(name);
  c.command = fmt::format("meshsim validate {} {}", workload, flags);
  c.build = [parse] { return build_program(parse()); };
  c.layout = [parse] { return tensor_layout(parse()); };
  return c;
}

// The small dense transformers of the training-step configurations.
struct TinyModel {
  std::int64_t hidden, heads, ffn, seq, gbs;
};

// A small dense transformer (2 layers per rank, SwiGLU, vocabulary 2048) on a pipeline over every
// rank, gbs microbatches of one seq-token sequence, nothing folded.
SuiteConfig step_config(std::string name, TinyModel t, int ranks, int ranks_per_node) {
  TransformerModel m;
  m.name = "suite-tiny";
  m.layers = 2 * ranks;
  m.hidden = t.hidden;
  m.heads = t.heads;
  m.kv_heads = t.heads;
  m.ffn_hidden = t.ffn;
  m.vocab = 2048;
  m.seq_len = t.seq;
  StepPlan plan;
  plan.pp = ranks;
  plan.microbatch_size = 1;
  plan.global_batch = t.gbs;
  plan.seq = t.seq;
  plan.fold_dp = false;
  plan.fold_tp = false;
  SuiteConfig c;
  c.name = std::move(name);
  c.command = fmt::format(
      "meshsim step (model: {} layers, hidden {}, {} heads, ffn {}, vocab 2048; --pp {} --seq "
      "{} --gbs {} --mbs 1 --no-fold) run with validate program",
      m.layers, t.hidden, t.heads, t.ffn, ranks, t.seq, t.gbs);
  c.build = [m, plan, ranks_per_node] {
    check_step_plan(m, plan);
    HardwareProfile hw = *builtin_hardware("h100-sxm");
    hw.gpus_per_node = ranks_per_node;
    return build_training_step(m, plan, hw.gpus_per_node);
  };
  return c;
}

struct Case {
  const char* name;
  const char* workload;
  const char* ranks_flag;  // set to the world size
  const char* flags;
  const char* shape;
};

void add_cases(std::vector<SuiteConfig>& out, std::span<const Case> cases, SuiteSet set, int ranks,
               int ranks_per_node) {
  for (const auto& c : cases) {
    out.push_back(workload_config(c.name, c.workload,
                                  fmt::format("{} {} {} {}", c.ranks_flag, ranks, c.flags, c.shape),
                                  ranks_per_node));
    out.back().set = set;
  }
}

}  // namespace

std::vector<SuiteConfig> suite_configs(int ranks, int ranks_per_node) {
  const char* attn = "--seq 4096 --heads 4 --kv-heads 2 --head-dim 64 --dtype bf16";
  const char* tp = "--tokens 1024 --in 1024 --out 2048 --dtype bf16";
  const char* pipe = "--microbatches 8 --tokens 256 --hidden 512 --dtype bf16";
  const Case development[] = {
      {"ring attention, ring", "ring-attention", "--cp", "--variant ring", attn},
      {"ring attention, zigzag", "ring-attention", "--cp", "--variant zigzag", attn},
      {"ring attention, all-gather", "ring-attention", "--cp",
       "--variant zigzag --rotate allgather", attn},
      {"tp linear, column + all-reduce", "tp-linear", "--tp", "--kind column --mode allreduce", tp},
      {"tp linear, row + reduce-scatter", "tp-linear", "--tp", "--kind row --mode reducescatter",
       tp},
      {"pipeline, 1f1b", "pipeline", "--stages", "--schedule 1f1b", pipe},
      {"pipeline, interleaved", "pipeline", "--stages", "--schedule interleaved", pipe},
  };
  // Other sizes, dtypes and variants of the same workloads (the ring case is issue 18's held-out
  // ring attention); the sequences divide by 2 x ranks and the features by ranks for 2 and 4.
  const Case holdout[] = {
      {"hold-out: ring attention, zigzag fp32", "ring-attention", "--cp", "--variant zigzag",
       "--seq 3072 --heads 6 --kv-heads 2 --head-dim 64 --dtype fp32"},
      {"hold-out: tp linear, column + r-s", "tp-linear", "--tp",
       "--kind column --mode reducescatter", "--tokens 768 --in 1536 --out 1024 --dtype fp32"},
      {"hold-out: pipeline, zb-h1", "pipeline", "--stages", "--schedule zb-h1",
       "--microbatches 6 --tokens 384 --hidden 384 --dtype bf16"},
  };
  std::vector<SuiteConfig> out;
  add_cases(out, development, SuiteSet::development, ranks, ranks_per_node);
  out.push_back(
      step_config("training step, pipeline 1f1b", {256, 4, 704, 256, 4}, ranks, ranks_per_node));
  add_cases(out, holdout, SuiteSet::holdout, ranks, ranks_per_node);
  out.push_back(
      step_config("hold-out: training step, h384", {384, 6, 1024, 192, 6}, ranks, ranks_per_node));
  out.back().set = SuiteSet::holdout;
  return out;
}

std::size_t SuiteResult::count(SuiteSet set) const {
  std::size_t n = 0;
  for (const auto& r : rows) n += r.set == set ? 1 : 0;
  return n;
}

double SuiteResult::mape(SuiteSet set) const {
  double sum = 0;
  for (const auto& r : rows) sum += r.set == set ? std::abs(r.error()) : 0.0;
  const std::size_t n = count(set);
  return n == 0 ? 0 : sum / static_cast<double>(n);
}

StabilityVerdict suite_machine_verdict(const SuiteResult& result, StabilityVerdict probe) {
  std::size_t timed = 0, disturbed = 0;
  bool enough = true;
  for (const auto& row : result.rows) {
    timed += row.steady ? row.measured_runs_s.size() + row.discarded_runs_s.size()
                        : row.measured_runs_s.size();
    disturbed += row.discarded_runs_s.size();
    enough = enough && row.steady && row.repeats() >= result.runs;
  }
  probe.stable = enough && probe.spread <= kMaxSpread;
  probe.summary = fmt::format(
      "{} of {} timed runs between steady readings, {} beside a reference reading over {:.0f} % "
      "slower than its fastest, {} extra round{}; {}",
      timed - disturbed, timed, disturbed, 100 * kMaxDrift, result.extra_rounds,
      result.extra_rounds == 1 ? "" : "s", probe.summary);
  return probe;
}

void summarize_runs(SuiteRow& row) {
  const RobustSummary s = summarize(row.measured_runs_s, MeasurementKind::throughput);
  row.measured_s = s.estimate;
  row.measured_p10_s = s.p10;
  row.measured_p90_s = s.p90;
}

std::vector<double> SuiteResult::round_mapes(SuiteSet set) const {
  const std::size_t n = count(set);
  std::size_t rounds = n == 0 ? 0 : std::numeric_limits<std::size_t>::max();
  for (const auto& r : rows) {
    if (r.set == set) rounds = std::min(rounds, r.measured_runs_s.size());
  }
  std::vector<double> out;
  for (std::size_t k = 0; k < rounds; ++k) {
    double sum = 0;
    for (const auto& r : rows) {
      if (r.set != set) continue;
      const double m = r.measured_runs_s[k];
      sum += std::abs((r.predicted_s - m) / m);
    }
    out.push_back(sum / static_cast<double>(n));
  }
  return out;
}

double SuiteResult::mape_p10(SuiteSet set) const {
  std::vector<double> m = round_mapes(set);
  std::sort(m.begin(), m.end());
  return nearest_rank_percentile(m, 0.1);
}

double SuiteResult::mape_p90(SuiteSet set) const {
  std::vector<double> m = round_mapes(set);
  std::sort(m.begin(), m.end());
  return nearest_rank_percentile(m, 0.9);
}

double SuiteResult::worst_error(SuiteSet set) const {
  double w = 0;
  for (const auto& r : rows) {
    if (r.set == set) w = std::max(w, std::abs(r.error()));
  }
  return w;
}

namespace {

std::string_view set_name(SuiteSet set) {
  return set == SuiteSet::development ? "development" : "hold-out";
}

std::string rows_text(const SuiteResult& r, SuiteSet set) {
  std::string out;
  for (const auto& row : r.rows) {
    if (row.set != set) continue;
    const std::string range =
        fmt::format("{:+.1f}..{:+.1f}%", 100 * row.error_p10(), 100 * row.error_p90());
    const std::string runs =
        row.steady ? fmt::format("{}/{}", row.measured_runs_s.size(),
                                 row.measured_runs_s.size() + row.discarded_runs_s.size())
                   : fmt::format("{} unsteady", row.measured_runs_s.size());
    out +=
        fmt::format("{:<44} {:>12.3f} {:>12.3f} {:>9.3f}-{:<9.3f} {:>+7.1f}% {:>17} {:>10}\n",
                    row.name, row.predicted_s * 1e3, row.measured_s * 1e3, row.measured_p10_s * 1e3,
                    row.measured_p90_s * 1e3, 100 * row.error(), range, runs);
  }
  if (r.count(set) > 0) {
    out += fmt::format(
        "{} set: mean absolute percentage error {:.1f}% (per round p10-p90 {:.1f}-{:.1f}%, {} "
        "rounds), worst {:.1f}%\n",
        set_name(set), 100 * r.mape(set), 100 * r.mape_p10(set), 100 * r.mape_p90(set),
        r.round_mapes(set).size(), 100 * r.worst_error(set));
  }
  return out;
}

nlohmann::ordered_json set_json(const SuiteResult& r, SuiteSet set) {
  nlohmann::ordered_json j;
  j["configurations"] = r.count(set);
  j["mape"] = r.mape(set);
  j["mape_p10"] = r.mape_p10(set);
  j["mape_p90"] = r.mape_p90(set);
  j["worst_abs_error"] = r.worst_error(set);
  return j;
}

}  // namespace

std::string suite_text(const SuiteResult& r) {
  std::string out = fmt::format(
      "validation suite: {} ranks, hardware profile {}; measured: median of the timed runs kept "
      "per configuration (p10-p90 beside it; kept/timed: a run is kept when the reference "
      "kernel read within {:.0f} % of its fastest on both sides of it; {} wanted), after a "
      "warm-up round, the configurations interleaved\n",
      r.ranks, r.hardware, 100 * kMaxDrift, r.runs);
  out += fmt::format("{:<44} {:>12} {:>12} {:>19} {:>8} {:>17} {:>10}\n", "configuration",
                     "predicted ms", "measured ms", "p10-p90 ms", "error", "p10-p90", "kept");
  out += rows_text(r, SuiteSet::development);
  out += rows_text(r, SuiteSet::holdout);
  if (r.machine) {
    out += fmt::format("machine during the runs: {} ({}){}\n",
                       r.machine->stable ? "steady" : "NOT STEADY", r.machine->summary,
                       r.machine->stable ? ""
                                         : "; the figures above measure the load as much as "
                                           "the model");
  }
  return out;
}

nlohmann::ordered_json suite_json(const SuiteResult& r) {
  nlohmann::ordered_json j;
  j["hardware"] = r.hardware;
  j["ranks"] = r.ranks;
  j["runs"] = r.runs;
  auto& rows = j["configurations"] = nlohmann::ordered_json::array();
  for (const auto& row : r.rows) {
    rows.push_back({{"name", row.name},
                    {"set", set_name(row.set)},
                    {"command", row.command},
                    {"predicted_s", row.predicted_s},
                    {"measured_s", row.measured_s},
                    {"measured_s_p10", row.measured_p10_s},
                    {"measured_s_p90", row.measured_p90_s},
                    {"repeats", row.repeats()},
                    {"measured_runs_s", row.measured_runs_s},
                    {"discarded_runs_s", row.discarded_runs_s},
                    {"steady", row.steady},
                    {"error", row.error()},
                    {"error_p10", row.error_p10()},
                    {"error_p90", row.error_p90()}});
  }
  j["estimator"] = "median";
  j["mape"] = r.mape();
  j["mape_p10"] = r.mape_p10();
  j["mape_p90"] = r.mape_p90();
  j["worst_abs_error"] = r.worst_error();
  j["holdout"] = set_json(r, SuiteSet::holdout);
  if (r.machine) {
    j["machine"] = {{"stable", r.machine->stable},    {"drift", r.machine->drift},
                    {"spread", r.machine->spread},    {"max_load_1min", r.machine->max_load},
                    {"extra_rounds", r.extra_rounds}, {"summary", r.machine->summary}};
  }
  return j;
}

}  // namespace meshsim
