#include "schedules/collective.hpp"

#include <vector>

#include <fmt/format.h>

namespace meshsim {

std::optional<CollectiveKind> collective_kind_of(const std::string& op) {
  if (op == "allreduce") return CollectiveKind::all_reduce;
  if (op == "allgather") return CollectiveKind::all_gather;
  if (op == "reducescatter") return CollectiveKind::reduce_scatter;
  if (op == "alltoall") return CollectiveKind::all_to_all;
  return std::nullopt;  // sendrecv
}

Program build_collective(const CollectiveConfig& run, std::int64_t bytes) {
  ProgramBuilder b(Mesh({{"dp", run.ranks}}, run.gpus_per_node), true,
                   fmt::format("{} of {} bytes over {} ranks, {} at once", run.op, bytes, run.ranks,
                               run.concurrent));
  std::vector<int> all(static_cast<std::size_t>(run.ranks));
  for (int r = 0; r < run.ranks; ++r) all[static_cast<std::size_t>(r)] = r;
  const auto kind = collective_kind_of(run.op);
  for (int k = 0; k < run.concurrent; ++k) {
    // Separate communicators: separate groups and streams, sharing every port they cross.
    const StreamId s = b.stream(fmt::format("comm{}", k));
    const GroupId g = b.group(fmt::format("comm{}", k), all);
    for (int r = 0; r < run.ranks; ++r) {
      if (kind) {
        b.add(r, s, run.op, {}, CollectiveCall{*kind, g, bytes, DType::bf16, 0, -1, -1, run.algo});
      } else {
        b.add(r, s, run.op, {},
              P2PCall{{Transfer{(r + 1) % run.ranks, bytes, k, -1}},
                      {Transfer{(r - 1 + run.ranks) % run.ranks, bytes, k, -1}}});
      }
    }
  }
  return std::move(b).finish();
}

}  // namespace meshsim
