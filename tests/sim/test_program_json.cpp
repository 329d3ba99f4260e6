#include <doctest/doctest.h>

#include <random>
#include <string>

#include "schedules/ring_attention.hpp"
#include "schedules/tp_linear.hpp"
#include "sim/comm_plan.hpp"
#include "sim/error.hpp"
#include "sim/json_fields.hpp"
#include "sim/program_json.hpp"
#include "tests/case_sample.hpp"

using namespace meshsim;

namespace {

Program sample_program(KvRotation rotate) {
  RingAttentionConfig c;
  c.cp = 4;
  c.seq = 64;
  c.heads = 4;
  c.kv_heads = 2;
  c.head_dim = 8;
  c.kv_rotation = rotate;
  return build_ring_attention(c);
}

std::string load_error(const std::string& text) {
  try {
    const Program p = program_from_json(parse_json_text(text, "p.json"), "p.json");
    validate_program(p);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("save -> load -> save is byte-identical and loads an equal Program") {
  for (KvRotation r : {KvRotation::p2p, KvRotation::all_gather, KvRotation::all_to_all}) {
    const Program p = sample_program(r);
    const std::string text = program_to_text(p);
    const Program loaded = program_from_json(parse_json_text(text, "mem"), "mem");
    CHECK(loaded == p);
    CHECK(program_to_text(loaded) == text);
  }
}

TEST_CASE("elementwise functions and slot token positions survive the round trip") {
  TpLinearConfig c;
  c.tp = 2;
  c.tokens = 8;
  c.in_features = 4;
  c.out_features = 6;
  c.bias = true;
  const Program p = build_tp_linear(c);
  const std::string text = program_to_text(p);
  CHECK(text.find(R"("fn":"bias_add")") != std::string::npos);
  CHECK(text.find(R"("fn":"bias_grad")") != std::string::npos);
  CHECK(program_from_json(parse_json_text(text, "mem"), "mem") == p);
  // Ring attention's q slot of rank 1 (cp 4, seq 64, zigzag): chunks 1 and 6 of eight 8-token
  // chunks.
  const Program ring = sample_program(KvRotation::p2p);
  CHECK(program_to_text(ring).find(R"("rank":1,"name":"q","dtype":"bf16","shape":[1,16,4,8],)"
                                   R"("tokens":[[8,16],[48,56]])") != std::string::npos);
  CHECK(load_error(std::string(text).replace(text.find("bias_add"), 8, "bias_mul"))
            .find("bias_add, bias_grad, relu or gelu") != std::string::npos);
}

TEST_CASE("element-wise operand counts and mask bytes survive the round trip") {
  TpLinearConfig c;
  c.tp = 2;
  c.bias = true;  // bias_add and bias_grad: element-wise calls
  Program p = build_tp_linear(c);
  for (Op& op : p.ops) {
    auto* call = std::get_if<KernelCall>(&op.body);
    if (call == nullptr || call->kind != KernelKind::elementwise) continue;
    call->shape = VectorShape{std::get<VectorShape>(call->shape).elements, 3, 1};
  }
  const std::string text = program_to_text(p);
  CHECK(text.find(R"("operands":3,"mask_bytes":1)") != std::string::npos);
  CHECK(program_from_json(parse_json_text(text, "mem"), "mem") == p);
  CHECK(load_error(std::string(text).replace(text.find(R"("operands":3)"), 12, R"("operands":0)"))
            .find("operands") != std::string::npos);
}

TEST_CASE("a quantized format survives the round trip; on other kinds it is refused") {
  TpLinearConfig c;
  c.tp = 2;
  Program p = build_tp_linear(c);
  for (Op& op : p.ops) {
    auto* call = std::get_if<KernelCall>(&op.body);
    if (call != nullptr && call->kind == KernelKind::gemm) call->quant = QuantFormat::mxfp8;
  }
  const std::string text = program_to_text(p);
  CHECK(text.find(R"("quant":"mxfp8")") != std::string::npos);
  CHECK(program_from_json(parse_json_text(text, "mem"), "mem") == p);
  CHECK(
      load_error(std::string(text).replace(text.find(R"("quant":"mxfp8")"), 15, R"("quant":"fp7")"))
          .find("quant") != std::string::npos);
  // The unquantized Program writes no "quant" field (saved files stay as they were).
  CHECK(program_to_text(build_tp_linear(c)).find("quant") == std::string::npos);
}

TEST_CASE("the schema version is checked") {
  std::string text = program_to_text(sample_program(KvRotation::p2p));
  text.replace(text.find("\"schema_version\":1"), 18, "\"schema_version\":9");
  CHECK(load_error(text).find("schema_version") != std::string::npos);
}

TEST_CASE("malformed fields are named with their path") {
  const std::string good = program_to_text(sample_program(KvRotation::p2p));
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const auto at = t.find(from);
    REQUIRE(at != std::string::npos);
    t.replace(at, from.size(), to);
    return load_error(t);
  };
  CHECK(with("\"gpus_per_node\":8", "\"gpus_per_node\":0").find("mesh.gpus_per_node") !=
        std::string::npos);
  CHECK(with("\"dtype\":\"bf16\"", "\"dtype\":\"int3\"").find("dtype") != std::string::npos);
  CHECK(with("\"kind\":\"attention_fwd\"", "\"kind\":\"conv\"").find("ops[") != std::string::npos);
  CHECK(with("\"deps\":[]", "\"deps\":[\"x\"]").find("deps[0]") != std::string::npos);
  CHECK(with("\"single_queue\":true", "\"single_queue\":1").find("single_queue") !=
        std::string::npos);
  CHECK(with("\"streams\":", "\"streamz\":").find("streamz") != std::string::npos);
  CHECK(load_error("{").find("not valid JSON") != std::string::npos);
  CHECK(load_error("[]").find("expected an object") != std::string::npos);
}

TEST_CASE("fuzz: any mutation of a valid program loads or fails with InputError") {
  const std::string good = program_to_text(sample_program(KvRotation::all_gather));
  std::mt19937 rng(20261122);
  const std::string alphabet = "{}[],:\"0123456789-e.truefalsnl ";
  int accepted = 0;
  // 1,500 mutations; every kSampleStride-th of them under the sanitizers (tests/case_sample.hpp:
  // 41 s there for all of them).
  const int mutations = 1500 / test::kSampleStride;
  for (int i = 0; i < mutations; ++i) {
    std::string t = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % t.size();
      switch (rng() % 4) {
        case 0:
          t[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          t.erase(at, 1 + rng() % 8);
          break;
        case 2:
          t.insert(at, 1, alphabet[rng() % alphabet.size()]);
          break;
        default:
          t.resize(at);
      }
      if (t.empty()) t = "x";
    }
    try {
      const Program p = program_from_json(parse_json_text(t, "fuzz"), "fuzz");
      validate_program(p);
      ++accepted;
    } catch (const InputError&) {
    }
  }
  MESSAGE("fuzz: " << accepted << " of " << mutations << " mutations still valid");
}

TEST_CASE("a folded group's timed_as survives the round trip; groups without it print none") {
  ProgramBuilder b(Mesh({{"dp", 4}}, 8), false, "folded");
  const StreamId s = b.stream("dp_comm");
  const GroupId g = b.group("dp-cp", {0}, {0, 1, 2, 3});
  b.add(0, s, "grad all-reduce", {},
        CollectiveCall{CollectiveKind::all_reduce, g, 1024, DType::fp32});
  const Program p = std::move(b).finish();
  const std::string text = program_to_text(p);
  CHECK(text.find("\"timed_as\":[0,1,2,3]") != std::string::npos);
  const Program loaded = program_from_json(parse_json_text(text, "mem"), "mem");
  CHECK(loaded == p);
  CHECK(program_to_text(sample_program(KvRotation::p2p)).find("timed_as") == std::string::npos);
}

TEST_CASE("a GEMM's SM share and userbuffers transfers survive the round trip") {
  TpLinearConfig c;
  c.tp = 2;
  Program p = build_tp_linear(c);
  for (Op& op : p.ops) {
    if (auto* call = std::get_if<KernelCall>(&op.body); call && call->kind == KernelKind::gemm) {
      call->sm_share = 0.875;
    } else if (auto* coll = std::get_if<CollectiveCall>(&op.body);
               coll && coll->kind != CollectiveKind::all_reduce) {
      coll->algo = CollectiveAlgo::userbuffers;
    }
  }
  const std::string text = program_to_text(p);
  CHECK(text.find(R"("sm_share":0.875)") != std::string::npos);
  CHECK(text.find(R"("algo":"userbuffers")") != std::string::npos);
  CHECK(program_from_json(parse_json_text(text, "mem"), "mem") == p);
  CHECK(load_error(
            std::string(text).replace(text.find(R"("sm_share":0.875)"), 16, R"("sm_share":1.500)"))
            .find("sm_share") != std::string::npos);
  // Whole-GPU GEMMs write no "sm_share" (saved files stay as they were).
  CHECK(program_to_text(build_tp_linear(c)).find("sm_share") == std::string::npos);
}
