// The fields of a published run meshsim does not know (tools/published_unread.hpp): named, so that
// a misspelled one does not silently run the row on the default.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/json_fields.hpp"
#include "tools/published_runs.hpp"
#include "tools/published_unread.hpp"

using namespace meshsim;
using json = nlohmann::json;

namespace {

PublishedRun run_with(json model, json cluster, json parallel) {
  PublishedRun r;
  r.id = "t-001";
  r.model = std::move(model);
  r.cluster = std::move(cluster);
  r.parallel = std::move(parallel);
  return r;
}

}  // namespace

TEST_CASE("unread fields: a misspelled field is named with its path, in the row's order") {
  const PublishedRun r =
      run_with(json{{"name", "x"}, {"hiden", 4096}, {"moe", {{"top_k", 2}, {"num_expert", 8}}}},
               json{{"gpu", "H100"}, {"gpu_count", 8}},
               json{{"tp", 8}, {"tp_comm_overlpa", true}, {"pp", 1}});
  // nlohmann::json orders an object's keys alphabetically
  const std::vector<std::string> want = {"model.hiden", "model.moe.num_expert", "cluster.gpu_count",
                                         "parallel.tp_comm_overlpa"};
  CHECK(unread_fields(r) == want);
}

TEST_CASE("unread fields: the schema's fields, read or informational, are not named") {
  const PublishedRun r =
      run_with(json{{"name", "x"},
                    {"layers", 2},
                    {"architecture", "GPT"},
                    {"params_billion", 1.5},
                    {"mla", {{"q_lora_rank", 1536}, {"v_head_dim", 128}}}},
               json{{"gpu", "A100"}, {"system", "Selene"}, {"inter_node_gbps", 400}},
               json{{"tp", 1},
                    {"model_parallel_size", 1},
                    {"fp8_param_gather", true},
                    {"dispatcher", nullptr}});
  CHECK(unread_fields(r).empty());
}

TEST_CASE("unread fields: none in the repository's published runs") {
  // Every file of data/published/ with rows: what meshsim compares must all be read.
  for (const char* file : {"published_runs.json", "torchtitan_runs.json",
                           "megatron_bridge_h100_runs.json", "fms_fsdp_runs.json"}) {
    const std::string path = std::string(MESHSIM_SOURCE_DIR "/data/published/") + file;
    CAPTURE(path);
    const PublishedRuns runs =
        read_published_runs(parse_json_text(read_text_file(path), path), path);
    REQUIRE(!runs.rows.empty());
    for (const PublishedRun& run : runs.rows) {
      CAPTURE(run.id);
      CHECK(unread_fields(run).empty());
    }
  }
}
