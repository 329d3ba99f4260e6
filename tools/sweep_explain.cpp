#include "tools/sweep_explain.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <ostream>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "tools/field_flags.hpp"
#include "tools/sweep.hpp"

namespace meshsim {
namespace {

std::string cp_suffix(int cp, RingVariant v) {
  return cp > 1 ? fmt::format(" {}", to_string(v)) : "";
}

// " zero1 rc=full fp8-delayed": the searched settings a label shows.
std::string setting_suffix(ShardingChoice sharding, Recompute recompute, Precision precision,
                           LabelAxes axes) {
  std::string s;
  if (axes.sharding) s += fmt::format(" {}", to_string(sharding));
  if (axes.recompute) s += fmt::format(" rc={}", to_string(recompute));
  if (axes.precision) s += fmt::format(" {}", to_string(precision));
  return s;
}

// The only value of a list, or InputError asking --why to name the field.
template <class T>
T only_value(const std::vector<T>& list, std::string_view field, std::string_view flag) {
  if (list.size() != 1) {
    throw InputError(fmt::format("--why: name {} (the sweep's {} list has {} values)", field, flag,
                                 list.size()));
  }
  return list.front();
}

template <class T>
std::string shown(T v) {
  return fmt::format("{}", v);
}
std::string shown(PipelineSchedule s) {
  return std::string(to_string(s));
}
std::string shown(ShardingChoice s) {
  return std::string(to_string(s));
}
std::string shown(Recompute r) {
  return "rc=" + std::string(to_string(r));
}
std::string shown(Precision p) {
  return std::string(to_string(p));
}

// The value --why names for a field: one of the sweep's list (InputError otherwise), or the
// list's only value when left out.
template <class T, class U>
T listed_value(const std::optional<U>& named, const std::vector<T>& list, std::string_view field,
               std::string_view flag) {
  if (!named) return only_value(list, field, flag);
  const T v = static_cast<T>(*named);
  if (std::find(list.begin(), list.end(), v) == list.end()) {
    throw InputError(fmt::format("--why: {} is not in the sweep's {} list", shown(v), flag));
  }
  return v;
}

// "tp4" -> 4 for prefix "tp"; nullopt when `word` is not prefix + a positive integer.
std::optional<std::int64_t> number_after(std::string_view word, std::string_view prefix) {
  if (!word.starts_with(prefix) || word.size() == prefix.size()) return std::nullopt;
  std::int64_t v = 0;
  const char* first = word.data() + prefix.size();
  const auto [end, ec] = std::from_chars(first, word.data() + word.size(), v);
  if (ec != std::errc() || end != word.data() + word.size() || v < 1 || v > (1 << 20)) {
    return std::nullopt;
  }
  return v;
}

std::string minutes(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

}  // namespace

LabelAxes label_axes(const PlanLists& lists, bool moe) {
  return {moe, sharding_list(lists).size() > 1, recompute_list(lists).size() > 1,
          precision_list(lists).size() > 1};
}

std::string plan_label(const StepPlan& p, LabelAxes axes) {
  return fmt::format(
      "tp{} pp{} cp{} dp{} vp{} mbs{}{} {}{}{}", p.tp, p.pp, p.cp, p.dp, p.vp, p.microbatch_size,
      axes.experts ? fmt::format(" ep{} etp{}", p.moe.ep, expert_tp(p.moe, p.tp)) : "",
      to_string(p.schedule), cp_suffix(p.cp, p.cp_variant),
      setting_suffix(sharding_choice(p), p.recompute, p.precision, axes));
}

std::string combination_label(const Combination& c, LabelAxes axes) {
  // Expert parallelism shown when swept away from the dense default (ep 1, etp = tp).
  const std::string experts =
      c.ep != 1 || c.etp != 0 ? fmt::format(" ep{} etp{}", c.ep, c.etp == 0 ? c.tp : c.etp) : "";
  return fmt::format("tp{} pp{} cp{} vp{} mbs{}{} {}{}{}", c.tp, c.pp, c.cp, c.vp, c.mbs, experts,
                     to_string(c.schedule), cp_suffix(c.cp, c.cp_variant),
                     setting_suffix(c.sharding, c.recompute, c.precision, axes));
}

void print_rejections(std::ostream& out, const PlanSpace& space, LabelAxes axes) {
  for (const auto& [rule, count] : space.rejected) {
    const Rejection* first = nullptr;
    for (const auto& r : space.rejections) {
      if (r.rule == rule) {
        first = &r;
        break;
      }
    }
    if (first == nullptr) continue;
    out << fmt::format("  rejected {:>5} [{}] e.g. {}: {}\n", count, rule,
                       combination_label(first->combination, axes),
                       in_flag_words("sweep", first->reason));
  }
}

nlohmann::ordered_json rejections_json(const PlanSpace& space) {
  nlohmann::ordered_json counts = nlohmann::ordered_json::object();
  for (const auto& [rule, count] : space.rejected) counts[rule] = count;
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const auto& r : space.rejections) {
    const Combination& c = r.combination;
    all.push_back({{"tp", c.tp},
                   {"pp", c.pp},
                   {"cp", c.cp},
                   {"vp", c.vp},
                   {"mbs", c.mbs},
                   {"schedule", to_string(c.schedule)},
                   {"cp_variant", to_string(c.cp_variant)},
                   {"recompute", to_string(c.recompute)},
                   {"sharding", to_string(c.sharding)},
                   {"precision", to_string(c.precision)},
                   {"rule", r.rule},
                   {"reason", in_flag_words("sweep", r.reason)}});
  }
  return {{"counts", counts}, {"combinations", all}};
}

Combination parse_combination(std::string_view text, const PlanLists& lists) {
  std::optional<std::int64_t> tp, pp, cp, vp, mbs, ep, etp;
  std::optional<PipelineSchedule> schedule;
  std::optional<RingVariant> variant;
  std::optional<ShardingChoice> sharding;
  std::optional<Recompute> recompute;
  std::optional<Precision> precision;
  std::string words(text);
  for (char& ch : words) ch = ch == ',' ? ' ' : ch;
  std::size_t at = 0;
  while ((at = words.find_first_not_of(' ', at)) != std::string::npos) {
    const std::size_t end = std::min(words.find(' ', at), words.size());
    const std::string_view w = std::string_view(words).substr(at, end - at);
    at = end;
    bool known = false;
    for (auto [prefix, field] :
         {std::pair{"tp", &tp}, std::pair{"pp", &pp}, std::pair{"cp", &cp}, std::pair{"vp", &vp},
          std::pair{"mbs", &mbs}, std::pair{"ep", &ep}, std::pair{"etp", &etp}}) {
      if (const auto v = number_after(w, prefix)) {
        *field = *v;
        known = true;
      }
    }
    if (number_after(w, "dp")) known = true;  // dp is what is left
    if (const auto s = parse_pipeline_schedule(w)) {
      schedule = *s;
      known = true;
    }
    if (const auto v = parse_ring_variant(w)) {
      variant = *v;
      known = true;
    }
    if (const auto v = parse_sharding_choice(w)) {
      sharding = *v;
      known = true;
    }
    if (const auto v = parse_precision(w)) {
      precision = *v;
      known = true;
    }
    if (w.starts_with("rc=")) {
      if (const auto v = parse_recompute(w.substr(3))) {
        recompute = *v;
        known = true;
      }
    }
    if (!known) {
      throw InputError(fmt::format(
          "--why: expected a plan as the sweep labels it ('tp4 pp2 cp1 vp1 mbs1 1f1b'), got "
          "'{}' in '{}'",
          w, text));
    }
  }
  Combination c;
  c.tp = listed_value(tp, lists.tp, "tp", "--tp");
  c.pp = listed_value(pp, lists.pp, "pp", "--pp");
  c.cp = listed_value(cp, lists.cp, "cp", "--cp");
  c.vp = listed_value(vp, lists.vp, "vp", "--vp");
  c.mbs = listed_value(mbs, lists.mbs, "mbs", "--mbs");
  c.schedule = listed_value(schedule, lists.schedules, "the schedule", "--schedule");
  c.cp_variant = variant ? *variant : lists.cp_variants.front();
  c.ep = listed_value(ep, lists.ep, "ep", "--ep");
  // etp: the sweep's list, where 0 stands for "= tp" (a named etp equal to tp matches it).
  if (etp && *etp == c.tp && std::find(lists.etp.begin(), lists.etp.end(), 0) != lists.etp.end()) {
    c.etp = 0;
  } else {
    c.etp = listed_value(etp, lists.etp, "etp", "--etp");
  }
  c.recompute =
      listed_value(recompute, recompute_list(lists), "the recompute (rc=...)", "--recompute");
  c.sharding = listed_value(sharding, sharding_list(lists), "the sharding", "--sharding");
  c.precision = listed_value(precision, precision_list(lists), "the precision", "--precision");
  return c;
}

std::string explain_combination(const TransformerModel& model, const PlanLists& lists,
                                const HardwareProfile& hw, const Combination& c) {
  const CombinationOutcome o = check_combination(model, lists, c);
  const std::string label = combination_label(c, label_axes(lists, false));
  if (!o.plan) {
    return fmt::format("{}: rejected by rule [{}]: {}\n", label, o.rejection.rule,
                       in_flag_words("sweep", o.rejection.reason));
  }
  const SweepRow row = evaluate_plan(model, *o.plan, hw);
  std::string s = fmt::format("{}: valid, plan {} ({} microbatches)\n", label,
                              plan_label(*o.plan, label_axes(lists, model.moe.has_value())),
                              microbatches(*o.plan));
  s += fmt::format("  memory: peak {:.2f} GB on pipeline rank {} of {:.2f} GB: {}\n", row.mem_gb,
                   row.peak_rank, hw.memory_bytes / 1e9,
                   row.oom ? "OOM, so the sweep does not time it" : "fits");
  if (row.timed) {
    s += fmt::format("  step time {:.6f} s, MFU {:.1f} %, critical path {}\n", row.step_time_s,
                     100 * row.mfu, row.critical_path);
    if (row.moe) {
      const MoeBreakdown& b = row.moe_stats;
      s += fmt::format(
          "  moe per rank: dispatch {:.6f} s and combine {:.6f} s (the EP all-to-alls, forward "
          "and backward), expert compute {:.6f} s (the grouped expert GEMMs and their "
          "activation), exposed ep comm {:.6f} s ({:.1f} % of the all-to-all hidden behind "
          "compute), "
          "imbalance {:.2f} (the busiest EP rank's token copies over the mean)\n",
          b.dispatch_s, b.combine_s, b.expert_compute_s, b.exposed_ep_comm_s,
          100 * b.hidden_fraction, b.imbalance);
    }
  } else if (!row.oom) {
    s += fmt::format("  {}\n", row.critical_path);  // "not simulated: ..."
  }
  return s;
}

std::function<void(std::size_t, std::size_t)> progress_bar(std::ostream& err, bool enabled) {
  const auto started = std::chrono::steady_clock::now();
  return [&err, enabled, started](std::size_t done, std::size_t total) {
    if (!enabled) return;
    const std::size_t width = 40, filled = total == 0 ? width : done * width / total;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const std::string eta =
        done == 0 ? "ETA -:--"
                  : fmt::format("ETA {}", minutes(elapsed * static_cast<double>(total - done) /
                                                  static_cast<double>(done)));
    err << fmt::format("\r[{}{}] {}/{} plans, {} elapsed, {}  ", std::string(filled, '#'),
                       std::string(width - filled, ' '), done, total, minutes(elapsed), eta);
    if (done == total) err << "\n";
    err.flush();
  };
}

}  // namespace meshsim
