#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "schedules/model_catalog.hpp"
#include "sim/error.hpp"

using namespace meshsim;
using nlohmann::json;

namespace {

std::string parse_error(const json& j) {
  try {
    (void)model_from_json(j, "m.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

json small_moe() {
  return json{{"schema_version", 1},
              {"name", "tiny-moe"},
              {"layers", 6},
              {"hidden", 64},
              {"heads", 4},
              {"kv_heads", 2},
              {"ffn_hidden", 256},
              {"vocab", 1000},
              {"seq_len", 128},
              {"gated_mlp", true},
              {"tied_embeddings", false},
              {"moe",
               {{"experts", 8},
                {"top_k", 2},
                {"expert_ffn", 32},
                {"shared_experts", 1},
                {"shared_ffn", 64},
                {"first_dense_layers", 1},
                {"layer_freq", 2}}}};
}

}  // namespace

TEST_CASE("moe model: which layers are MoE layers") {
  const TransformerModel m = model_from_json(small_moe(), "m.json");
  // first_dense_layers 1, layer_freq 2: layers 1, 3, 5 of 0..5
  CHECK_FALSE(is_moe_layer(m, 0));
  CHECK(is_moe_layer(m, 1));
  CHECK_FALSE(is_moe_layer(m, 2));
  CHECK(is_moe_layer(m, 3));
  CHECK(is_moe_layer(m, 5));
  CHECK(moe_layer_count(m) == 3);
  TransformerModel dense = m;
  dense.moe.reset();
  CHECK(moe_layer_count(dense) == 0);
  CHECK_FALSE(is_moe_layer(dense, 1));
}

TEST_CASE("moe model: parameters of the MoE MLP, one expert, the active path") {
  const TransformerModel m = model_from_json(small_moe(), "m.json");
  // routed expert 3·64·32 = 6144; 8 of them + shared 3·64·64 = 12288 + router 64·8 = 512
  CHECK(routed_expert_parameters(m) == 6144);
  CHECK(moe_mlp_parameters(m) == 8 * 6144 + 12288 + 512);
  // active matmul: router 512 + 2 experts 12288 + shared 12288
  CHECK(moe_active_matmul_parameters(m) == 512 + 2 * 6144 + 12288);
  const ParameterCount c = count_parameters(m);
  // attention 2·64·64 + 2·64·32 = 12288, norms 128; dense MLP 3·64·256 = 49152
  CHECK(c.total == 3 * (12288 + 128 + 49152) + 3 * (12288 + 128 + 61952) + 2 * 1000 * 64 + 64);
  CHECK(c.active == c.total - 3 * 6 * 6144);
  // matmul: 3 dense (12288 + 49152) + 3 MoE (12288 + 25088) + head 64000
  CHECK(matmul_parameters(m) == 3 * (12288 + 49152) + 3 * (12288 + 25088) + 64000);
}

TEST_CASE("moe model: MLA parameters and its attention FLOPs") {
  json j = small_moe();
  j["mla"] = {{"q_lora_rank", 16},
              {"kv_lora_rank", 8},
              {"qk_nope_head_dim", 16},
              {"qk_rope_head_dim", 8},
              {"v_head_dim", 16}};
  const TransformerModel m = model_from_json(j, "m.json");
  // q 64·16 + 16 + 16·4·24; kv 64·(8 + 8) + 8 + 8·4·(16 + 16); out 4·16·64
  CHECK(mla_parameters(m) == 1024 + 16 + 1536 + 1024 + 8 + 1024 + 4096);
  // attention term: 6 · L · a·(d_qk + d_v)/2 · (s + 1) = 6 · 6 · 4·40/2 · 129
  CHECK(training_flops_per_token(m, 128) - 6.0 * static_cast<double>(matmul_parameters(m)) ==
        6.0 * 6 * 80 * 129);
}

TEST_CASE("moe model: JSON round trip and errors naming the field") {
  json j = small_moe();
  j["kv_channels"] = 32;
  j["mtp_layers"] = 1;
  const TransformerModel m = model_from_json(j, "m.json");
  CHECK(m.q_width() == 128);  // 4 heads x 32 channels, wider than hidden 64
  CHECK(model_from_json(to_json(m), "rt") == m);
  json bad = small_moe();
  bad["moe"]["top_k"] = 9;
  CHECK(parse_error(bad) == "m.json: field 'moe.top_k': expected 1 to experts (8), got 9");
  bad = small_moe();
  bad["moe"]["shared_ffn"] = 0;
  CHECK(parse_error(bad).find("'moe.shared_ffn'") != std::string::npos);
  bad = small_moe();
  bad["moe"]["first_dense_layers"] = 6;
  CHECK(parse_error(bad).find("'moe.first_dense_layers'") != std::string::npos);
  bad = small_moe();
  bad["moe"]["expertz"] = 1;
  CHECK(parse_error(bad).find("expertz") != std::string::npos);
}

TEST_CASE("moe model: group-limited routing fields, round trip and errors") {
  json j = small_moe();  // 8 experts, top 2
  j["moe"]["router_groups"] = 4;
  j["moe"]["router_group_topk"] = 2;
  const TransformerModel m = model_from_json(j, "m.json");
  CHECK(m.moe->router_groups == 4);
  CHECK(m.moe->router_group_topk == 2);
  CHECK(model_from_json(to_json(m), "rt") == m);
  // Without them the JSON form carries neither key.
  CHECK_FALSE(to_json(model_from_json(small_moe(), "m.json"))["moe"].contains("router_groups"));
  json bad = j;
  bad["moe"].erase("router_group_topk");
  CHECK(parse_error(bad).find("router_groups and router_group_topk together") != std::string::npos);
  bad = j;
  bad["moe"]["router_groups"] = 3;  // does not divide 8 experts
  CHECK(parse_error(bad).find("'moe.router_groups'") != std::string::npos);
  bad = j;
  bad["moe"]["router_group_topk"] = 5;  // more than 4 groups
  CHECK(parse_error(bad).find("'moe.router_group_topk'") != std::string::npos);
  bad = j;
  bad["moe"]["router_groups"] = 8;  // 1 group of 1 expert chosen: fewer than top_k 2
  bad["moe"]["router_group_topk"] = 1;
  CHECK(parse_error(bad).find("'moe.router_group_topk'") != std::string::npos);
}
