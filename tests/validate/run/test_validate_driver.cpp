#include <doctest/doctest.h>

#include <algorithm>
#include <barrier>
#include <memory>
#include <mutex>
#include <thread>

#include "sim/comm_plan.hpp"
#include "tests/validate/thread_world.hpp"
#include "validate/check/workload_registry.hpp"
#include "validate/cuda/event_timing.hpp"
#include "validate/run/inproc_comm.hpp"
#include "validate/run/solo_world.hpp"
#include "validate/run/validate_driver.hpp"

using namespace meshsim;
using meshsim::testing::ThreadWorld;
using meshsim::testing::ThreadWorldShared;

namespace {

RingAttentionConfig small_ring(int cp) {
  RingAttentionConfig c;
  c.cp = cp;
  c.seq = 16;
  c.heads = 2;
  c.kv_heads = 1;
  c.head_dim = 4;
  return c;
}

}  // namespace

TEST_CASE("one rank in one process: a measured timeline of every op") {
  const Workload w{small_ring(1)};
  const Program p = build_program(w);
  const CommPlan plan = validate_program(p);
  SoloWorld world;
  ValidateOptions options;
  options.gather_tensors = true;
  const ValidateResult r = run_validation(p, plan, tensor_layout(w), world, options);
  CHECK(r.root);
  CHECK(r.timeline.ops.size() == p.ops.size());
  CHECK(r.timeline.makespan > 0);
  CHECK(r.memory_bytes.size() == 1);
  CHECK(r.fill.from_layout == 3);
  CHECK(r.tensors.size() == 7);  // q, kv, out, lse, dout, dq, dkv
}

TEST_CASE("a device backend's issuer replaces the executor (ValidateOptions::run_rank)") {
  const Workload w{small_ring(1)};
  const Program p = build_program(w);
  const CommPlan plan = validate_program(p);
  SoloWorld world;
  ValidateOptions options;
  options.gather_tensors = true;
  int aligned = 0;
  options.run_rank = [&](RankSetup& setup, const std::function<void()>& align) {
    align();
    ++aligned;
    // The issuer leaves its results in the store (a device backend downloads them there).
    for (const TensorSlot& slot : p.slots) {
      if (slot.name == "out") {
        for (std::byte& b : setup.store.bytes(slot.id)) b = std::byte{0x3f};
      }
    }
    // Op i of the launch order runs from i ms to i + 1 ms after the origin.
    std::vector<OpId> ops;
    std::vector<OpEventTimes> times;
    for (int i = 0; i < setup.schedule.size(); ++i) {
      ops.push_back(setup.schedule.op(i).op);
      times.push_back(OpEventTimes{static_cast<float>(i), static_cast<float>(i + 1)});
    }
    return rank_run_from_events(0, ops, std::vector<std::vector<std::int32_t>>(ops.size()), times);
  };
  const ValidateResult r = run_validation(p, plan, tensor_layout(w), world, options);
  CHECK(aligned == 1);
  REQUIRE(r.timeline.ops.size() == p.ops.size());
  CHECK(r.timeline.ops[0].start == 0);
  CHECK(r.timeline.ops[0].end == 1'000'000);  // 1 ms
  CHECK(r.timeline.makespan == static_cast<Nanos>(p.ops.size()) * 1'000'000);
  // The gathered output is what the issuer left in the store (every byte 0x3f: no zero).
  bool out_written = false;
  for (const auto& t : r.tensors) {
    if (t.name != "out") continue;
    out_written = !t.values.empty() &&
                  std::none_of(t.values.begin(), t.values.end(), [](double x) { return x == 0; });
  }
  CHECK(out_written);
}

TEST_CASE("four ranks as threads: records gathered to rank 0, tensors assembled") {
  const Workload w{small_ring(4)};
  const Program p = build_program(w);
  const CommPlan plan = validate_program(p);
  const TensorLayout layout = tensor_layout(w);
  ThreadWorldShared shared(4, plan);
  std::vector<ValidateResult> results(4);
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r) {
    threads.emplace_back([&, r] {
      ThreadWorld world(shared, r);
      ValidateOptions options;
      options.gather_tensors = true;
      options.stall_timeout = std::chrono::milliseconds(20000);
      results[static_cast<std::size_t>(r)] = run_validation(p, plan, layout, world, options);
    });
  }
  for (auto& t : threads) t.join();
  CHECK(results[0].root);
  CHECK_FALSE(results[1].root);
  CHECK(results[1].timeline.ops.empty());
  CHECK(results[0].timeline.ops.size() == p.ops.size());
  CHECK(results[0].timeline.transfers.size() == plan.transfers.size());
  CHECK(results[0].memory_bytes.size() == 4);
  REQUIRE(results[0].tensors.size() == 7);
  CHECK(results[0].tensors[1].name == "kv");
  CHECK(results[0].tensors[1].elements_written == 2 * 16 * 4);  // every element of k and v
}

TEST_CASE("a rank whose setup fails makes every rank fail; rank 0 reports") {
  // A Program whose all-reduce needs more bytes than its slot: CommArgs refuses on every rank.
  ProgramBuilder b(Mesh({{"tp", 2}}, 8), true, "bad setup");
  const StreamId comm = b.stream("comm");
  const GroupId g = b.group("tp", {0, 1});
  for (int r = 0; r < 2; ++r) {
    const SlotId s = b.slot(r, "x", DType::fp32, {r == 0 ? 4 : 16});
    b.add(r, comm, "ar", {},
          CollectiveCall{CollectiveKind::all_reduce, g, 64, DType::fp32, 0, s, s});
  }
  const Program p = std::move(b).finish();
  const CommPlan plan = validate_program(p);
  ThreadWorldShared shared(2, plan);
  std::vector<int> reported(2, -1);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      ThreadWorld world(shared, r);
      try {
        run_validation(p, plan, TensorLayout{}, world, ValidateOptions{});
      } catch (const SetupError& e) {
        reported[static_cast<std::size_t>(r)] = e.report() ? 1 : 0;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(reported[0] == 1);  // rank 0's slot is too small: it reports
  CHECK(reported[1] == 0);  // rank 1 was fine: it fails quietly
}

TEST_CASE("a rank's failure is prefixed with its rank once") {
  CHECK(on_rank(0, "cannot allocate") == "rank 0: cannot allocate");
  CHECK(on_rank(0, "rank 0: cannot allocate") == "rank 0: cannot allocate");
  CHECK(on_rank(1, "rank 0: cannot allocate") == "rank 1: rank 0: cannot allocate");
}
