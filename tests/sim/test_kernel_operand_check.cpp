#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "schedules/pipeline.hpp"
#include "schedules/ring_attention.hpp"
#include "schedules/tp_linear.hpp"
#include "sim/error.hpp"
#include "sim/json_fields.hpp"
#include "sim/kernel_operand_check.hpp"
#include "sim/program_json.hpp"

using namespace meshsim;
using nlohmann::json;

namespace {

Program ring_program(RingVariant variant) {
  RingAttentionConfig c;
  c.cp = 4;
  c.seq = 64;
  c.heads = 4;
  c.kv_heads = 2;
  c.head_dim = 8;
  c.variant = variant;
  return build_ring_attention(c);
}

Program tp_program(TpLinearKind kind, bool bias) {
  TpLinearConfig c;
  c.tp = 2;
  c.tokens = 16;
  c.in_features = 8;
  c.out_features = 12;
  c.kind = kind;
  c.bias = bias;
  return build_tp_linear(c);
}

json saved(const Program& p) {
  return json::parse(program_to_text(p));
}

std::string load_error(const json& j) {
  try {
    program_from_json(j, "p.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Index of the first op calling kernel `kind`.
std::size_t first_op(const json& j, std::string_view kind) {
  for (std::size_t i = 0; i < j["ops"].size(); ++i) {
    const json& op = j["ops"][i];
    if (op.contains("kernel") && op["kernel"]["kind"] == kind) return i;
  }
  FAIL("no ", kind, " op");
  return 0;
}

}  // namespace

TEST_CASE("the builders' Programs pass the operand check as saved") {
  for (const Program& p :
       {ring_program(RingVariant::ring), ring_program(RingVariant::zigzag),
        tp_program(TpLinearKind::column, false), tp_program(TpLinearKind::row, true)}) {
    CHECK(load_error(saved(p)).empty());
  }
}

TEST_CASE("an op with an operand removed fails naming the op and the expected count") {
  json j = saved(ring_program(RingVariant::ring));
  const std::size_t i = first_op(j, "attention_fwd");
  j["ops"][i]["kernel"]["inputs"].erase(1);
  const std::string name = j["ops"][i]["name"];
  CHECK(load_error(j) == "p.json: ops[" + std::to_string(i) + "] '" + name +
                             "': attention_fwd takes 2 input slots and 2 output slots, got 1 and "
                             "2");
}

TEST_CASE("a slot whose shape no longer fits its GEMM fails naming the op and the slot") {
  json j = saved(tp_program(TpLinearKind::column, false));
  const std::size_t i = first_op(j, "gemm");
  const json& kernel = j["ops"][i]["kernel"];
  const int a = kernel["inputs"][0];
  const std::int64_t m = kernel["gemm"]["m"], k = kernel["gemm"]["k"];
  const bool trans_a = kernel["gemm"]["trans_a"];
  j["slots"][static_cast<std::size_t>(a)]["shape"] = json::array({3});
  const std::string expected =
      trans_a ? "a [" + std::to_string(k) + ", " + std::to_string(m) + "] matrix"
              : "a [" + std::to_string(m) + ", " + std::to_string(k) + "] matrix";
  const std::string slot_name = j["slots"][static_cast<std::size_t>(a)]["name"];
  CHECK(load_error(j) == "p.json: ops[" + std::to_string(i) + "] '" +
                             std::string(j["ops"][i]["name"]) + "': gemm expects slot " +
                             std::to_string(a) + " '" + slot_name + "' to be " + expected +
                             ", its shape is [3]");
}

TEST_CASE("attention operands must keep their rank layout; lse_merge writes into its inputs") {
  json j = saved(ring_program(RingVariant::ring));
  const std::size_t fwd = first_op(j, "attention_fwd");
  const int q = j["ops"][fwd]["kernel"]["inputs"][0];
  j["slots"][static_cast<std::size_t>(q)]["shape"].erase(0);  // [tokens, heads, head_dim]
  CHECK(load_error(j).find("attention_fwd expects slot " + std::to_string(q)) != std::string::npos);
  json m = saved(ring_program(RingVariant::ring));
  const std::size_t merge = first_op(m, "lse_merge");
  m["ops"][merge]["kernel"]["outputs"][0] = m["ops"][merge]["kernel"]["inputs"][0];
  CHECK(load_error(m).find("lse_merge writes into its input 2") != std::string::npos);
}
