#include <doctest/doctest.h>

#include <algorithm>
#include <variant>

#include "sim/error.hpp"
#include "tools/published_runs.hpp"

using namespace meshsim;
using json = nlohmann::json;

namespace {

// A Korthikanti Table 5 row as the file prints it (22B, tp 8, full recompute).
json table5_row() {
  return json::parse(R"({
    "id": "t5-001", "table": "korthikanti2022_table5_iteration_time",
    "source": {"id": "korthikanti2022", "ref": "Table 5"},
    "model": {"name": "Megatron 22B", "layers": 48, "hidden": 6144, "heads": 64, "kv_heads": 64,
              "ffn": 24576, "vocab": 51200, "seq": 2048},
    "cluster": {"gpu": "A100-SXM4-80GB", "gpus": 8, "nodes": 1, "gpus_per_node": 8},
    "parallel": {"tp": 8, "pp": 1, "dp": 1, "cp": 1, "vp": null, "micro_batch": 4,
                 "global_batch": 4, "sp": false, "recompute": "full", "num_microbatches": 1,
                 "pipeline_schedule": "none"},
    "precision": "fp16 mixed",
    "measured": {"metric": "iteration_time", "value": 1.42, "unit": "s"}})");
}

PublishedRun read_one(const json& row) {
  return read_published_runs(json{{"rows", json::array({row})}}, "runs.json").rows.at(0);
}

RunPlan planned(const json& row) {
  const auto p = plan_run(read_one(row));
  REQUIRE(std::holds_alternative<RunPlan>(p));
  return std::get<RunPlan>(p);
}

std::string skipped(const json& row) {
  const auto p = plan_run(read_one(row));
  REQUIRE(std::holds_alternative<SkippedRun>(p));
  return std::get<SkippedRun>(p).reason;
}

}  // namespace

TEST_CASE("published runs: GPU names map to profiles, memory size from the name") {
  const auto a100 = std::get<HardwareProfile>(hardware_for_gpu("A100-SXM4-80GB"));
  CHECK(a100.name == "a100-sxm");
  CHECK(a100.memory_bytes == 80e9);
  CHECK(std::get<HardwareProfile>(hardware_for_gpu("A100-SXM4-40GB")).memory_bytes == 40e9);
  CHECK(std::get<HardwareProfile>(hardware_for_gpu("A100 (Selene)")).name == "a100-sxm");
  // HBM2e in an H100's name: the 96 GB, 2.4 TB/s part of torchtitan's Grand Teton hosts.
  const auto h100 = std::get<HardwareProfile>(hardware_for_gpu("H100 (96GB HBM2e, 500W)"));
  CHECK(h100.name == "h100-hbm2e");
  CHECK(h100.memory_bytes == 96e9);
  CHECK(h100.memory_bw == 2.4e12);
  CHECK(std::get<HardwareProfile>(hardware_for_gpu("H100 SXM5 80GB")).name == "h100-sxm");
  CHECK(std::get<HardwareProfile>(hardware_for_gpu("H800")).name == "h800-sxm");
  CHECK(std::holds_alternative<SkippedRun>(hardware_for_gpu("MI300X")));
}

TEST_CASE("published runs: a printed row becomes the plan it describes") {
  const RunPlan p = planned(table5_row());
  CHECK(p.model.layers == 48);
  CHECK(p.model.hidden == 6144);
  CHECK(p.model.norm == NormKind::layernorm);  // GPT-style: not a Llama name
  CHECK_FALSE(p.model.gated_mlp);
  CHECK(p.plan.tp == 8);
  CHECK(p.plan.dp == 1);
  CHECK(p.plan.global_batch == 4);
  CHECK(p.plan.recompute == Recompute::full);
  CHECK_FALSE(p.plan.sequence_parallel);
  CHECK(p.plan.dtype == DType::fp16);
  CHECK(p.plan.schedule == PipelineSchedule::one_f_one_b);
  // Nothing null in this row; the 2022 Megatron-LM materialized its attention scores.
  CHECK(p.plan.attention == AttentionCore::materialized);
  REQUIRE(p.conventions.size() == 1);
  CHECK(p.conventions[0].find("attention materialized") != std::string::npos);
}

TEST_CASE("published runs: null fields take the documented conventions") {
  json row = table5_row();
  row["model"]["kv_heads"] = nullptr;
  row["model"]["ffn"] = nullptr;
  row["model"]["vocab"] = nullptr;
  row["parallel"]["dp"] = nullptr;
  row["parallel"]["global_batch"] = nullptr;
  row["parallel"]["num_microbatches"] = 4;  // interleaving wants m divisible by pp
  row["parallel"]["pipeline_schedule"] = "interleaved-1F1B";
  row["parallel"]["pp"] = 2;
  row["parallel"]["tp"] = 4;
  row["parallel"]["vp"] = nullptr;
  const RunPlan p = planned(row);
  CHECK(p.model.kv_heads == 64);
  CHECK(p.model.ffn_hidden == 4 * 6144);
  CHECK(p.model.vocab == 51200);
  CHECK(p.plan.dp == 1);                // 8 GPUs / (4 x 2)
  CHECK(p.plan.global_batch == 4 * 4);  // num_microbatches x dp x micro_batch
  CHECK(p.plan.vp == 2);
  CHECK(p.conventions.size() == 6);  // five nulls filled, and the attention core
}

TEST_CASE("published runs: vp of an interleaved run without one splits each stage's layers") {
  json row = table5_row();           // 48 layers
  row["cluster"]["gpus"] = nullptr;  // tp x pp x dp changes below
  row["parallel"]["pipeline_schedule"] = "interleaved-1F1B";
  row["parallel"]["tp"] = 1;
  row["parallel"]["dp"] = 1;
  row["parallel"]["num_microbatches"] = 16;
  row["parallel"]["global_batch"] = nullptr;
  row["parallel"]["pp"] = 16;  // 3 layers per stage: 2 does not divide 3, 3 does
  CHECK(planned(row).plan.vp == 3);
  row["parallel"]["pp"] = 8;  // 6 layers per stage: 2 chunks of 3
  CHECK(planned(row).plan.vp == 2);
  // pp 5: 5v never divides 48; v = 2 takes them unevenly: 4, 5 x 8, 4.
  row["parallel"]["pp"] = 5;
  row["parallel"]["num_microbatches"] = 20;
  CHECK(planned(row).plan.vp == 2);
}

TEST_CASE("published runs: a mesh that does not multiply to the GPUs printed is skipped") {
  json row = table5_row();  // 8 GPUs
  row["parallel"]["tp"] = 4;
  CHECK(skipped(row) == "tp x pp x cp x dp = 4 x 1 x 1 x 1 = 4, but the row has 8 GPUs");
  row["parallel"]["tp"] = 8;
  row["parallel"]["sp"] = "yes";
  CHECK_THROWS_WITH_AS(plan_run(read_one(row)),
                       "field 'sp': expected true, false or null, got \"yes\"", InputError);
}

TEST_CASE("published runs: a power cap in the GPU name is stated, modelled only by h100-hbm2e") {
  json row = table5_row();
  row["cluster"]["gpu"] = "H100 (96GB HBM2e, 500W)";
  const RunPlan p = planned(row);
  CHECK(p.hardware.memory_bytes == 96e9);
  CHECK(p.hardware.name == "h100-hbm2e");
  CHECK(std::find(p.conventions.begin(), p.conventions.end(),
                  "power cap 500 W: h100-hbm2e's peaks are the 500 W part's (arXiv 2411.01783, "
                  "App. A)") != p.conventions.end());
  row["cluster"]["gpu"] = "H100 SXM5 80GB 600W";
  const RunPlan q = planned(row);
  CHECK(q.hardware.name == "h100-sxm");
  CHECK(std::find(q.conventions.begin(), q.conventions.end(),
                  "power cap 600 W in the GPU name not modeled: the profile's peaks are the "
                  "datasheet's") != q.conventions.end());
}

TEST_CASE(
    "published runs: Zero Bubble's 1F1B-I is one layer per chunk, padded with 0-layer chunks") {
  // 22 layers on pp 8 (Zero Bubble Table 4, 1.5B): v = ceil(22 / 8) = 3, 24 chunks of one layer
  // less the 24 - 22 = 2 padded ones, taken from the last global stage and then the first (the
  // Zero Bubble repository's --allow-padding-num-layers): ranks hold 2, 3, ..., 3, 2 layers.
  json row = table5_row();
  row["cluster"]["gpus"] = nullptr;  // pp changes below
  row["model"]["layers"] = 22;
  row["parallel"]["pipeline_schedule"] = "1F1B-I";
  row["parallel"]["tp"] = 1;
  row["parallel"]["pp"] = 8;
  row["parallel"]["micro_batch"] = 1;
  row["parallel"]["num_microbatches"] = 24;
  row["parallel"]["global_batch"] = nullptr;
  row["parallel"]["recompute"] = "none";
  const RunPlan p = planned(row);
  CHECK(p.plan.schedule == PipelineSchedule::interleaved);
  CHECK(p.plan.vp == 3);
  std::vector<int> expect(24, 1);
  expect.front() = expect.back() = 0;
  CHECK(p.plan.layout.layers_per_stage == expect);
  // 62 layers on pp 32 (28.3B): v 2, 64 - 62 = 2 padded chunks again at both ends.
  row["model"]["layers"] = 62;
  row["parallel"]["pp"] = 32;
  row["parallel"]["num_microbatches"] = 96;
  const RunPlan q = planned(row);
  CHECK(q.plan.vp == 2);
  CHECK(q.plan.layout.layers_per_stage.front() == 0);
  CHECK(q.plan.layout.layers_per_stage.back() == 0);
  CHECK(q.plan.layout.layers_per_stage.at(1) == 1);
}

TEST_CASE("published runs: selective+microbatch-level is selective with the fitting window count") {
  // Korthikanti App. C: micro-batch-level recompute keeps whole as many microbatches per window
  // as memory allows (fitting_whole_microbatches), never from the measured value.
  json row = table5_row();
  row["parallel"]["recompute"] = "selective+microbatch-level";
  const RunPlan p = planned(row);
  CHECK(p.plan.recompute == Recompute::selective);
  REQUIRE(p.plan.num_microbatches_with_partial_activation_checkpoints.has_value());
  CHECK(*p.plan.num_microbatches_with_partial_activation_checkpoints ==
        fitting_whole_microbatches(p.model, p.plan, p.hardware));
  row["parallel"]["recompute"] = "bogus+microbatch-level";
  CHECK(skipped(row).find("bogus") != std::string::npos);
}

TEST_CASE("published runs: rows meshsim cannot express are skipped with the reason") {
  json no_heads = table5_row();
  no_heads["model"]["heads"] = nullptr;
  CHECK(skipped(no_heads).find("attention heads") != std::string::npos);
  json no_split = table5_row();
  no_split["parallel"]["tp"] = nullptr;
  CHECK(skipped(no_split).find("tp and pp") != std::string::npos);
  json chimera = table5_row();
  chimera["parallel"]["pipeline_schedule"] = "Chimera";
  CHECK(skipped(chimera).find("Chimera") != std::string::npos);
  json mi300 = table5_row();
  mi300["cluster"]["gpu"] = "MI300X";
  CHECK(skipped(mi300).find("MI300X") != std::string::npos);
}

TEST_CASE("published runs: ZB-1p and ZB-2p map to the handcrafted schedules of their memory") {
  // The header's rule: ZB-1p (memory limit p microbatches) -> zb-h1, ZB-2p (limit 2p) -> zb-h2,
  // each with a note saying it stands in for the searched schedule.
  json row = table5_row();
  row["parallel"]["pipeline_schedule"] = "ZB-1p";
  CHECK(planned(row).plan.schedule == PipelineSchedule::zb_h1);
  row["parallel"]["pipeline_schedule"] = "ZB-2p";
  const RunPlan p = planned(row);
  CHECK(p.plan.schedule == PipelineSchedule::zb_h2);
  bool noted = false;
  for (const auto& c : p.conventions) noted = noted || c.find("ZB-2p as zb-h2") == 0;
  CHECK(noted);
}

TEST_CASE("published runs: the plan never depends on the measured value") {
  json other = table5_row();
  other["measured"]["value"] = 99.0;
  other["measured"]["metric"] = "MFU";
  const RunPlan a = planned(table5_row()), b = planned(other);
  CHECK(a.model == b.model);
  CHECK(a.plan == b.plan);
  CHECK(a.hardware == b.hardware);
}

TEST_CASE("published runs: a malformed file names the row and field") {
  CHECK_THROWS_WITH_AS(read_published_runs(json::object(), "r.json"),
                       "r.json: field 'rows': expected an array of runs", InputError);
  json row = table5_row();
  row["measured"]["value"] = "fast";
  CHECK_THROWS_WITH_AS(read_one(row),
                       "runs.json: row t5-001: field 'measured.value': expected a number",
                       InputError);
  row = table5_row();
  row.erase("table");
  CHECK_THROWS_WITH_AS(read_one(row), "runs.json: row t5-001: field 'table': missing", InputError);
}

TEST_CASE("published runs: fuzzed fields are read, planned, skipped or refused, never crash") {
  const json good = table5_row();
  const std::vector<json> values = {nullptr,
                                    0,
                                    -1,
                                    1,
                                    3,
                                    std::int64_t{1} << 62,
                                    1.5,
                                    -0.5,
                                    1e308,
                                    "",
                                    "x",
                                    "none",
                                    "ZB-2p",
                                    "H800",
                                    json::array(),
                                    json::object(),
                                    true};
  std::vector<json::json_pointer> paths;
  for (const char* part : {"model", "cluster", "parallel", "measured"}) {
    for (const auto& [key, value] : good[part].items()) {
      paths.emplace_back(std::string("/") + part + "/" + key);
    }
    paths.emplace_back(std::string("/") + part);
  }
  for (const char* key : {"id", "table", "precision", "source"}) {
    paths.emplace_back(std::string("/") + key);
  }
  std::size_t planned = 0, skipped_rows = 0, refused = 0;
  for (const auto& path : paths) {
    for (const auto& v : values) {
      CAPTURE(path.to_string());
      CAPTURE(v.dump());
      json row = good;
      row[path] = v;
      try {
        const auto p = plan_run(read_one(row));
        if (std::holds_alternative<RunPlan>(p)) {
          ++planned;
        } else {
          ++skipped_rows;
        }
      } catch (const InputError&) {
        ++refused;
      }
    }
  }
  CHECK(planned > 0);
  CHECK(skipped_rows > 0);
  CHECK(refused > 0);
  // dp left to the GPU count with a zero-sized mesh dimension: refused, not divided by zero.
  json zero = good;
  zero["parallel"]["dp"] = nullptr;
  zero["parallel"]["tp"] = 0;
  CHECK_THROWS_WITH_AS(plan_run(read_one(zero)), "field 'parallel.tp': expected 1 to 65536, got 0",
                       InputError);
}

TEST_CASE("published runs: TP comm overlap only where the row states it") {
  // The A100 rows of 2021-2022 state nothing: no overlap (their runs predate TE's userbuffers).
  CHECK_FALSE(planned(table5_row()).plan.tp_comm_overlap);
  json row = table5_row();
  row["cluster"]["gpu"] = "H100 (DGX-H100)";
  row["parallel"]["sp"] = true;
  row["parallel"]["tp_comm_overlap"] = true;
  const RunPlan p = planned(row);
  CHECK(p.plan.tp_comm_overlap);
  CHECK(p.plan.gpu_sms == 132);
  CHECK(std::find(p.conventions.begin(), p.conventions.end(),
                  "TP communication overlap (the source's --tp-comm-overlap)") !=
        p.conventions.end());
  // Without sequence parallelism there is nothing to overlap: the row is skipped, saying why.
  row["parallel"]["sp"] = false;
  CHECK(skipped(row).find("`tp_comm_overlap` needs `tp` > 1 with sequence parallelism") !=
        std::string::npos);
  // A malformed flag is an error of the file (exit 2), not a row that cannot be expressed.
  row["parallel"]["tp_comm_overlap"] = "yes";
  CHECK_THROWS_AS(plan_run(read_one(row)), InputError);
}
