// MPI tests of the communication backend, run under `mpiexec -n 4` (one process per rank): every
// collective kind and p2p group moves and reduces data as the Program's conventions say, with MPI
// calls from stream threads directly (MPI_THREAD_MULTIPLE) and serialized (the fallback path).
// Every rank runs the same test cases in the same order; a failed CHECK on one rank fails the
// process's exit code on every rank.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/comm_plan.hpp"
#include "sim/program.hpp"
#include "validate/mpi/mpi_comm_backend.hpp"
#include "validate/mpi/mpi_session.hpp"
#include "validate/run/executor.hpp"
#include "validate/run/rank_setup.hpp"
#include "validate/tensors/reduce_sum.hpp"
#include "validate/tensors/value_generator.hpp"

using namespace meshsim;

namespace {

MpiSession* g_session = nullptr;
constexpr std::int64_t kCount = 6;  // elements per rank part

int me() {
  return g_session->rank();
}
int world() {
  return g_session->size();
}

struct Ran {
  CommPlan plan;
  std::unique_ptr<RankSetup> setup;
  std::vector<std::byte> slot(const Program& p, const std::string& name) const {
    for (const auto& s : p.slots) {
      if (s.rank == me() && s.name == name) {
        const auto b = setup->store.bytes(s.id);
        return {b.begin(), b.end()};
      }
    }
    return {};
  }
};

// Runs this rank's part of `p` with MPI (read-only slots filled by name, seed 1).
Ran run_here(const Program& p, bool serialized,
             const std::function<void(RankSetup&)>& prepare = {}) {
  Ran r;
  r.plan = validate_program(p);
  r.setup = std::make_unique<RankSetup>(p, r.plan, me(), TensorLayout{}, 1);
  if (prepare) prepare(*r.setup);
  MpiCommBackend comm(p, r.setup->comm, *g_session, serialized);
  NullKernelRunner kernels;
  ExecutorOptions options;
  options.stall_timeout = std::chrono::milliseconds(30000);
  options.on_failure = [](const std::string& what) {
    std::cerr << "rank " << me() << ": " << what << "\n";
    g_session->abort(3);
  };
  Executor executor(p, r.setup->schedule, kernels, comm, options);
  executor.run([] { g_session->barrier(); });
  return r;
}

float filled(int rank, std::int64_t i) {
  return static_cast<float>(
      ValueGenerator(1, fmt::format("rank{}/in", rank)).stored(i, DType::fp32));
}

std::vector<float> floats(const std::vector<std::byte>& b) {
  std::vector<float> f(b.size() / 4);
  if (!f.empty()) std::memcpy(f.data(), b.data(), f.size() * 4);
  return f;
}

std::vector<int> all_ranks() {
  std::vector<int> r(static_cast<std::size_t>(world()));
  for (int i = 0; i < world(); ++i) r[static_cast<std::size_t>(i)] = i;
  return r;
}

// Every rank: one collective on the world group, "in" (fp32 [in_elems]) -> "out" ([out_elems]).
Program one_collective(CollectiveKind kind, std::int64_t in_elems, std::int64_t out_elems,
                       std::int64_t bytes, int shift = 0) {
  ProgramBuilder b(Mesh({{"tp", world()}}, 8), true, "collective");
  const StreamId comm = b.stream("comm");
  const GroupId g = b.group("tp", all_ranks());
  for (int r = 0; r < world(); ++r) {
    const SlotId in = b.slot(r, "in", DType::fp32, {in_elems});
    const SlotId out = b.slot(r, "out", DType::fp32, {out_elems});
    b.add(r, comm, "c", {}, CollectiveCall{kind, g, bytes, DType::fp32, shift, in, out});
  }
  return std::move(b).finish();
}

}  // namespace

TEST_CASE("collectives over MPI") {
  const int n = world();
  for (bool serialized : {false, true}) {
    CAPTURE(serialized);
    {
      const Program p = one_collective(CollectiveKind::all_reduce, kCount, kCount, kCount * 4);
      const auto out = floats(run_here(p, serialized).slot(p, "out"));
      for (std::int64_t i = 0; i < kCount; ++i) {
        double sum = 0;
        for (int q = 0; q < n; ++q) sum += filled(q, i);
        CHECK(out[static_cast<std::size_t>(i)] == doctest::Approx(sum).epsilon(1e-6));
      }
    }
    {
      const Program p =
          one_collective(CollectiveKind::all_gather, kCount, n * kCount, n * kCount * 4);
      const auto out = floats(run_here(p, serialized).slot(p, "out"));
      for (int q = 0; q < n; ++q)
        CHECK(out[static_cast<std::size_t>(q * kCount + 2)] == filled(q, 2));
    }
    {
      const Program p =
          one_collective(CollectiveKind::reduce_scatter, n * kCount, kCount, n * kCount * 4);
      const auto out = floats(run_here(p, serialized).slot(p, "out"));
      double sum = 0;
      for (int q = 0; q < n; ++q) sum += filled(q, me() * kCount + 1);
      CHECK(out[1] == doctest::Approx(sum).epsilon(1e-6));
    }
    {
      const Program p =
          one_collective(CollectiveKind::all_to_all, n * kCount, n * kCount, n * kCount * 4);
      const auto out = floats(run_here(p, serialized).slot(p, "out"));
      for (int q = 0; q < n; ++q) {
        CHECK(out[static_cast<std::size_t>(q * kCount)] == filled(q, me() * kCount));
      }
    }
    {
      const Program p = one_collective(CollectiveKind::permute, kCount, kCount, kCount * 4, 1);
      CHECK(floats(run_here(p, serialized).slot(p, "out"))[4] == filled((me() + n - 1) % n, 4));
    }
    {
      const Program p = one_collective(CollectiveKind::broadcast, kCount, kCount, kCount * 4, 1);
      CHECK(floats(run_here(p, serialized).slot(p, "out"))[3] == filled(1, 3));
    }
    {
      const Program p = one_collective(CollectiveKind::barrier, 1, 1, 0);
      run_here(p, serialized);
    }
  }
}

TEST_CASE("in place: bf16 all-reduce, all-gather and reduce-scatter on one slot") {
  const int n = world();
  ProgramBuilder b(Mesh({{"tp", n}}, 8), true, "in place");
  const StreamId comm = b.stream("comm");
  const GroupId g = b.group("tp", all_ranks());
  for (int r = 0; r < n; ++r) {
    const SlotId ar = b.slot(r, "ar", DType::bf16, {kCount});
    const SlotId ag = b.slot(r, "ag", DType::fp32, {n * kCount});
    const SlotId rs = b.slot(r, "rs", DType::fp32, {n * kCount});
    b.add(r, comm, "ar", {},
          CollectiveCall{CollectiveKind::all_reduce, g, kCount * 2, DType::bf16, 0, ar, ar});
    b.add(r, comm, "ag", {},
          CollectiveCall{CollectiveKind::all_gather, g, n * kCount * 4, DType::fp32, 0, ag, ag});
    b.add(
        r, comm, "rs", {},
        CollectiveCall{CollectiveKind::reduce_scatter, g, n * kCount * 4, DType::fp32, 0, rs, rs});
  }
  const Program p = std::move(b).finish();
  // ar: rank r holds r + 1 + i/8 (exact in bf16; sums stay exact); ag: rank r's part holds 10r+i;
  // rs: element j of rank r holds r * 100 + j.
  const Ran ran = run_here(p, false, [&](RankSetup& s) {
    for (const auto& slot : p.slots) {
      if (slot.rank != me()) continue;
      std::byte* data = s.store.bytes(slot.id).data();
      for (std::int64_t i = 0; i < n * kCount; ++i) {
        const auto x = static_cast<double>(i);
        if (slot.name == "ar" && i < kCount) {
          store_element(DType::bf16, data, i, me() + 1 + x / 8.0);
        }
        if (slot.name == "ag" && i / kCount == me()) {
          store_element(DType::fp32, data, i, 10 * me() + x);
        }
        if (slot.name == "rs") store_element(DType::fp32, data, i, me() * 100 + x);
      }
    }
  });
  const auto ar = ran.slot(p, "ar");
  for (std::int64_t i = 0; i < kCount; ++i) {
    // sum over r of (r + 1 + i/8) = n(n+1)/2 + n i / 8
    CHECK(load_element(DType::bf16, ar.data(), i) ==
          n * (n + 1) / 2.0 + n * static_cast<double>(i) / 8.0);
  }
  const auto ag = floats(ran.slot(p, "ag"));
  for (int q = 0; q < n; ++q)
    CHECK(ag[static_cast<std::size_t>(q * kCount)] == static_cast<float>(10 * q + q * kCount));
  const auto rs = floats(ran.slot(p, "rs"));
  // The result sits at position me() x kCount: sum over r of (100 r + j) = 100 n(n-1)/2 + n j.
  const std::int64_t j = me() * kCount + 2;
  CHECK(rs[static_cast<std::size_t>(j)] ==
        100.0f * static_cast<float>(n * (n - 1) / 2) + static_cast<float>(n * j));
}

TEST_CASE("p2p groups: several transfers per op, slot-less buffers, concurrent streams") {
  const int n = world();
  for (bool serialized : {false, true}) {
    CAPTURE(serialized);
    // Each rank, on two streams at once: stream a sends "in" to r+1 and receives from r-1 into
    // "from_prev"; stream b sends 100 slot-less bytes to r-1 and receives as many from r+1.
    ProgramBuilder b(Mesh({{"cp", n}}, 8), false, "p2p");
    const StreamId sa = b.stream("a");
    const StreamId sb = b.stream("b");
    for (int r = 0; r < n; ++r) {
      const SlotId in = b.slot(r, "in", DType::fp32, {kCount});
      const SlotId from_prev = b.slot(r, "from_prev", DType::fp32, {kCount});
      const int next = (r + 1) % n, prev = (r + n - 1) % n;
      b.add(
          r, sa, "ring", {},
          P2PCall{{Transfer{next, kCount * 4, 1, in}}, {Transfer{prev, kCount * 4, 1, from_prev}}});
      b.add(r, sb, "back", {}, P2PCall{{Transfer{prev, 100, 2, -1}}, {Transfer{next, 100, 2, -1}}});
    }
    const Program p = std::move(b).finish();
    const auto got = floats(run_here(p, serialized).slot(p, "from_prev"));
    for (std::int64_t i = 0; i < kCount; ++i) {
      CHECK(got[static_cast<std::size_t>(i)] == filled((me() + n - 1) % n, i));
    }
  }
}

TEST_CASE("groups of a 2 x 2 mesh: communicators per dimension slice") {
  if (world() != 4) return;
  // tp fastest: tp groups {0,1}, {2,3}; cp groups {0,2}, {1,3}. All-reduce over tp, then over cp.
  const Mesh mesh({{"tp", 2}, {"cp", 2}}, 8);
  ProgramBuilder b(mesh, true, "mesh");
  const StreamId comm = b.stream("comm");
  std::vector<GroupId> tp(4), cp(4);
  for (int r : {0, 2})
    tp[static_cast<std::size_t>(r)] = tp[static_cast<std::size_t>(r + 1)] =
        b.group("tp", mesh.group_of("tp", r));
  for (int r : {0, 1})
    cp[static_cast<std::size_t>(r)] = cp[static_cast<std::size_t>(r + 2)] =
        b.group("cp", mesh.group_of("cp", r));
  for (int r = 0; r < 4; ++r) {
    const SlotId x = b.slot(r, "x", DType::fp32, {1});
    const auto u = static_cast<std::size_t>(r);
    b.add(r, comm, "tp", {},
          CollectiveCall{CollectiveKind::all_reduce, tp[u], 4, DType::fp32, 0, x, x});
    b.add(r, comm, "cp", {},
          CollectiveCall{CollectiveKind::all_reduce, cp[u], 4, DType::fp32, 0, x, x});
  }
  const Program p = std::move(b).finish();
  const Ran ran = run_here(p, false, [&](RankSetup& s) {
    store_element(DType::fp32, s.store.bytes(static_cast<SlotId>(me())).data(), 0, 1 << me());
  });
  CHECK(floats(ran.slot(p, "x"))[0] == 15.0f);  // 1 + 2 + 4 + 8 after both sums
}

int main(int argc, char** argv) {
  MpiSession session;
  g_session = &session;
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  if (session.rank() != 0) context.setOption("minimal", true);  // only failures
  const int failed = context.run();
  const bool all_passed = session.all_true(failed == 0);
  if (session.rank() == 0) {
    std::cout << fmt::format("{} ranks, {}; {}\n", session.size(), session.thread_level(),
                             all_passed ? "all ranks passed" : "a rank FAILED");
  }
  return all_passed ? 0 : 1;
}
