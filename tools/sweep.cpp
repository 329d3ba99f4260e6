#include "tools/sweep.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "sim/error.hpp"
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

}  // namespace

SweepRow evaluate_plan(const TransformerModel& model, const StepPlan& plan,
                       const HardwareProfile& hardware) {
  SweepRow row;
  row.plan = plan;
  row.gpus = world_size(plan);
  const MemoryEstimate mem = estimate_memory(model, memory_plan(plan), hardware);
  row.oom = mem.oom;
  row.mem_gb = mem.peak_bytes / 1e9;
  row.peak_rank = mem.peak_rank;
  if (row.oom) return row;
  Program program;
  try {
    program = build_training_step(model, plan, hardware);
  } catch (const InputError& e) {  // a plan too large to simulate: a row, not a failed sweep
    row.critical_path = fmt::format("not simulated: {}", e.what());
    return row;
  }
  const SimulationResult sim = run_simulation(std::move(program), hardware, Provenance{}, false,
                                              std::chrono::steady_clock::now());
  const std::int64_t seq = plan.seq > 0 ? plan.seq : model.seq_len;
  row.timed = true;
  row.step_time_s = ns_to_seconds(sim.metrics.makespan);
  const double tokens = static_cast<double>(plan.global_batch * seq);
  row.tokens_per_s = row.step_time_s > 0 ? tokens / row.step_time_s : 0;
  const double peak = hardware.peak_flops[static_cast<std::size_t>(DType::bf16)];
  row.mfu = peak > 0 ? training_flops_per_token(model, seq) * row.tokens_per_s /
                           (static_cast<double>(row.gpus) * peak)
                     : 0;
  row.critical_path = top_categories(sim.metrics);
  return row;
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
  std::vector<SweepRow> rows(mine.size());
  std::atomic<std::size_t> next{0};
  std::size_t done = 0;
  std::mutex mutex;
  std::string failure;
  auto work = [&] {
    for (std::size_t k = next++; k < mine.size(); k = next++) {
      try {
        rows[k] = evaluate_plan(model, plans[mine[k]], hardware);
      } catch (const std::exception& e) {
        const std::lock_guard<std::mutex> lock(mutex);
        if (failure.empty()) failure = e.what();
      }
      const std::lock_guard<std::mutex> lock(mutex);
      ++done;
      if (progress) progress(done, mine.size());
    }
  };
  std::vector<std::thread> threads;
  for (int j = 1; j < std::max(jobs, 1); ++j) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  MESHSIM_CHECK(failure.empty(), "sweep: a plan failed to evaluate: " + failure);
  return rows;
}

nlohmann::ordered_json sweep_row_json(const SweepRow& r) {
  const StepPlan& p = r.plan;
  nlohmann::ordered_json j;
  j["tp"] = p.tp;
  j["pp"] = p.pp;
  j["cp"] = p.cp;
  j["dp"] = p.dp;
  j["vp"] = p.vp;
  j["mbs"] = p.microbatch_size;
  j["schedule"] = to_string(p.schedule);
  j["cp_variant"] = to_string(p.cp_variant);
  j["microbatches"] = microbatches(p);
  j["step_time_s"] = r.timed ? nlohmann::ordered_json(r.step_time_s) : nullptr;
  j["tokens_per_s"] = r.timed ? nlohmann::ordered_json(r.tokens_per_s) : nullptr;
  j["mfu"] = r.timed ? nlohmann::ordered_json(r.mfu) : nullptr;
  j["mem_gb"] = r.mem_gb;
  j["peak_rank"] = r.peak_rank;
  j["oom"] = r.oom;
  j["critical_path"] = r.critical_path;
  return j;
}

std::string sweep_csv(const std::vector<SweepRow>& rows) {
  std::string out =
      "tp,pp,cp,dp,vp,mbs,schedule,cp_variant,microbatches,step_time_s,tokens_per_s,mfu,mem_gb,"
      "oom,critical_path\n";
  for (const auto& r : rows) {
    const StepPlan& p = r.plan;
    out +=
        fmt::format("{},{},{},{},{},{},{},{},{},", p.tp, p.pp, p.cp, p.dp, p.vp, p.microbatch_size,
                    to_string(p.schedule), to_string(p.cp_variant), microbatches(p));
    if (r.timed) {
      out += fmt::format("{:.9g},{:.9g},{:.6f},", r.step_time_s, r.tokens_per_s, r.mfu);
    } else {
      out += ",,,";
    }
    out += fmt::format("{:.3f},{},\"{}\"\n", r.mem_gb, r.oom ? "true" : "false", r.critical_path);
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
  if (!rows.empty()) {
    j["seq"] = rows.front().plan.seq;
    j["global_batch"] = rows.front().plan.global_batch;
  }
  auto a = nlohmann::ordered_json::array();
  for (const auto& r : rows) a.push_back(sweep_row_json(r));
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
