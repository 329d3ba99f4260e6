#include <doctest/doctest.h>

#include "schedules/model_catalog.hpp"

using namespace meshsim;

namespace {

ParameterCount count(std::string_view name) {
  const auto m = builtin_model(name);
  REQUIRE(m.has_value());
  return count_parameters(*m);
}

double billions(std::int64_t n) {
  return static_cast<double>(n) / 1e9;
}

}  // namespace

// Totals against the model cards (sources in schedules/moe_catalog.cpp).
TEST_CASE("moe catalog: mixtral-8x7b, 46.7B total, 12.9B active") {
  const ParameterCount c = count("mixtral-8x7b");
  // attention 4096·(4096 + 2·1024) + 4096² = 41,943,040
  CHECK(c.attention == 41'943'040);
  // 8 experts x 3·4096·14336 + router 4096·8 = 1,409,286,144 + 32,768
  CHECK(c.moe_mlp == 1'409'318'912);
  CHECK(c.moe_layers == 32);
  // 32 · (41,943,040 + 1,409,318,912 + 8192) + 2 · 32000 · 4096 + 4096 = 46,702,792,704
  CHECK(c.total == 46'702'792'704);
  CHECK(billions(c.total) == doctest::Approx(46.7).epsilon(0.01));
  // active: total - 32 · 6 · 176,160,768 = 12,879,925,248 (the card: 12.9B)
  CHECK(c.active == 12'879'925'248);
}

TEST_CASE("moe catalog: totals within 1-2 % of the published ones") {
  // Mixtral 8x22B: 141B; 56 · (88,080,384 + 8·301,989,888 + 49,152 + 12,288) + 2·32000·6144.
  CHECK(billions(count("mixtral-8x22b").total) == doctest::Approx(141.0).epsilon(0.01));
  // Qwen2-57B-A14B: 57B total, 14B active (the name); q/k/v biases and the shared-expert gate
  // left out (< 0.001 %).
  const ParameterCount q2 = count("qwen2-57b-a14b");
  CHECK(billions(q2.total) == doctest::Approx(57.4).epsilon(0.01));
  CHECK(billions(q2.active) == doctest::Approx(14.2).epsilon(0.02));
  // Qwen3-30B-A3B: 30.5B total, 3.3B active (the model card).
  const ParameterCount q30 = count("qwen3-30b-a3b");
  CHECK(billions(q30.total) == doctest::Approx(30.5).epsilon(0.01));
  CHECK(billions(q30.active) == doctest::Approx(3.3).epsilon(0.02));
  // Qwen3-235B-A22B: 235B total, 22B active.
  const ParameterCount q235 = count("qwen3-235b-a22b");
  CHECK(billions(q235.total) == doctest::Approx(235.0).epsilon(0.01));
  CHECK(billions(q235.active) == doctest::Approx(22.0).epsilon(0.02));
  // gpt-oss-120b: 116.83B total, 5.13B active (the model card's table, which counts the
  // unembedding but not the input embedding as active).
  const ParameterCount oss = count("gpt-oss-120b");
  CHECK(billions(oss.total) == doctest::Approx(116.83).epsilon(0.01));
  CHECK(billions(oss.active - oss.embedding) == doctest::Approx(5.13).epsilon(0.02));
  // Llama 4 Scout: 109B total and 17B active count the vision encoder, which a text model has
  // not: the text model is 1.1 % smaller.
  const ParameterCount scout = count("llama4-scout");
  CHECK(billions(scout.total) == doctest::Approx(109.0).epsilon(0.02));
  CHECK(billions(scout.total) < 109.0);
  CHECK(billions(scout.active) == doctest::Approx(17.0).epsilon(0.02));
}

TEST_CASE("moe catalog: deepseek-v3, 671B + 14B MTP, 37B activated") {
  const auto m = builtin_model("deepseek-v3");
  REQUIRE(m.has_value());
  CHECK(moe_layer_count(*m) == 58);  // 61 layers, the first 3 dense
  // Node-limited routing: config.json's n_group 8, topk_group 4.
  CHECK(m->moe->router_groups == 8);
  CHECK(m->moe->router_group_topk == 4);
  const ParameterCount c = count("deepseek-v3");
  // MLA: q down 7168·1536 + norm 1536 + q up 1536·128·192 + kv down 7168·576 + norm 512 +
  // kv up 512·128·256 + out 128·128·7168 = 187,107,328
  CHECK(c.attention == 187'107'328);
  // one MoE MLP: 257 experts x 3·7168·2048 + router 7168·256 = 11,320,164,352
  CHECK(c.moe_mlp == 11'320'164'352);
  // 61 · (187,107,328 + 14,336) + 3 · 3·7168·18432 + 58 · 11,320,164,352 + 2 · 129280·7168
  // + 7168 = 671,026,404,352
  CHECK(c.total == 671'026'404'352);
  CHECK(billions(c.total) == doctest::Approx(671.0).epsilon(0.001));
  CHECK(billions(c.active) == doctest::Approx(37.0).epsilon(0.02));
  // MTP: 3 norms + 2·7168² + one MoE layer; the report's 14B also holds the shared embedding and
  // head copies (1.85B) of the released checkpoint.
  CHECK(billions(c.mtp + 2 * 129280LL * 7168) == doctest::Approx(14.0).epsilon(0.05));
}
