#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "schedules/model_catalog.hpp"
#include "sim/error.hpp"

using namespace meshsim;
using nlohmann::json;

namespace {

TransformerModel builtin(std::string_view name) {
  const auto m = builtin_model(name);
  REQUIRE(m.has_value());
  return *m;
}

// The InputError message of parsing j, or "" when it parses.
std::string parse_error(const json& j) {
  try {
    (void)model_from_json(j, "m.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("model catalog: built-ins carry the published shapes") {
  CHECK(builtin_model_names() ==
        std::vector<std::string>{"llama3-8b", "llama3-70b", "llama3-405b", "gpt3-175b",
                                 "mixtral-8x7b", "mixtral-8x22b", "qwen2-57b-a14b", "qwen3-30b-a3b",
                                 "qwen3-235b-a22b", "deepseek-v3", "gpt-oss-120b", "llama4-scout"});
  const auto l8 = builtin("llama3-8b");
  CHECK(l8.layers == 32);
  CHECK(l8.hidden == 4096);
  CHECK(l8.heads == 32);
  CHECK(l8.kv_heads == 8);
  CHECK(l8.ffn_hidden == 14336);
  CHECK(l8.vocab == 128256);
  CHECK(l8.gated_mlp);
  CHECK_FALSE(l8.tied_embeddings);
  CHECK(l8.head_dim() == 128);    // 4096 / 32
  CHECK(l8.kv_hidden() == 1024);  // 8 x 128
  const auto g = builtin("gpt3-175b");
  CHECK(g.kv_heads == g.heads);  // MHA
  CHECK_FALSE(g.gated_mlp);
  CHECK(g.tied_embeddings);
  CHECK(g.seq_len == 2048);
  CHECK_FALSE(builtin_model("llama3-7b").has_value());
}

TEST_CASE("model catalog: exact parameter counts") {
  SUBCASE("llama3-8b = 8,030,261,248") {
    const ParameterCount c = count_parameters(builtin("llama3-8b"));
    // attention: q 4096² + k 4096·1024 + v 4096·1024 + o 4096² = 41,943,040
    CHECK(c.attention == 41'943'040);
    // SwiGLU: 3 · 4096 · 14336 = 176,160,768
    CHECK(c.mlp == 176'160'768);
    // 2 RMSNorms: 2 · 4096
    CHECK(c.norms == 8'192);
    CHECK(c.per_layer == 218'112'000);
    // embedding 128256 · 4096 = 525,336,576, untied head the same, final norm 4096:
    // 32 · 218,112,000 + 2 · 525,336,576 + 4096 = 8,030,261,248
    CHECK(c.embedding == 525'336'576);
    CHECK(c.output_head == 525'336'576);
    CHECK(c.total == 8'030'261'248);
    CHECK(static_cast<double>(c.total) == doctest::Approx(8.03e9).epsilon(0.001));
  }
  SUBCASE("llama3-70b = 70,553,706,496") {
    const ParameterCount c = count_parameters(builtin("llama3-70b"));
    // per layer: 2 · 8192² + 2 · 8192 · 1024 + 3 · 8192 · 28672 + 2 · 8192 = 855,654,400
    CHECK(c.per_layer == 855'654'400);
    // 80 · 855,654,400 + 2 · 128256 · 8192 + 8192
    CHECK(c.total == 70'553'706'496);
    CHECK(static_cast<double>(c.total) == doctest::Approx(70.6e9).epsilon(0.001));
  }
  SUBCASE("llama3-405b = 405,853,388,800") {
    const ParameterCount c = count_parameters(builtin("llama3-405b"));
    // per layer: 2 · 16384² + 2 · 16384 · 1024 + 3 · 16384 · 53248 + 2 · 16384 = 3,187,703,808
    CHECK(c.per_layer == 3'187'703'808);
    // 126 · 3,187,703,808 + 2 · 128256 · 16384 + 16384
    CHECK(c.total == 405'853'388'800);
  }
  SUBCASE("gpt3-175b = 174,604,259,328") {
    const ParameterCount c = count_parameters(builtin("gpt3-175b"));
    // attention 4 · 12288² + biases 4 · 12288 = 604,028,928
    CHECK(c.attention == 604'028'928);
    // MLP 2 · 12288 · 49152 + biases 49152 + 12288 = 1,208,020,992
    CHECK(c.mlp == 1'208'020'992);
    // 2 LayerNorms, scale + bias: 4 · 12288
    CHECK(c.norms == 49'152);
    // 12h² + 13h = 1,812,099,072 per layer
    CHECK(c.per_layer == 1'812'099'072);
    // word 50257 · 12288 + learned positions 2048 · 12288 = 642,723,840; tied: no head
    CHECK(c.embedding == 642'723'840);
    CHECK(c.output_head == 0);
    CHECK(c.final_norm == 24'576);
    // 96 · 1,812,099,072 + 642,723,840 + 24,576
    CHECK(c.total == 174'604'259'328);
    CHECK(static_cast<double>(c.total) == doctest::Approx(174.6e9).epsilon(0.001));
  }
}

TEST_CASE("model catalog: training FLOPs per token, causal and full attention") {
  const auto l8 = builtin("llama3-8b");
  // Matmul parameters: 32 · (41,943,040 + 176,160,768) + head 128256 · 4096 = 7,504,658,432
  // (no norms, no input-embedding lookup).
  CHECK(matmul_parameters(l8) == 7'504'658'432);
  // Causal: 6 · 7,504,658,432 + 6 · 32 · 4096 · (8192 + 1) = 45,027,950,592 + 6,443,237,376
  CHECK(training_flops_per_token(l8, 8192) == 51'471'187'968.0);
  // Full (PaLM): 6N + 12 · 32 · 4096 · 8192 = 45,027,950,592 + 12,884,901,888
  CHECK(training_flops_per_token(l8, 8192, AttentionFlops::full) == 57'912'852'480.0);
  // The causal term is the full one halved, up to the diagonal: 6Lh(s+1) = 12Lhs/2 + 6Lh.
  const double causal_attn = training_flops_per_token(l8, 8192) - 6.0 * 7'504'658'432.0;
  const double full_attn =
      training_flops_per_token(l8, 8192, AttentionFlops::full) - 6.0 * 7'504'658'432.0;
  CHECK(causal_attn == full_attn / 2 + 6.0 * 32 * 4096);
  // GPT-3 (tied): the head's GEMM still counts: 96 · 12h² + 50257 · 12288.
  const auto g = builtin("gpt3-175b");
  CHECK(matmul_parameters(g) == 96LL * 12 * 12288 * 12288 + 50257LL * 12288);
}

TEST_CASE("model catalog: JSON round trip") {
  for (const auto& name : builtin_model_names()) {
    CAPTURE(name);
    const auto m = builtin(name);
    const json j = to_json(m);
    CHECK(j["schema_version"] == kModelSchemaVersion);
    CHECK(model_from_json(j, "rt") == m);
    CHECK(model_from_json(json::parse(j.dump()), "rt") == m);
  }
  // Optional fields default to a Llama-style model.
  json j = to_json(builtin("llama3-8b"));
  for (const char* k : {"norm", "linear_bias", "position_embedding", "dropout"}) j.erase(k);
  CHECK(model_from_json(j, "m.json") == builtin("llama3-8b"));
}

TEST_CASE("model catalog: one-line errors name the field") {
  const json good = to_json(builtin("llama3-70b"));
  auto with = [&](const char* key, json value) {
    json j = good;
    j[key] = std::move(value);
    return parse_error(j);
  };
  CHECK(parse_error(good).empty());
  {
    json j = good;
    j.erase("kv_heads");
    CHECK(parse_error(j) == "m.json: field 'kv_heads': missing");
  }
  CHECK(with("schema_version", 2) == "m.json: field 'schema_version': expected 1");
  CHECK(with("layers", 0) == "m.json: field 'layers': expected an integer in [1, 65536]");
  CHECK(with("hidden", "8192") == "m.json: field 'hidden': expected an integer in [1, 1048576]");
  CHECK(with("gated_mlp", 1) == "m.json: field 'gated_mlp': expected true or false");
  CHECK(with("kv_heads", 7) ==
        "m.json: field 'kv_heads': expected a divisor of heads (64) (grouped-query attention "
        "shares each KV head among heads / kv_heads query heads), got 7");
  CHECK(with("kv_heads", 128) ==
        "m.json: field 'kv_heads': expected an integer in [1, 64], got 128");
  CHECK(with("heads", 96).find("field 'heads': expected a divisor of hidden (8192)") !=
        std::string::npos);
  CHECK(with("norm", "batchnorm") == "m.json: field 'norm': expected \"rmsnorm\" or \"layernorm\"");
  CHECK(with("position_embedding", 3) ==
        "m.json: field 'position_embedding': expected \"rope\" or \"learned\"");
  CHECK(with("layer", 80) == "m.json: field 'layer': unknown field");
  CHECK(parse_error(json::array()) == "m.json: field '(top)': expected a JSON object (a model)");
  // check_model guards hand-built models the same way.
  TransformerModel m = builtin("llama3-8b");
  m.seq_len = 0;
  CHECK_THROWS_WITH_AS(check_model(m, "cli"),
                       "cli: field 'seq_len': expected an integer in [1, 1073741824], got 0",
                       InputError);
}

TEST_CASE("model catalog: load_model takes a built-in name or a JSON file") {
  CHECK(load_model("llama3-405b").layers == 126);
  TransformerModel custom = builtin("llama3-8b");
  custom.name = "tiny";
  custom.layers = 2;
  const auto path = std::filesystem::temp_directory_path() /
                    fmt::format("meshsim_test_model_{}.json", ::getpid());
  std::ofstream(path) << to_json(custom).dump(2);
  CHECK(load_model(path.string()) == custom);
  std::filesystem::remove(path);
  try {
    (void)load_model("llama-9000");
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) ==
          "llama-9000: not a built-in model (llama3-8b, llama3-70b, llama3-405b, gpt3-175b, "
          "mixtral-8x7b, mixtral-8x22b, qwen2-57b-a14b, qwen3-30b-a3b, qwen3-235b-a22b, "
          "deepseek-v3, gpt-oss-120b, llama4-scout) and not a readable JSON file");
  }
}
