#include "tools/published_moe.hpp"

#include <fmt/format.h>

#include "schedules/moe_model.hpp"
#include "sim/error.hpp"

namespace meshsim {
namespace {

using json = nlohmann::json;
using namespace published_fields;

// count() of a field of the object at `path` ("model.moe"), errors naming the whole path.
std::optional<std::int64_t> count_at(const json& obj, const char* path, const char* field) {
  try {
    return count(obj, field);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", path, e.what()));
  }
}

std::optional<SkippedRun> moe_block(const json& f, int layers, TransformerModel& model,
                                    std::vector<std::string>& notes) {
  const char* path = "model.moe";
  const auto experts = count_at(f, path, "num_experts"), top_k = count_at(f, path, "top_k");
  const auto ffn = count_at(f, path, "expert_ffn_hidden");
  if (!experts || !top_k || !ffn) {
    return SkippedRun{"the source does not give the experts, top-k or expert FFN size"};
  }
  MoeBlock b;
  b.experts = static_cast<int>(std::min<std::int64_t>(*experts, 1 << 20));
  b.top_k = static_cast<int>(std::min<std::int64_t>(*top_k, 1 << 20));
  b.expert_ffn = *ffn;
  const auto shared = count_at(f, path, "shared_experts");
  if (!shared) notes.emplace_back("shared_experts = 0");
  b.shared_experts = static_cast<int>(std::min<std::int64_t>(shared.value_or(0), 1 << 20));
  if (b.shared_experts > 0) {
    const auto shared_ffn = count_at(f, path, "shared_expert_ffn_hidden");
    if (!shared_ffn) return SkippedRun{"the source gives shared experts but not their FFN size"};
    b.shared_ffn = *shared_ffn;
  }
  const auto dense = count_at(f, path, "dense_layers_first");
  if (!dense) notes.emplace_back("dense_layers_first = 0");
  b.first_dense_layers = static_cast<int>(std::min<std::int64_t>(dense.value_or(0), 1 << 20));
  // The schema's own field names for what check_moe (meshsim's model JSON names) would reject: a
  // malformed block is bad input, named as the runs file spells it.
  const auto bad = [&](const char* field, const std::string& expected) {
    throw InputError(fmt::format("{}.{}: expected {}", path, field, expected));
  };
  if (*experts < 1 || *experts > kMaxExperts) {
    bad("num_experts", fmt::format("1 to {}, got {}", kMaxExperts, *experts));
  }
  if (*top_k < 1 || *top_k > *experts) {
    bad("top_k", fmt::format("1 to num_experts ({}), got {}", *experts, *top_k));
  }
  if (b.expert_ffn < 1) bad("expert_ffn_hidden", fmt::format("at least 1, got {}", b.expert_ffn));
  if (b.shared_experts > 0 && b.shared_ffn < 1) {
    bad("shared_expert_ffn_hidden", fmt::format("at least 1, got {}", b.shared_ffn));
  }
  if (b.first_dense_layers >= layers) {
    bad("dense_layers_first",
        fmt::format("0 to layers - 1 ({}), got {}", layers - 1, b.first_dense_layers));
  }
  try {
    check_moe(b, layers, "model.moe");
  } catch (const InputError& e) {
    return SkippedRun{e.what()};
  }
  model.moe = b;
  return std::nullopt;
}

std::optional<SkippedRun> mla_block(const json& f, TransformerModel& model) {
  const char* path = "model.mla";
  MlaBlock a;
  std::int64_t* fields[] = {&a.q_lora_rank, &a.kv_lora_rank, &a.qk_rope_head_dim,
                            &a.qk_nope_head_dim, &a.v_head_dim};
  const char* names[] = {"q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
                         "v_head_dim"};
  for (std::size_t i = 0; i < std::size(fields); ++i) {
    const auto v = count_at(f, path, names[i]);
    if (!v) return SkippedRun{fmt::format("the source does not give model.mla.{}", names[i])};
    *fields[i] = *v;
  }
  try {
    check_mla(a, "model.mla");
  } catch (const InputError& e) {
    return SkippedRun{e.what()};
  }
  model.mla = a;
  return std::nullopt;
}

}  // namespace

bool published_moe_style(const json& m) {
  const auto given = [&](const char* block) {
    return m.is_object() && m.contains(block) && !m.at(block).is_null();
  };
  return given("moe") || given("mla");
}

std::optional<SkippedRun> published_moe_model(const json& m, TransformerModel& model,
                                              std::vector<std::string>& notes) {
  if (const auto d = count(m, "head_dim")) model.kv_channels = *d;
  const bool has_moe = m.is_object() && m.contains("moe") && !m.at("moe").is_null();
  const bool has_mla = m.is_object() && m.contains("mla") && !m.at("mla").is_null();
  for (const auto& [present, name] : {std::pair{has_moe, "moe"}, std::pair{has_mla, "mla"}}) {
    if (present && !m.at(name).is_object()) {
      throw InputError(fmt::format("field 'model.{}': expected an object or null", name));
    }
  }
  if (has_moe) {
    if (auto skipped = moe_block(m.at("moe"), model.layers, model, notes)) return skipped;
  }
  if (has_mla) {
    if (auto skipped = mla_block(m.at("mla"), model)) return skipped;
  }
  try {
    check_model(model, model.name);
  } catch (const InputError& e) {
    return SkippedRun{e.what()};
  }
  return std::nullopt;
}

std::optional<SkippedRun> published_moe_plan(const json& par, const TransformerModel& model,
                                             StepPlan& p, std::vector<std::string>& notes) {
  const auto ep = count_at(par, "parallel", "ep"), etp = count_at(par, "parallel", "etp");
  for (const auto& v : {ep, etp}) {
    if (v && (*v < 1 || *v > (1 << 16))) {
      throw InputError(fmt::format("parallel: ep and etp: expected 1 to 65536, got {}", *v));
    }
  }
  if (!model.moe) {
    if ((ep && *ep > 1) || (etp && *etp > 1)) {
      return SkippedRun{"parallel.ep or parallel.etp above 1 on a model without experts"};
    }
    return std::nullopt;
  }
  p.moe.ep = static_cast<int>(ep.value_or(1));
  if (!ep) notes.emplace_back("ep = 1");
  p.moe.etp = static_cast<int>(etp.value_or(0));
  if (!etp) notes.emplace_back("etp = tp (Megatron-Core's default)");
  const auto words = text(par, "dispatcher");
  const std::string w = lower(words.value_or("alltoall"));
  if (!words) notes.emplace_back("dispatcher alltoall (Megatron-Core's MoE quick start)");
  if (w == "alltoall" || w == "all-to-all") {
    p.moe.dispatcher = TokenDispatcher::alltoall;
  } else if (w == "allgather" || w == "all-gather") {
    p.moe.dispatcher = TokenDispatcher::allgather;
  } else if (w == "flex" || w.find("deepep") != std::string::npos ||
             w.find("hybridep") != std::string::npos) {
    p.moe.dispatcher = TokenDispatcher::flex;
  } else {
    return SkippedRun{fmt::format("dispatcher '{}' is not one meshsim models", *words)};
  }
  if (p.tp > 1 && !p.sequence_parallel && !(par.contains("sp") && par.at("sp").is_boolean())) {
    p.sequence_parallel = true;
    notes.emplace_back("sp on (Megatron-Core requires it for MoE with tensor parallelism)");
  }
  notes.emplace_back("routing uniform, dropless");
  return std::nullopt;
}

}  // namespace meshsim
