#include "tools/sweep.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/step_metrics.hpp"
#include "tools/simulation.hpp"

namespace meshsim {
namespace {

std::string top_categories(const RunMetrics& m) {
  std::string out;
  const double total = static_cast<double>(std::max<Nanos>(m.makespan, 1));
  for (std::size_t i = 0; i < m.critical_path.size() && i < 3; ++i) {
    const auto& c = m.critical_path[i];
    out += fmt::format("{}{:.0f}% {}", i == 0 ? "" : ", ",
                       100.0 * static_cast<double>(c.time) / total, c.category);
  }
  return out;
}

// Plans run at the same time may together be this much larger than the largest plan: 1 + 1/4,
// so while the largest runs the other threads take plans of up to a quarter of its size.
constexpr std::int64_t kLargestShare = 4;

// What a plan holds in memory while simulated, in ops (Program, timeline and metrics grow with
// them): the builder's estimate; 0 for an OOM plan (not simulated) or one that is not a plan
// (evaluate_plan reports it).
std::int64_t simulation_size(const TransformerModel& model, const StepPlan& plan,
                             const HardwareProfile& hardware) {
  try {
    if (estimate_memory(model, memory_plan(plan), hardware).oom) return 0;
    return estimated_step_ops(model, plan, hardware.gpus_per_node);
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

PlanLists default_plan_lists(int gpus_per_node) {
  PlanLists lists;
  lists.gpus = kSweepDefaultGpus;
  lists.gpus_per_node = gpus_per_node;
  lists.tp = {1, 2, 4, 8};
  lists.pp = {1, 2, 4, 8, 16};
  lists.cp = {1, 2, 4};
  lists.vp = {1, 2};
  lists.mbs = {1, 2};
  lists.schedules = {PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved,
                     PipelineSchedule::zb_h1};
  lists.cp_variants = {RingVariant::zigzag};
  lists.base.seq = 8192;
  lists.base.global_batch = 512;
  lists.base.kv_rotation = KvRotation::p2p;
  lists.base.recompute = Recompute::selective;
  lists.recompute = {Recompute::selective};
  // Megatron-LM's distributed optimizer (ZeRO-1) by default: what its large runs use.
  lists.sharding = {ShardingChoice{1, false}};
  lists.base.distributed_optimizer = false;
  lists.base.sequence_parallel = true;
  return lists;
}

SweepRow evaluate_plan(const TransformerModel& model, const StepPlan& plan,
                       const HardwareProfile& hardware) {
  SweepRow row;
  row.plan = plan;
  row.moe = model.moe.has_value();
  row.gpus = world_size(plan);
  const MemoryEstimate mem = estimate_memory(model, memory_plan(plan), hardware);
  row.oom = mem.oom;
  row.mem_gb = mem.peak_bytes / 1e9;
  row.peak_rank = mem.peak_rank;
  if (row.oom) return row;
  Program program;
  try {
    program = build_training_step(model, plan, hardware.gpus_per_node);
  } catch (const InputError& e) {  // a plan too large to simulate: a row, not a failed sweep
    row.critical_path = fmt::format("not simulated: {}", e.what());
    return row;
  }
  const SimulationResult sim = run_simulation(std::move(program), hardware);
  const StepEvaluation eval = evaluate_step(sim, step_work(model, plan), hardware);
  row.timed = true;
  row.step_time_s = eval.step_time_s;
  row.tokens_per_s = eval.tokens_per_s;
  row.mfu = eval.mfu;
  row.critical_path = top_categories(sim.metrics);
  if (row.moe) {
    row.moe_stats = moe_breakdown(model, plan, sim,
                                  time_breakdown(sim.program, sim.timeline, sim.metrics.makespan));
  }
  return row;
}

nlohmann::json moe_stats_json(const MoeBreakdown& b) {
  return {b.dispatch_s,      b.combine_s, b.expert_compute_s, b.exposed_ep_comm_s,
          b.hidden_fraction, b.imbalance, b.dropped_fraction};
}

MoeBreakdown moe_stats_from_json(const nlohmann::json& j) {
  MoeBreakdown b;
  double* fields[] = {&b.dispatch_s,      &b.combine_s, &b.expert_compute_s, &b.exposed_ep_comm_s,
                      &b.hidden_fraction, &b.imbalance, &b.dropped_fraction};
  for (std::size_t i = 0; i < std::size(fields); ++i) *fields[i] = j.at(i).get<double>();
  return b;
}

std::vector<SweepRow> evaluate_plans(
    const TransformerModel& model, const std::vector<StepPlan>& plans,
    const HardwareProfile& hardware, int jobs, int offset, int stride,
    const std::function<void(std::size_t, std::size_t)>& progress) {
  std::vector<std::size_t> mine;
  for (std::size_t i = static_cast<std::size_t>(offset); i < plans.size();
       i += static_cast<std::size_t>(stride)) {
    mine.push_back(i);
  }
  const std::size_t n = mine.size();
  // Sizes and order: largest first, ties in plan order.
  std::vector<std::int64_t> cost(n, 0);
  std::int64_t largest = 0;
  for (std::size_t k = 0; k < n; ++k) {
    cost[k] = simulation_size(model, plans[mine[k]], hardware);
    largest = std::max(largest, cost[k]);
  }
  std::vector<std::size_t> order(n);
  for (std::size_t k = 0; k < n; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return cost[a] > cost[b]; });
  const std::int64_t budget = largest + largest / kLargestShare;

  std::vector<SweepRow> rows(n);
  std::vector<bool> started(n, false);
  std::size_t first = 0;  // in `order`: every plan before it has started
  std::size_t done = 0, active = 0;
  std::int64_t running = 0;  // the sizes of the plans being evaluated
  std::mutex mutex;
  std::condition_variable changed;
  std::string failure;
  // The next plan to start, or n when every plan has; waits while none fits the budget.
  auto take = [&](std::unique_lock<std::mutex>& lock) {
    for (;;) {
      while (first < n && started[order[first]]) ++first;
      if (first == n) return n;
      for (std::size_t i = first; i < n; ++i) {
        const std::size_t k = order[i];
        if (started[k] || (active > 0 && running + cost[k] > budget)) continue;
        started[k] = true;
        running += cost[k];
        ++active;
        return k;
      }
      changed.wait(lock);
    }
  };
  auto work = [&] {
    std::unique_lock<std::mutex> lock(mutex);
    for (std::size_t k = take(lock); k < n; k = take(lock)) {
      lock.unlock();
      SweepRow row;
      std::string error;
      try {
        row = evaluate_plan(model, plans[mine[k]], hardware);
      } catch (const std::exception& e) {
        error = e.what();
      }
      lock.lock();
      rows[k] = std::move(row);
      if (!error.empty() && failure.empty()) failure = error;
      running -= cost[k];
      --active;
      ++done;
      if (progress) progress(done, n);
      changed.notify_all();
    }
  };
  std::vector<std::thread> threads;
  for (int j = 1; j < std::max(jobs, 1); ++j) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  MESHSIM_CHECK(failure.empty(), "sweep: a plan failed to evaluate: " + failure);
  return rows;
}

void put_mesh(nlohmann::ordered_json& j, const StepPlan& p) {
  j["tp"] = p.tp;
  j["pp"] = p.pp;
  j["cp"] = p.cp;
  j["dp"] = p.dp;
  j["vp"] = p.vp;
  j["mbs"] = p.microbatch_size;
}

nlohmann::ordered_json sweep_row_json(const SweepRow& r) {
  const StepPlan& p = r.plan;
  nlohmann::ordered_json j;
  put_mesh(j, p);
  if (r.moe) {
    j["ep"] = p.moe.ep;
    j["etp"] = expert_tp(p.moe, p.tp);
  }
  j["schedule"] = to_string(p.schedule);
  j["cp_variant"] = to_string(p.cp_variant);
  j["recompute"] = to_string(p.recompute);
  j["sharding"] = to_string(sharding_choice(p));
  j["precision"] = to_string(p.precision);
  j["microbatches"] = microbatches(p);
  j["step_time_s"] = r.timed ? nlohmann::ordered_json(r.step_time_s) : nullptr;
  j["tokens_per_s"] = r.timed ? nlohmann::ordered_json(r.tokens_per_s) : nullptr;
  j["mfu"] = r.timed ? nlohmann::ordered_json(r.mfu) : nullptr;
  j["mem_gb"] = r.mem_gb;
  j["peak_rank"] = r.peak_rank;
  j["oom"] = r.oom;
  j["critical_path"] = r.critical_path;
  if (r.moe) {
    const MoeBreakdown& b = r.moe_stats;
    const auto timed = [&](double v) { return r.timed ? nlohmann::ordered_json(v) : nullptr; };
    j["dispatch_s"] = timed(b.dispatch_s);
    j["combine_s"] = timed(b.combine_s);
    j["expert_compute_s"] = timed(b.expert_compute_s);
    j["exposed_ep_comm_s"] = timed(b.exposed_ep_comm_s);
    j["imbalance"] = timed(b.imbalance);
  }
  return j;
}

std::string sweep_csv(const std::vector<SweepRow>& rows) {
  const bool moe = !rows.empty() && rows.front().moe;
  std::string out = fmt::format(
      "tp,pp,cp,dp,vp,mbs,{}schedule,cp_variant,recompute,sharding,precision,microbatches,"
      "step_time_s,tokens_per_s,mfu,mem_gb,oom,{}critical_path\n",
      moe ? "ep,etp," : "",
      moe ? "dispatch_s,combine_s,expert_compute_s,exposed_ep_comm_s,imbalance," : "");
  for (const auto& r : rows) {
    const StepPlan& p = r.plan;
    out += fmt::format("{},{},{},{},{},{},", p.tp, p.pp, p.cp, p.dp, p.vp, p.microbatch_size);
    if (moe) out += fmt::format("{},{},", p.moe.ep, expert_tp(p.moe, p.tp));
    out += fmt::format("{},{},{},{},{},{},", to_string(p.schedule), to_string(p.cp_variant),
                       to_string(p.recompute), to_string(sharding_choice(p)),
                       to_string(p.precision), microbatches(p));
    if (r.timed) {
      out += fmt::format("{:.9g},{:.9g},{:.6f},", r.step_time_s, r.tokens_per_s, r.mfu);
    } else {
      out += ",,,";
    }
    out += fmt::format("{:.3f},{},", r.mem_gb, r.oom ? "true" : "false");
    if (moe && r.timed) {
      const MoeBreakdown& b = r.moe_stats;
      out += fmt::format("{:.9g},{:.9g},{:.9g},{:.9g},{:.6f},", b.dispatch_s, b.combine_s,
                         b.expert_compute_s, b.exposed_ep_comm_s, b.imbalance);
    } else if (moe) {
      out += ",,,,,";
    }
    out += fmt::format("\"{}\"\n", r.critical_path);
  }
  return out;
}

nlohmann::ordered_json sweep_json(const std::vector<SweepRow>& rows, const std::string& model,
                                  const std::string& hardware) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["model"] = model;
  j["hardware"] = hardware;
  j["gpus"] = rows.empty() ? 0 : rows.front().gpus;
  // The loss follows each plan's recompute unless pinned: one for the sweep when every row
  // computes it, else each row's.
  const bool one_loss = std::all_of(rows.begin(), rows.end(), [&](const SweepRow& r) {
    return r.plan.cross_entropy == rows.front().plan.cross_entropy;
  });
  if (!rows.empty()) {
    const StepPlan& p = rows.front().plan;
    j["seq"] = p.seq;
    j["global_batch"] = p.global_batch;
    // Every plan's, written when not the default (fused kernels, vocab-parallel loss).
    if (p.layer_kernels != LayerKernels::fused) j["layer_kernels"] = to_string(p.layer_kernels);
    if (one_loss && p.cross_entropy != CrossEntropy::vocab_parallel) {
      j["cross_entropy"] = to_string(p.cross_entropy);
    }
  }
  auto a = nlohmann::ordered_json::array();
  for (const auto& r : rows) {
    nlohmann::ordered_json row = sweep_row_json(r);
    if (!one_loss) row["cross_entropy"] = to_string(r.plan.cross_entropy);
    a.push_back(std::move(row));
  }
  j["rows"] = std::move(a);
  return j;
}

std::vector<SweepRow> ranked(const std::vector<SweepRow>& rows) {
  std::vector<SweepRow> out;
  for (const auto& r : rows) {
    if (r.timed) out.push_back(r);
  }
  std::stable_sort(out.begin(), out.end(), [](const SweepRow& a, const SweepRow& b) {
    return a.step_time_s < b.step_time_s;
  });
  return out;
}

}  // namespace meshsim
