#include "tools/compare_runs.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "schedules/memory_model.hpp"
#include "schedules/sharding.hpp"
#include "schedules/training_step.hpp"
#include "sim/error.hpp"
#include "sim/run.hpp"
#include "sim/step_metrics.hpp"
#include "tools/published_metrics.hpp"

namespace meshsim {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

ComparedRow row_header(const PublishedRun& run) {
  ComparedRow r;
  r.id = run.id;
  r.table = run.table;
  r.metric = run.measured.metric;
  r.unit = run.measured.unit;
  r.measured = run.measured.value;
  return r;
}

constexpr std::string_view kLayerTime = "single_transformer_layer_fwd_plus_bwd_time";

// One transformer layer's forward plus backward, ms, as a profiler brackets it: on rank 0, the
// first microbatch of the rank's first layer, from its first op's start to its last op's end in
// the forward, the same in the backward (recomputation and weight gradients included).
double layer_time_ms(const SimulationResult& r) {
  int layer = -1;
  for (const Op& op : r.program.ops) {
    if (op.rank == 0 && op.labels.layer >= 0) {
      layer = op.labels.layer;
      break;
    }
  }
  Nanos begin[2] = {-1, -1}, end[2] = {-1, -1};
  for (const Op& op : r.program.ops) {
    if (op.rank != 0 || op.labels.layer != layer || op.labels.microbatch != 0) continue;
    const int pass = op.labels.phase == Phase::fwd ? 0 : 1;
    const OpTiming& t = r.timeline.ops[static_cast<std::size_t>(op.id)];
    if (begin[pass] < 0 || t.start < begin[pass]) begin[pass] = t.start;
    end[pass] = std::max(end[pass], t.end);
  }
  return ns_to_seconds((end[0] - begin[0]) + (end[1] - begin[1])) * 1e3;
}

// The run's plan simulated and converted; sets predicted or the reason it is skipped.
void predict(const PublishedRun& run, ComparedRow& row) {
  const auto planned = plan_run(run);
  if (const auto* skipped = std::get_if<SkippedRun>(&planned)) {
    row.reason = skipped->reason;
    return;
  }
  const RunPlan& p = std::get<RunPlan>(planned);
  row.conventions = p.conventions;
  row.plan = fmt::format(
      "{} on {} x {}: tp {} pp {} cp {} dp {} vp {} mbs {} gbs {} {} recompute {} attention {} "
      "({}){}",
      p.model.name, world_size(p.plan), p.hardware.name, p.plan.tp, p.plan.pp, p.plan.cp, p.plan.dp,
      p.plan.vp, p.plan.microbatch_size, p.plan.global_batch, to_string(p.plan.schedule),
      to_string(p.plan.recompute), to_string(p.plan.attention), p.hardware.attention_kernel,
      p.plan.sequence_parallel ? " sp" : "");
  if (p.model.moe) {
    row.plan += fmt::format(" ep {} etp {} {} dispatcher", p.plan.moe.ep,
                            expert_tp(p.plan.moe, p.plan.tp), to_string(p.plan.moe.dispatcher));
  }
  if (p.plan.sharding.zero >= 2) row.plan += " sharding " + describe_sharding(p.plan.sharding);
  if (p.plan.precision != Precision::bf16) {
    row.plan += fmt::format(" precision {}", to_string(p.plan.precision));
  }
  const bool layer_time = run.measured.metric == kLayerTime;
  if (!layer_time && !is_step_metric(run.measured.metric)) {
    row.reason = fmt::format("metric '{}' is not a whole-step quantity meshsim reports",
                             run.measured.metric);
    return;
  }
  try {
    row.oom = estimate_memory(p.model, memory_plan(p.plan), p.hardware).oom;
    const SimulationResult result =
        run_simulation(build_training_step(p.model, p.plan, p.hardware.gpus_per_node), p.hardware);
    if (layer_time) {
      row.predicted = layer_time_ms(result);
      return;
    }
    StepFigures figures;
    figures.model_flops = published_model_flops(run.source, p.model, p.plan);
    figures.peak_flops = p.hardware.peak_flops[static_cast<std::size_t>(p.plan.dtype)];
    figures.step_time_s = evaluate_step(result, step_work(p.model, p.plan), p.hardware).step_time_s;
    row.predicted = published_metric(run.measured.metric, figures, p.plan);
  } catch (const InputError& e) {
    row.reason = e.what();
  }
}

// The first Table-5 run of the memory row's model, with the row's sp and recompute.
const PublishedRun* memory_plan_run(const PublishedRuns& runs, const PublishedMemoryRow& m) {
  for (const auto& r : runs.rows) {
    if (r.table == "korthikanti2022_table5_iteration_time" &&
        r.model.value("name", std::string()) == m.model) {
      return &r;
    }
  }
  return nullptr;
}

// Activation bytes of the first pipeline stage for the run's plan with sp and recompute set.
// The run's plan with sp and recompute set as a memory row names them.
StepPlan with_activation_choice(const RunPlan& p, bool sp, Recompute recompute) {
  StepPlan plan = p.plan;
  plan.sequence_parallel = sp;
  plan.recompute = recompute;
  return plan;
}

double first_stage_activations(const RunPlan& p, bool sp, Recompute recompute) {
  const StepPlan plan = with_activation_choice(p, sp, recompute);
  return estimate_memory(p.model, memory_plan(plan), p.hardware).stages.front().activations;
}

// Weights, gradients and optimizer state of the first pipeline stage's transformer layers
// (bytes): Fig. 1 of Korthikanti et al. counts the layers' parameters per GPU (12·h²·L/(t·p) at
// 18 bytes each reproduces its bars), not the word embedding the first stage also holds.
double first_stage_layer_state(const RunPlan& p) {
  const StageMemory s = estimate_memory(p.model, memory_plan(p.plan), p.hardware).stages.front();
  int layers = 0;
  for (int l : s.chunk_layers) layers += l;
  const double layer_share = static_cast<double>(layers) *
                             static_cast<double>(layer_parameters_tp(p.model, p.plan.tp)) /
                             static_cast<double>(s.parameters);
  return (s.weights + s.gradients + s.optimizer) * layer_share;
}

// One transformer layer's stored activations (bytes, one microbatch) for the run's plan with sp
// and recompute set: Fig. 7 of Korthikanti et al. compares the per-layer activation memory of
// their Table 2 (embedding, head and loss activations and the pipeline's in-flight count are
// outside it).
double layer_activations(const RunPlan& p, bool sp, Recompute recompute) {
  return activation_terms(p.model, memory_plan(with_activation_choice(p, sp, recompute)))
      .layer_stored;
}

std::vector<ComparedRow> memory_rows(const PublishedRuns& runs, const std::string& table) {
  std::vector<ComparedRow> out;
  if (!table.empty() && table != "memory_rows") return out;
  for (const auto& m : runs.memory_rows) {
    ComparedRow base;
    base.table = "memory_rows";
    const PublishedRun* run = memory_plan_run(runs, m);
    const auto planned =
        run ? plan_run(*run)
            : std::variant<RunPlan, SkippedRun>(SkippedRun{"no Table 5 plan for model " + m.model});
    const auto recompute = parse_recompute(m.recompute);
    auto add = [&](const std::string& suffix, const std::string& metric, const std::string& unit,
                   double measured, const std::function<double(const RunPlan&)>& value) {
      ComparedRow r = base;
      r.id = m.id + suffix;
      r.metric = metric;
      r.unit = unit;
      r.measured = measured;
      if (const auto* s = std::get_if<SkippedRun>(&planned)) {
        r.reason = s->reason;
      } else if (!recompute) {
        r.reason = "recompute '" + m.recompute + "' is not none, selective or full";
      } else {
        r.predicted = value(std::get<RunPlan>(planned));
      }
      out.push_back(std::move(r));
    };
    if (m.params_plus_optimizer_gib) {
      add("-params", "params_plus_optimizer", "GiB", *m.params_plus_optimizer_gib,
          [](const RunPlan& p) { return first_stage_layer_state(p) / kGiB; });
    }
    if (m.activations_gib) {
      add("-activations", "activations", "GiB", *m.activations_gib,
          [&](const RunPlan& p) { return first_stage_activations(p, m.sp, *recompute) / kGiB; });
    }
    if (m.activation_pct_of_tp_baseline) {
      add("-pct", "activation_memory_pct_of_tp_baseline", "percent",
          *m.activation_pct_of_tp_baseline, [&](const RunPlan& p) {
            return 100 * layer_activations(p, m.sp, *recompute) /
                   layer_activations(p, false, Recompute::none);
          });
    }
  }
  return out;
}

}  // namespace

TableSummary summarize(const std::vector<const ComparedRow*>& rows) {
  TableSummary s;
  s.rows = static_cast<int>(rows.size());
  std::vector<const ComparedRow*> done;
  for (const auto* r : rows) {
    if (!r->predicted) continue;
    done.push_back(r);
    s.mape += std::abs(r->error());
    if (std::abs(r->error()) >= std::abs(s.worst)) {
      s.worst = r->error();
      s.worst_row = r->id;
    }
  }
  s.expressed = static_cast<int>(done.size());
  if (!done.empty()) s.mape /= static_cast<double>(done.size());
  for (std::size_t i = 0; i < done.size(); ++i) {
    for (std::size_t j = i + 1; j < done.size(); ++j) {
      const double dm = done[i]->measured - done[j]->measured;
      if (dm == 0 || done[i]->metric != done[j]->metric) continue;
      ++s.pairs;
      if ((*done[i]->predicted - *done[j]->predicted) * dm > 0) ++s.pairs_kept;
    }
  }
  return s;
}

Comparison compare_published(const PublishedRuns& runs, const std::string& table) {
  Comparison c;
  for (const auto& run : runs.rows) {
    if (!table.empty() && run.table != table) continue;
    ComparedRow row = row_header(run);
    try {
      predict(run, row);
    } catch (const InputError& e) {  // a field of the row that cannot be read: name the row
      throw InputError(fmt::format("row {}: {}", run.id, e.what()));
    }
    c.rows.push_back(std::move(row));
  }
  for (auto& r : memory_rows(runs, table)) c.rows.push_back(std::move(r));
  std::map<std::string, std::vector<const ComparedRow*>> by_table;
  for (const auto& r : c.rows) by_table[r.table].push_back(&r);
  for (const auto& [name, rows] : by_table) c.tables[name] = summarize(rows);
  return c;
}

nlohmann::ordered_json comparison_json(const Comparison& c) {
  nlohmann::ordered_json j;
  auto rows = nlohmann::ordered_json::array();
  for (const auto& r : c.rows) {
    nlohmann::ordered_json o;
    o["id"] = r.id;
    o["table"] = r.table;
    o["metric"] = r.metric;
    o["unit"] = r.unit;
    o["measured"] = r.measured;
    o["predicted"] = r.predicted ? nlohmann::ordered_json(*r.predicted) : nullptr;
    o["error"] = r.predicted ? nlohmann::ordered_json(r.error()) : nullptr;
    o["skipped"] = !r.predicted;
    o["reason"] = r.reason;
    o["oom"] = r.oom;
    o["plan"] = r.plan;
    o["conventions"] = r.conventions;
    rows.push_back(std::move(o));
  }
  j["rows"] = std::move(rows);
  nlohmann::ordered_json tables = nlohmann::ordered_json::object();
  for (const auto& [name, s] : c.tables) {
    tables[name] = {{"rows", s.rows},
                    {"expressed", s.expressed},
                    {"mape", s.mape},
                    {"worst", s.worst},
                    {"worst_row", s.worst_row},
                    {"pairs", s.pairs},
                    {"pairs_kept", s.pairs_kept}};
  }
  j["tables"] = std::move(tables);
  return j;
}

std::string comparison_text(const Comparison& c) {
  std::string out;
  for (const auto& [name, s] : c.tables) {
    out += fmt::format("{}: {} of {} rows expressed", name, s.expressed, s.rows);
    if (s.expressed > 0) {
      out += fmt::format(", MAPE {:.1f} %, worst {:+.1f} % ({}), order kept in {} of {} pairs",
                         100 * s.mape, 100 * s.worst, s.worst_row, s.pairs_kept, s.pairs);
    }
    out +=
        fmt::format("\n  {:<44} {:>10} {:>10} {:>10}\n", "row", "measured", "predicted", "error");
    for (const auto& r : c.rows) {
      if (r.table != name) continue;
      if (!r.predicted) {
        out += fmt::format("  {:<44} skipped: {}\n", r.id, r.reason);
        continue;
      }
      // The unit is the measured and predicted figures' ("MFU in percent", not "-79.2 % %").
      out += fmt::format("  {:<44} {:>10.4g} {:>10.4g} {:>+8.1f} % {}{}\n", r.id, r.measured,
                         *r.predicted, 100 * r.error(), r.unit == "%" ? "percent" : r.unit,
                         r.oom ? "  (OOM predicted)" : "");
    }
  }
  return out;
}

std::string comparison_markdown(const Comparison& c) {
  std::string out =
      "| table | rows | expressed | MAPE | worst | order kept | skipped because |\n"
      "|---|---:|---:|---:|---|---:|---|\n";
  for (const auto& [name, s] : c.tables) {
    std::map<std::string, int> reasons;
    for (const auto& r : c.rows) {
      if (r.table == name && !r.predicted) ++reasons[r.reason];
    }
    std::string why;
    for (const auto& [reason, n] : reasons) {
      why += fmt::format("{}{} ({})", why.empty() ? "" : "; ", reason, n);
    }
    if (s.expressed == 0) {
      out += fmt::format("| {} | {} | 0 | | | | {} |\n", name, s.rows, why);
      continue;
    }
    out += fmt::format("| {} | {} | {} | {:.1f} % | {:+.1f} % ({}) | {} / {} | {} |\n", name,
                       s.rows, s.expressed, 100 * s.mape, 100 * s.worst, s.worst_row, s.pairs_kept,
                       s.pairs, why);
  }
  return out;
}

}  // namespace meshsim
