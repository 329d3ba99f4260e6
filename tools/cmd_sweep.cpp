// meshsim sweep: every valid plan of the given lists on N GPUs, memory first (OOM plans are not
// timed), the rest simulated in parallel (--jobs threads; under mpirun the plans are split over
// the ranks and the rows gathered on rank 0), the ranked top K printed and all rows written.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "schedules/plan_space.hpp"
#include "schedules/precision.hpp"
#include "sim/compute_model.hpp"
#include "sim/error.hpp"
#include "tools/cli_args.hpp"
#include "tools/commands.hpp"
#include "tools/model_flag.hpp"
#include "tools/output_file.hpp"
#include "tools/simulate_outputs.hpp"
#include "tools/simulation.hpp"
#include "tools/sweep.hpp"
#include "tools/sweep_explain.hpp"
#include "tools/sweep_flags.hpp"
#include "validate/mpi/launch_env.hpp"
#include "validate/mpi/mpi_world.hpp"

namespace meshsim {
namespace {

// The rows a rank computed, as JSON text: plan index and results (plans are known everywhere).
std::vector<std::byte> encode_rows(const std::vector<SweepRow>& rows, int offset, int stride) {
  nlohmann::json a = nlohmann::json::array();
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const SweepRow& r = rows[k];
    a.push_back({{"i", static_cast<std::size_t>(offset) + k * static_cast<std::size_t>(stride)},
                 {"oom", r.oom},
                 {"mem_gb", r.mem_gb},
                 {"peak_rank", r.peak_rank},
                 {"timed", r.timed},
                 {"step", r.step_time_s},
                 {"tps", r.tokens_per_s},
                 {"mfu", r.mfu},
                 {"cp", r.critical_path},
                 {"moe", r.moe},
                 {"moe_stats", moe_stats_json(r.moe_stats)}});
  }
  const std::string text = a.dump();
  std::vector<std::byte> out(text.size());
  std::transform(text.begin(), text.end(), out.begin(), [](char c) { return std::byte(c); });
  return out;
}

void decode_rows(const std::vector<std::byte>& bytes, const std::vector<StepPlan>& plans,
                 std::vector<SweepRow>& rows) {
  std::string text(bytes.size(), '\0');
  std::transform(bytes.begin(), bytes.end(), text.begin(), [](std::byte b) { return char(b); });
  for (const auto& j : nlohmann::json::parse(text)) {
    SweepRow& r = rows.at(j["i"].get<std::size_t>());
    r.plan = plans[j["i"].get<std::size_t>()];
    r.gpus = world_size(r.plan);
    r.oom = j["oom"];
    r.mem_gb = j["mem_gb"];
    r.peak_rank = j["peak_rank"];
    r.timed = j["timed"];
    r.step_time_s = j["step"];
    r.tokens_per_s = j["tps"];
    r.mfu = j["mfu"];
    r.critical_path = j["cp"];
    r.moe = j["moe"];
    r.moe_stats = moe_stats_from_json(j["moe_stats"]);
  }
}

// How the sweep runs and what it writes: threads, the rows file, the rows shown, the trace file.
struct SweepOutputs {
  int jobs = 1;
  std::string out_path;
  std::size_t top = 10;
  std::string trace_path;
};

SweepOutputs sweep_outputs(const Args& args) {
  SweepOutputs o;
  const int hardware_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  o.jobs = static_cast<int>(args.get_int("--jobs", hardware_threads, 1, 1024));
  o.out_path = args.get("--out", "");
  if (!o.out_path.empty() && !o.out_path.ends_with(".csv") && !o.out_path.ends_with(".json")) {
    throw InputError(
        fmt::format("--out {}: expected a file name ending in .csv or .json", o.out_path));
  }
  o.top = static_cast<std::size_t>(args.get_int("--top", 10, 1, 1 << 20));
  o.trace_path = args.get("--trace-best", "");
  return o;
}

// Every plan of the space evaluated on `jobs` threads, with a progress bar on a terminal; under
// mpirun the plans are split over the ranks and the rows gathered on rank 0, the other ranks get
// nullopt.
std::optional<std::vector<SweepRow>> evaluate_space(const TransformerModel& model,
                                                    const PlanSpace& space,
                                                    const HardwareProfile& hw, int jobs,
                                                    const LaunchEnv& env, std::ostream& err) {
  const auto progress = progress_bar(err, env.rank == 0 && isatty(STDERR_FILENO) == 1);
  std::vector<SweepRow> rows;
  if (env.under_launcher && env.size > 1) {
    MpiWorld world;
    const std::vector<SweepRow> mine =
        evaluate_plans(model, space.plans, hw, jobs, world.rank(), world.size(), progress);
    const auto gathered = world.gather_bytes(encode_rows(mine, world.rank(), world.size()));
    if (world.rank() != 0) return std::nullopt;
    rows.resize(space.plans.size());
    for (const auto& bytes : gathered) decode_rows(bytes, space.plans, rows);
  } else {
    rows = evaluate_plans(model, space.plans, hw, jobs, 0, 1, progress);
  }
  return rows;
}

// The rows file (--out) and the fastest plan's trace (--trace-best), written together.
void write_sweep_files(const std::vector<SweepRow>& rows, const std::vector<SweepRow>& best,
                       const TransformerModel& model, const HardwareProfile& hw,
                       const SweepOutputs& o, const CommandContext& ctx,
                       std::chrono::steady_clock::time_point started) {
  OutputFiles files;
  if (!o.out_path.empty()) {
    files.stage(o.out_path,
                o.out_path.ends_with(".csv") ? sweep_csv(rows)
                                             : sweep_json(rows, model.name, hw.name).dump(2) + "\n",
                "--out");
  }
  if (!o.trace_path.empty() && !best.empty()) {
    const TracedSimulation sim = run_traced_simulation(
        build_training_step(model, best.front().plan, hw.gpus_per_node), hw,
        Provenance{ctx.command_line, hw.name, hardware_hash(hw)}, true, started);
    files.stage(o.trace_path, *sim.trace, "--trace-best");
  }
  files.commit();
}

// ", cross entropy torch-fp32": the loss when it is not the default (vocab-parallel), of every
// plan or of the plans of the recomputes that compute it ("in selective-op plans").
std::string loss_setting(const PlanLists& lists, const std::vector<Recompute>& recomputes) {
  std::vector<Recompute> other;  // the recomputes whose plans compute another loss
  CrossEntropy loss = CrossEntropy::vocab_parallel;
  for (const Recompute r : recomputes) {
    const CrossEntropy plan_loss = plan_cross_entropy(lists, r);
    if (plan_loss == CrossEntropy::vocab_parallel) continue;
    loss = plan_loss;
    other.push_back(r);
  }
  if (other.empty()) return "";
  return fmt::format(
      ", cross entropy {}{}", to_string(loss),
      other.size() == recomputes.size() ? "" : fmt::format(" in {} plans", list_text(other)));
}

// "sharding zero1, recompute selective": the settings of every plan, or the lists searched.
std::string shared_settings(const PlanLists& lists) {
  const auto shardings = sharding_list(lists);
  const auto recomputes = recompute_list(lists);
  ShardingPlan only = lists.base.sharding;  // replicas and resharding with the one choice
  only.zero = shardings.front().zero;
  only.fsdp = shardings.front().fsdp;
  const std::string sharding = shardings.size() == 1
                                   ? describe_sharding(only)
                                   : fmt::format("{} (searched)", list_text(shardings));
  const auto precisions = precision_list(lists);
  std::string precision;  // bf16 alone goes unsaid
  if (precisions.size() > 1) {
    precision = fmt::format(", precision {} (searched)", list_text(precisions));
  } else if (precisions.front() != Precision::bf16) {
    precision = fmt::format(", precision {}", to_string(precisions.front()));
  }
  std::string stack;  // the defaults (fused kernels, vocab-parallel loss) go unsaid
  if (lists.base.layer_kernels != LayerKernels::fused) {
    stack += fmt::format(", layer kernels {}", to_string(lists.base.layer_kernels));
  }
  stack += loss_setting(lists, recomputes);
  if (lists.base.moe.dispatcher != TokenDispatcher::alltoall) {  // alltoall goes unsaid
    stack += fmt::format(", {} dispatcher", to_string(lists.base.moe.dispatcher));
  }
  if (lists.base.moe.shared_expert_overlap) stack += ", shared-expert overlap";
  return fmt::format("sharding {}, recompute {}{}{}{}", sharding,
                     recomputes.size() == 1 ? std::string(to_string(recomputes.front()))
                                            : list_text(recomputes) + " (searched)",
                     precision,
                     lists.base.tp_comm_overlap
                         ? fmt::format(", TP comm overlap (plans with tp > 1){}",
                                       lists.base.tp_overlap_rs == TpOverlapRs::ring_exchange
                                           ? ", ring-exchange reduce-scatter"
                                           : "")
                         : "",
                     stack);
}

// The text report: the cluster and workload, the plan counts, the rejection rules, the top plans
// with their critical path, the files written and the wall time.
void print_sweep(std::ostream& out, const std::vector<SweepRow>& rows,
                 const std::vector<SweepRow>& best, const PlanSpace& space, const PlanLists& lists,
                 const TransformerModel& model, const HardwareProfile& hw, const SweepOutputs& o,
                 std::chrono::steady_clock::time_point started) {
  std::int64_t oom = 0;
  for (const auto& r : rows) oom += r.oom ? 1 : 0;
  // Whole nodes as "N x <profile>"; fewer GPUs than a node, or a partial node, by the profile.
  const std::string cluster = lists.gpus % hw.gpus_per_node == 0
                                  ? fmt::format("{} x {}", lists.gpus / hw.gpus_per_node, hw.name)
                                  : hw.name;
  out << fmt::format("sweep: {} on {} ({} GPUs), seq {}, global batch {} sequences, {}\n",
                     model.name, cluster, lists.gpus, lists.base.seq, lists.base.global_batch,
                     shared_settings(lists));
  out << fmt::format("{} combinations, {} valid plans, {} OOM, {} simulated\n", space.combinations,
                     space.plans.size(), oom, best.size());
  const LabelAxes axes = label_axes(lists, model.moe.has_value());
  print_rejections(out, space, axes);
  std::vector<std::string> labels;
  std::size_t width = 40;  // the plan column: its longest label
  for (std::size_t i = 0; i < best.size() && i < o.top; ++i) {
    labels.push_back(plan_label(best[i].plan, axes));
    width = std::max(width, labels.back().size());
  }
  // MoE models: the MoE breakdown per rank (s): dispatch, combine, expert compute, exposed EP
  // comm, and the routing's imbalance.
  const bool moe = model.moe.has_value();
  out << fmt::format("{:>4}  {:<{}} {:>10} {:>7} {:>8}  {}{}\n", "rank", "plan", width, "step_s",
                     "mfu", "mem_GB",
                     moe ? fmt::format("{:>9} {:>9} {:>9} {:>10} {:>5}  ", "dispatch", "combine",
                                       "experts", "ep_exposed", "imb")
                         : "",
                     "critical path (why)");
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const SweepRow& r = best[i];
    const MoeBreakdown& b = r.moe_stats;
    out << fmt::format(
        "{:>4}  {:<{}} {:>10.3f} {:>6.1f}% {:>8.1f}  {}{}\n", i + 1, labels[i], width,
        r.step_time_s, 100 * r.mfu, r.mem_gb,
        moe ? fmt::format("{:>9.3f} {:>9.3f} {:>9.3f} {:>10.3f} {:>5.2f}  ", b.dispatch_s,
                          b.combine_s, b.expert_compute_s, b.exposed_ep_comm_s, b.imbalance)
            : "",
        r.critical_path);
  }
  if (labels.empty() && oom > 0) {
    out << fmt::format(
        "      (no plan fits in {:.1f} GB: all {} valid plans are out of memory; --out FILE.json "
        "lists them with their memory; more GPUs, --recompute full, --sharding zero3,fsdp or "
        "--precision widen the search)\n",
        hw.memory_bytes / 1e9, oom);
  }
  if (!o.out_path.empty()) out << fmt::format("rows written to {}\n", o.out_path);
  if (!o.trace_path.empty() && !best.empty()) {
    out << fmt::format("trace of the fastest plan written to {}\n", o.trace_path);
  }
  out << fmt::format(
      "wall {:.1f} s\n",
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

}  // namespace

int run_sweep_command(std::span<const std::string> argv, const CommandContext& ctx) {
  const LaunchEnv env = detect_launch_env();
  const Args args("sweep", sweep_options(), argv);
  if (args.help_requested()) {
    if (env.rank == 0) {
      ctx.out << args.help_text(
          "Search the parallel plans of a model on N GPUs: every valid combination of the lists "
          "(tp x pp x cp divides N, dp is the rest; tp within a node; vp > 1 only interleaved; "
          "heads, kv heads, FFN by tp; seq by cp (2 cp zigzag) and by tp under SP; gbs by "
          "dp x mbs; layers over pp x vp; the schedule's own rules). OOM plans are marked and "
          "not timed; the rest are simulated, ranked, and written.",
          "meshsim sweep --model llama3-70b --gpus 1024 --tp 4,8 --pp 4,8 --cp 1,2 --out rows.csv");
    }
    return 0;
  }
  const auto started = std::chrono::steady_clock::now();
  const HardwareProfile hw = hardware_from_flags(args, kSweepDefaultHardware);
  std::ostringstream quiet;  // the ranks other than 0 under mpirun
  const TransformerModel model =
      load_model_flag(args.get("--model", kSweepDefaultModel), env.rank == 0 ? ctx.err : quiet);
  const PlanLists lists = sweep_plan_lists(args, hw);
  const SweepOutputs o = sweep_outputs(args);

  if (args.has("--json") && args.has("--csv")) {
    throw InputError("--json and --csv are alternatives: give one of them");
  }
  if (args.has("--why")) {
    const Combination c = parse_combination(args.get("--why", ""), lists);
    if (env.rank == 0) ctx.out << explain_combination(model, lists, hw, c);
    return 0;
  }
  const PlanSpace space = enumerate_plans(model, lists);
  const std::optional<std::vector<SweepRow>> rows =
      evaluate_space(model, space, hw, o.jobs, env, ctx.err);
  if (!rows) return 0;  // a rank other than 0 under mpirun
  const std::vector<SweepRow> best = ranked(*rows);
  write_sweep_files(*rows, best, model, hw, o, ctx, started);
  if (!o.trace_path.empty() && best.empty()) {
    ctx.err << fmt::format(
        "meshsim: warning: no plan was simulated, so --trace-best {} was not "
        "written\n",
        o.trace_path);
  }
  if (args.has("--json")) {
    nlohmann::ordered_json j = sweep_json(*rows, model.name, hw.name);
    j["rejected"] = rejections_json(space);
    ctx.out << j.dump(2) << "\n";
    return 0;
  }
  if (args.has("--csv")) {
    ctx.out << sweep_csv(*rows);
    return 0;
  }
  print_sweep(ctx.out, *rows, best, space, lists, model, hw, o, started);
  return 0;
}

}  // namespace meshsim
