// Routing skew, capacity and token dropping of the MoE layers (schedules/moe_plan.hpp).
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "schedules/moe_plan.hpp"
#include "sim/error.hpp"
#include "sim/json_fields.hpp"

namespace meshsim {

namespace {

// Shares of the token copies per expert (sum 1).
std::vector<double> shares(const Routing& r, int experts) {
  std::vector<double> s(static_cast<std::size_t>(experts), 1.0);
  if (r.kind == Routing::Kind::zipf) {
    for (int j = 0; j < experts; ++j) s[static_cast<std::size_t>(j)] = std::pow(j + 1.0, -r.zipf_s);
  } else if (r.kind == Routing::Kind::table) {
    if (r.tokens_per_expert.size() != static_cast<std::size_t>(experts)) {
      throw InputError(fmt::format(
          "`routing` {}: expected {} entries in tokens_per_expert (one per routed expert), got {}",
          r.origin, experts, r.tokens_per_expert.size()));
    }
    s = r.tokens_per_expert;
  }
  const double total = std::accumulate(s.begin(), s.end(), 0.0);
  for (double& x : s) x /= total;
  return s;
}

}  // namespace

Routing parse_routing(std::string_view text) {
  Routing r;
  r.origin = std::string(text);
  if (text == "uniform") return r;
  if (text.starts_with("zipf:")) {
    const std::string_view v = text.substr(5);
    double s = -1;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), s);
    if (ec != std::errc() || end != v.data() + v.size() || !(s >= 0) || s > 16) {
      throw InputError(fmt::format("`routing`: expected zipf:S with 0 <= S <= 16, got '{}'", text));
    }
    r.kind = Routing::Kind::zipf;
    r.zipf_s = s;
    return r;
  }
  const std::string path(text);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    const char* why = std::filesystem::is_directory(path, ec) ? " (a folder)"
                      : std::filesystem::exists(path, ec)     ? " (not a regular file)"
                                                              : " (no such file)";
    throw InputError(fmt::format(
        "`routing`: expected uniform, zipf:S or a JSON file of tokens_per_expert, got '{}'{}", text,
        why));
  }
  const nlohmann::json j = parse_json_text(read_text_file(path), path);
  const JsonField top(j, path);
  if (!j.is_object()) top.fail("an object with tokens_per_expert");
  top.expect_keys({"tokens_per_expert"});
  const JsonField list = top["tokens_per_expert"];
  list.expect_array();
  r.kind = Routing::Kind::table;
  double total = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const double x = list.at(i).as_number();
    if (!(x >= 0) || !std::isfinite(x)) list.at(i).fail("a finite number >= 0");
    r.tokens_per_expert.push_back(x);
    total += x;
  }
  if (!(total > 0)) list.fail("at least one positive entry");
  return r;
}

ExpertLoad expert_load(const MoeBlock& moe, const MoePlan& plan, std::int64_t tokens) {
  const int experts = moe.experts;
  const double copies = static_cast<double>(tokens) * moe.top_k * plan.ep;  // the EP group's
  const std::vector<double> s = shares(plan.routing, experts);
  ExpertLoad load;
  const double cap = plan.capacity_factor > 0 ? plan.capacity_factor * copies / experts : 0;
  for (const double x : s) {
    const double n = copies * x;
    const double kept = cap > 0 ? std::min(n, cap) : n;
    load.tokens.push_back(kept);
    load.dropped += n - kept;
  }
  const int local = experts / plan.ep;
  for (int q = 0; q < plan.ep; ++q) {
    const auto first = load.tokens.begin() + std::ptrdiff_t{q} * local;
    load.per_rank.push_back(std::accumulate(first, first + local, 0.0));
  }
  const double mean = std::accumulate(load.per_rank.begin(), load.per_rank.end(), 0.0) / plan.ep;
  load.imbalance = *std::max_element(load.per_rank.begin(), load.per_rank.end()) / mean;
  return load;
}

}  // namespace meshsim
