#include "tools/published_sharding.hpp"

#include <fmt/format.h>

#include "schedules/sharding.hpp"
#include "sim/error.hpp"
#include "tools/sharding_flags.hpp"

namespace meshsim {
namespace {

using json = nlohmann::json;

// What the source's words in parallel.sharding say.
enum class Words { absent, none, fsdp, hsdp, zero1, zero2, zero3, unknown };

bool given(const json& par, const char* field) {
  return par.is_object() && par.contains(field) && !par.at(field).is_null();
}

Words words_of(const json& par) {
  if (!given(par, "sharding")) return Words::absent;
  if (!par.at("sharding").is_string()) {
    throw InputError(fmt::format(
        "field 'parallel.sharding': expected the source's words (FSDP, FSDP2, HSDP, ZeRO-1/2/3, "
        "none), got {}",
        par.at("sharding").dump()));
  }
  const std::string w = published_fields::squeezed(par.at("sharding").get<std::string>());
  if (w.empty() || w == "none" || w == "ddp") return Words::none;
  if (w == "fsdp" || w == "fsdp2" || w == "fullyshard") return Words::fsdp;
  if (w == "hsdp" || w == "hsdp2") return Words::hsdp;
  if (w == "zero1" || w == "zerostage1") return Words::zero1;
  if (w == "zero2" || w == "zerostage2") return Words::zero2;
  if (w == "zero3" || w == "zerostage3") return Words::zero3;
  return Words::unknown;
}

// parallel.fsdp: nullopt when absent or null.
std::optional<int> group_size(const json& par) {
  if (!given(par, "fsdp")) return std::nullopt;
  const json& v = par.at("fsdp");
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > (1 << 20)) {
    throw InputError(fmt::format(
        "field 'parallel.fsdp': expected the sharding group size, an integer from 0 (no FSDP) to "
        "1048576, got {}",
        v.dump()));
  }
  return static_cast<int>(v.get<std::int64_t>());
}

// parallel.reshard_after_forward: null or absent is FSDP2's default, true.
bool reshard_after_forward(const json& par) {
  if (!given(par, "reshard_after_forward")) return true;
  const json& v = par.at("reshard_after_forward");
  if (!v.is_boolean()) {
    throw InputError(fmt::format(
        "field 'parallel.reshard_after_forward': expected true, false or null, got {}", v.dump()));
  }
  return v.get<bool>();
}

std::string text_of(const json& par) {
  return given(par, "sharding") ? par.at("sharding").get<std::string>() : "";
}

// FSDP over a group of n of the dp x cp ranks: --fsdp, or --hsdp R with R = dp x cp / n.
std::variant<ShardingPlan, SkippedRun> fsdp_group(int n, Words words, const json& par,
                                                  const StepPlan& p, bool reshard,
                                                  std::vector<std::string>& notes) {
  if (words == Words::none || words == Words::zero1 || words == Words::zero2) {
    throw InputError(fmt::format(
        "field 'parallel.sharding': '{}' contradicts parallel.fsdp {} (parameters sharded over {} "
        "ranks)",
        text_of(par), n, n));
  }
  const int ranks = p.dp * p.cp;
  if (ranks % n != 0) {
    throw InputError(fmt::format(
        "field 'parallel.fsdp': {} does not divide dp x cp = {} x {} = {}, the ranks that shard", n,
        p.dp, p.cp, ranks));
  }
  const int replicas = ranks / n;
  if (p.dp % replicas != 0) {
    return SkippedRun{
        fmt::format("parallel.fsdp {} of dp x cp = {} leaves {} replicas, which do not divide dp "
                    "{} (meshsim replicates over dp)",
                    n, ranks, replicas, p.dp)};
  }
  if (replicas > 1) {
    notes.push_back(fmt::format(
        "HSDP: sharded over parallel.fsdp = {} ranks, replicated over dp x cp / {} = {}", n, n,
        replicas));
  }
  return fsdp_sharding(replicas, reshard);
}

// The sharding the fields state, or why it cannot be expressed.
std::variant<ShardingPlan, SkippedRun> sharding_of(const json& par, const StepPlan& p,
                                                   std::vector<std::string>& notes) {
  const Words words = words_of(par);
  const std::optional<int> n = group_size(par);
  const bool reshard = reshard_after_forward(par);
  if (words == Words::unknown) {
    return SkippedRun{
        fmt::format("sharding '{}' is not one meshsim maps (FSDP, FSDP2, HSDP, ZeRO-1/2/3, none)",
                    text_of(par))};
  }
  if (n && *n > 0) return fsdp_group(*n, words, par, p, reshard, notes);
  if (n && (words == Words::fsdp || words == Words::hsdp)) {
    throw InputError(
        fmt::format("field 'parallel.fsdp': 0 (no FSDP) contradicts sharding '{}'", text_of(par)));
  }
  ShardingPlan s;
  switch (words) {
    case Words::fsdp:
      notes.push_back(
          fmt::format("FSDP over dp x cp = {} ranks (parallel.fsdp null: one replica, FSDP's "
                      "default)",
                      p.dp * p.cp));
      return fsdp_sharding(1, reshard);
    case Words::hsdp:
      return SkippedRun{"HSDP without its sharding group size (parallel.fsdp)"};
    case Words::zero1:
      s.zero = 1;
      break;
    case Words::zero2:
      s.zero = 2;
      break;
    case Words::zero3:
      s.zero = 3;
      break;
    default:
      break;
  }
  s.reshard_after_forward = reshard;
  return s;
}

}  // namespace

std::optional<SkippedRun> published_sharding_plan(const json& par, StepPlan& plan,
                                                  std::vector<std::string>& notes) {
  const auto sharding = sharding_of(par, plan, notes);
  if (const auto* skipped = std::get_if<SkippedRun>(&sharding)) return *skipped;
  const ShardingPlan& s = std::get<ShardingPlan>(sharding);
  if (!s.reshard_after_forward && s.zero != 3) {
    throw InputError(
        "field 'parallel.reshard_after_forward': false needs FSDP or ZeRO-3 (parallel.fsdp or "
        "parallel.sharding): only sharded parameters are resharded");
  }
  if (s.zero == 0) return std::nullopt;  // the distributed optimizer as parallel says
  if (given(par, "distributed_optimizer") && par.at("distributed_optimizer").is_boolean() &&
      !par.at("distributed_optimizer").get<bool>()) {
    throw InputError(fmt::format(
        "field 'parallel.distributed_optimizer': false contradicts the sharding ({}), which "
        "shards the optimizer state",
        describe_sharding(s)));
  }
  apply_sharding(plan, s);
  return std::nullopt;
}

}  // namespace meshsim
