#include "tools/validate_suite.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "schedules/training_step.hpp"
#include "tools/cli_args.hpp"
#include "tools/workload_flags.hpp"
#include "validate/check/workload_registry.hpp"

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

// A small dense transformer (2 layers per rank, hidden 256, 4 heads, SwiGLU 704, vocabulary 2048)
// on a pipeline over every rank, 4 microbatches of one 256-token sequence, nothing folded.
SuiteConfig step_config(int ranks, int ranks_per_node) {
  TransformerModel m;
  m.name = "suite-tiny";
  m.layers = 2 * ranks;
  m.hidden = 256;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn_hidden = 704;
  m.vocab = 2048;
  m.seq_len = 256;
  StepPlan plan;
  plan.pp = ranks;
  plan.microbatch_size = 1;
  plan.global_batch = 4;
  plan.seq = 256;
  plan.fold_dp = false;
  plan.fold_tp = false;
  SuiteConfig c;
  c.name = "training step, pipeline 1f1b";
  c.command = fmt::format(
      "meshsim step (model: {} layers, hidden 256, 4 heads, ffn 704, vocab 2048; --pp {} --seq "
      "256 --gbs 4 --mbs 1 --no-fold) run with validate program",
      m.layers, ranks);
  c.build = [m, plan, ranks_per_node] {
    check_step_plan(m, plan);
    HardwareProfile hw = *builtin_hardware("h100-sxm");
    hw.gpus_per_node = ranks_per_node;
    return build_training_step(m, plan, hw.gpus_per_node);
  };
  return c;
}

}  // namespace

std::vector<SuiteConfig> suite_configs(int ranks, int ranks_per_node) {
  const char* attn = "--seq 4096 --heads 4 --kv-heads 2 --head-dim 64 --dtype bf16";
  const char* tp = "--tokens 1024 --in 1024 --out 2048 --dtype bf16";
  const char* pipe = "--microbatches 8 --tokens 256 --hidden 512 --dtype bf16";
  struct Case {
    const char* name;
    const char* workload;
    const char* ranks_flag;  // set to the world size
    const char* flags;
    const char* shape;
  };
  const Case cases[] = {
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
  std::vector<SuiteConfig> out;
  for (const auto& c : cases) {
    out.push_back(workload_config(c.name, c.workload,
                                  fmt::format("{} {} {} {}", c.ranks_flag, ranks, c.flags, c.shape),
                                  ranks_per_node));
  }
  out.push_back(step_config(ranks, ranks_per_node));
  return out;
}

double SuiteResult::mape() const {
  if (rows.empty()) return 0;
  double sum = 0;
  for (const auto& r : rows) sum += std::abs(r.error());
  return sum / static_cast<double>(rows.size());
}

double SuiteResult::worst_error() const {
  double w = 0;
  for (const auto& r : rows) w = std::max(w, std::abs(r.error()));
  return w;
}

std::string suite_text(const SuiteResult& r) {
  std::string out = fmt::format(
      "validation suite: {} ranks, hardware profile {}, median of {} timed runs after a warm-up\n",
      r.ranks, r.hardware, r.runs);
  out += fmt::format("{:<34} {:>14} {:>14} {:>8}\n", "configuration", "predicted ms", "measured ms",
                     "error");
  for (const auto& row : r.rows) {
    out += fmt::format("{:<34} {:>14.3f} {:>14.3f} {:>+7.1f}%\n", row.name, row.predicted_s * 1e3,
                       row.measured_s * 1e3, 100 * row.error());
  }
  out += fmt::format("mean absolute percentage error {:.1f}%, worst {:.1f}%\n", 100 * r.mape(),
                     100 * r.worst_error());
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
                    {"command", row.command},
                    {"predicted_s", row.predicted_s},
                    {"measured_s", row.measured_s},
                    {"measured_runs_s", row.measured_runs_s},
                    {"error", row.error()}});
  }
  j["mape"] = r.mape();
  j["worst_abs_error"] = r.worst_error();
  return j;
}

}  // namespace meshsim
