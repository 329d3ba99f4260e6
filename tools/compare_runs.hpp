#pragma once
// `meshsim compare`: every published run simulated as `meshsim step` would (the same plan, the
// same engine, sim/step_metrics' evaluation), converted to the run's own metric
// (tools/published_metrics; a one-layer time is read off the simulated timeline: rank 0's first
// layer in the first microbatch, forward span plus backward span), set against what was measured;
// per table the mean absolute percentage error, the worst row and how many pairs of rows keep their
// measured order. Memory rows compare the memory model's first pipeline stage with the printed
// per-GPU figures.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/published_runs.hpp"

namespace meshsim {

struct ComparedRow {
  std::string id, table, metric, unit;
  double measured = 0;
  std::optional<double> predicted;  // empty when skipped
  std::string reason;               // why skipped
  bool oom = false;                 // the memory model calls the plan out of memory
  std::string plan;                 // "tp 8 pp 1 cp 1 dp 1 vp 1 mbs 4 gbs 4 1f1b ..." when planned
  std::vector<std::string> conventions;  // how null fields were filled (RunPlan::conventions)
  double error() const { return predicted ? *predicted / measured - 1 : 0; }
};

struct TableSummary {
  int rows = 0, expressed = 0;
  double mape = 0;   // mean |error| over expressed rows, a fraction
  double worst = 0;  // the error of largest magnitude
  std::string worst_row;
  int pairs = 0, pairs_kept = 0;  // pairs of expressed rows with different measured values
};

struct Comparison {
  std::vector<ComparedRow> rows;
  std::map<std::string, TableSummary> tables;
};

// Runs (and memory rows) of `table` (all when empty) compared. Predictions read only the plans.
Comparison compare_published(const PublishedRuns& runs, const std::string& table);

TableSummary summarize(const std::vector<const ComparedRow*>& rows);

nlohmann::ordered_json comparison_json(const Comparison& c);
std::string comparison_text(const Comparison& c);
// One Markdown table, a row per published table: rows, expressed, MAPE, worst row, pairs kept in
// order, and the most common reason for the rows skipped (the README's accuracy section).
std::string comparison_markdown(const Comparison& c);

}  // namespace meshsim
