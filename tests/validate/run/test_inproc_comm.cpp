#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "schedules/pipeline.hpp"
#include "schedules/ring_attention.hpp"
#include "schedules/tp_linear.hpp"
#include "tests/validate/ranks_in_threads.hpp"
#include "validate/tensors/reduce_sum.hpp"
#include "validate/tensors/value_generator.hpp"
#include "validate/tensors/workload_layouts.hpp"

using namespace meshsim;
using meshsim::testing::run_ranks_in_threads;
using meshsim::testing::ThreadedRun;

namespace {

std::vector<std::byte> slot_bytes(ThreadedRun& run, const Program& p, int rank,
                                  const std::string& name) {
  for (const auto& s : p.slots) {
    if (s.rank == rank && s.name == name) {
      const auto b = run.ranks[static_cast<std::size_t>(rank)]->store.bytes(s.id);
      return {b.begin(), b.end()};
    }
  }
  FAIL("no slot ", name, " on rank ", rank);
  return {};
}

std::vector<float> floats(const std::vector<std::byte>& b) {
  std::vector<float> f(b.size() / 4);
  std::memcpy(f.data(), b.data(), f.size() * 4);
  return f;
}

// Rank r's read-only slot `name` as filled by name (no layout), seed 1.
float filled(int rank, const std::string& name, std::int64_t i) {
  return static_cast<float>(
      ValueGenerator(1, fmt::format("rank{}/{}", rank, name)).stored(i, DType::fp32));
}

constexpr int kRanks = 4;
constexpr std::int64_t kCount = 8;  // elements per rank part

// kRanks ranks on one group, one collective each: "in" (fp32 [n]) -> "out" (fp32 [m]).
Program one_collective(CollectiveKind kind, std::int64_t in_elems, std::int64_t out_elems,
                       std::int64_t bytes, int shift = 0) {
  ProgramBuilder b(Mesh({{"tp", kRanks}}, 8), true, "collective");
  const StreamId comm = b.stream("comm");
  const GroupId g = b.group("tp", {0, 1, 2, 3});
  for (int r = 0; r < kRanks; ++r) {
    const SlotId in = b.slot(r, "in", DType::fp32, {in_elems});
    const SlotId out = b.slot(r, "out", DType::fp32, {out_elems});
    b.add(r, comm, "c", {}, CollectiveCall{kind, g, bytes, DType::fp32, shift, in, out});
  }
  return std::move(b).finish();
}

}  // namespace

TEST_CASE("in-process collectives move and reduce data as NCCL would") {
  SUBCASE("all-reduce sums") {
    const Program p = one_collective(CollectiveKind::all_reduce, kCount, kCount, kCount * 4);
    auto run = run_ranks_in_threads(p);
    for (int r = 0; r < kRanks; ++r) {
      const auto out = floats(slot_bytes(run, p, r, "out"));
      for (std::int64_t i = 0; i < kCount; ++i) {
        float expected = filled(0, "in", i);
        for (int q = 1; q < kRanks; ++q) expected += filled(q, "in", i);
        CHECK(out[static_cast<std::size_t>(i)] == expected);
      }
    }
  }
  SUBCASE("all-gather concatenates in group order") {
    const Program p =
        one_collective(CollectiveKind::all_gather, kCount, kRanks * kCount, kRanks * kCount * 4);
    auto run = run_ranks_in_threads(p);
    const auto out = floats(slot_bytes(run, p, 2, "out"));
    for (int q = 0; q < kRanks; ++q) {
      for (std::int64_t i = 0; i < kCount; ++i) {
        CHECK(out[static_cast<std::size_t>(q * kCount + i)] == filled(q, "in", i));
      }
    }
  }
  SUBCASE("reduce-scatter leaves part r of the sum on rank r") {
    const Program p = one_collective(CollectiveKind::reduce_scatter, kRanks * kCount, kCount,
                                     kRanks * kCount * 4);
    auto run = run_ranks_in_threads(p);
    for (int r = 0; r < kRanks; ++r) {
      const auto out = floats(slot_bytes(run, p, r, "out"));
      for (std::int64_t i = 0; i < kCount; ++i) {
        float expected = filled(0, "in", r * kCount + i);
        for (int q = 1; q < kRanks; ++q) expected += filled(q, "in", r * kCount + i);
        CHECK(out[static_cast<std::size_t>(i)] == expected);
      }
    }
  }
  SUBCASE("all-to-all: part q of rank r's input lands as part r of rank q's output") {
    const Program p = one_collective(CollectiveKind::all_to_all, kRanks * kCount, kRanks * kCount,
                                     kRanks * kCount * 4);
    auto run = run_ranks_in_threads(p);
    for (int q = 0; q < kRanks; ++q) {
      const auto out = floats(slot_bytes(run, p, q, "out"));
      for (int r = 0; r < kRanks; ++r) {
        for (std::int64_t i = 0; i < kCount; ++i) {
          CHECK(out[static_cast<std::size_t>(r * kCount + i)] == filled(r, "in", q * kCount + i));
        }
      }
    }
  }
  SUBCASE("permute by 1 and broadcast from position 2") {
    const Program perm = one_collective(CollectiveKind::permute, kCount, kCount, kCount * 4, 1);
    auto run = run_ranks_in_threads(perm);
    for (int r = 0; r < kRanks; ++r) {
      const auto out = floats(slot_bytes(run, perm, r, "out"));
      CHECK(out[3] == filled((r + kRanks - 1) % kRanks, "in", 3));
    }
    const Program bcast = one_collective(CollectiveKind::broadcast, kCount, kCount, kCount * 4, 2);
    auto run2 = run_ranks_in_threads(bcast);
    for (int r = 0; r < kRanks; ++r) {
      CHECK(floats(slot_bytes(run2, bcast, r, "out"))[5] == filled(2, "in", 5));
    }
  }
}

TEST_CASE("in-place bf16 all-reduce rounds like the pairwise sum in group order") {
  ProgramBuilder b(Mesh({{"tp", kRanks}}, 8), true, "in place");
  const StreamId comm = b.stream("comm");
  const GroupId g = b.group("tp", {0, 1, 2, 3});
  for (int r = 0; r < kRanks; ++r) {
    const SlotId io = b.slot(r, "io", DType::bf16, {kCount});
    b.add(r, comm, "ar", {},
          CollectiveCall{CollectiveKind::all_reduce, g, kCount * 2, DType::bf16, 0, io, io});
  }
  const Program p = std::move(b).finish();
  auto value = [](int r, std::int64_t i) {
    return ValueGenerator(9, fmt::format("io{}", r)).raw(i);
  };
  auto run = run_ranks_in_threads(p, {}, 1, nullptr, [&](int r, RankSetup& s) {
    for (std::int64_t i = 0; i < kCount; ++i)
      store_element(DType::bf16, s.store.bytes(static_cast<SlotId>(r)).data(), i, value(r, i));
  });
  std::vector<std::byte> expected(kCount * 2), term(kCount * 2);
  for (std::int64_t i = 0; i < kCount; ++i)
    store_element(DType::bf16, expected.data(), i, value(0, i));
  for (int q = 1; q < kRanks; ++q) {
    for (std::int64_t i = 0; i < kCount; ++i)
      store_element(DType::bf16, term.data(), i, value(q, i));
    sum_into(DType::bf16, expected.data(), term.data(), kCount);
  }
  for (int r = 0; r < kRanks; ++r) CHECK(slot_bytes(run, p, r, "io") == expected);
}

TEST_CASE(
    "ring attention runs to completion across ranks in threads; K/V arrive from the right rank") {
  for (KvRotation rot : {KvRotation::p2p, KvRotation::all_gather, KvRotation::all_to_all}) {
    for (int cp : {2, 3, 4}) {
      for (bool single_queue : {true, false}) {
        RingAttentionConfig c;
        c.cp = cp;
        c.seq = 8 * cp;
        c.heads = 2;
        c.kv_heads = 1;
        c.head_dim = 4;
        c.variant = cp == 3 ? RingVariant::ring : RingVariant::zigzag;
        c.kv_rotation = rot;
        c.single_queue = single_queue;
        CAPTURE(cp);
        CAPTURE(to_string(rot));
        CAPTURE(single_queue);
        const Program p = build_ring_attention(c);
        auto run = run_ranks_in_threads(p, ring_attention_layout(c));
        for (const auto& r : run.runs) {
          for (const auto& rec : r.ops) CHECK(rec.end >= rec.start);
        }
        for (int r = 0; r < cp; ++r) {
          if (rot == KvRotation::all_gather) {
            std::vector<std::byte> all;
            for (int q = 0; q < cp; ++q) {
              const auto kv = slot_bytes(run, p, q, "kv");
              all.insert(all.end(), kv.begin(), kv.end());
            }
            CHECK(slot_bytes(run, p, r, "kv_all_fwd") == all);
            continue;
          }
          for (int i = 1; i < cp; ++i) {
            // Step i's K/V on rank r are rank (r - i)'s.
            CHECK(slot_bytes(run, p, r, fmt::format("kv_fwd_step{}", i)) ==
                  slot_bytes(run, p, (r - i + cp) % cp, "kv"));
          }
        }
      }
    }
  }
}

TEST_CASE("tp-linear and pipeline Programs run to completion across ranks in threads") {
  for (TpLinearKind kind : {TpLinearKind::column, TpLinearKind::row}) {
    for (TpMode mode : {TpMode::all_reduce, TpMode::reduce_scatter}) {
      TpLinearConfig c;
      c.tp = 4;
      c.tokens = 16;
      c.in_features = 8;
      c.out_features = 8;
      c.kind = kind;
      c.mode = mode;
      c.bias = true;
      const Program p = build_tp_linear(c);
      auto run = run_ranks_in_threads(p, tp_linear_layout(c));
      CHECK(run.runs.size() == 4);
    }
  }
  for (PipelineSchedule s :
       {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved,
        PipelineSchedule::zb_h1, PipelineSchedule::zb_h2, PipelineSchedule::zb_v,
        PipelineSchedule::dualpipev}) {
    PipelineConfig c;
    c.shape.schedule = s;
    c.shape.stages = 4;
    c.shape.microbatches = 8;
    c.shape.chunks = s == PipelineSchedule::gpipe || s == PipelineSchedule::one_f_one_b ||
                             s == PipelineSchedule::zb_h1 || s == PipelineSchedule::zb_h2
                         ? 1
                         : 2;
    c.tokens = 8;
    c.hidden = 8;
    const Program p = build_pipeline(c);
    auto run = run_ranks_in_threads(p);
    std::size_t ops = 0;
    for (const auto& r : run.runs) ops += r.ops.size();
    CHECK(ops == p.ops.size());
  }
}
