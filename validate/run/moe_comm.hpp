#pragma once
// The communication of `meshsim validate moe`: the token dispatch and combine of an MoE layer
// whose sizes come from the routing at run time (Megatron-Core's alltoall dispatcher: counts per
// destination exchanged first, then all-to-all-v over EP and all-gather-v / reduce-scatter-v over
// ETP). The expert groups are those of schedules/moe_plan (etp fastest: rank = etp index +
// etp · ep index, edp = 1). Counts are in elements of `dtype` (fp32 or fp64), per member in group
// order; a member's own part stays in place. MpiMoeComm (validate/mpi) runs them over MPI;
// SoloMoeComm is the one-rank world (every group is the rank itself).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "sim/dtype.hpp"

namespace meshsim {

enum class MoeGroup : std::uint8_t { ep, etp };

class MoeComm {
 public:
  MoeComm() = default;
  MoeComm(const MoeComm&) = delete;
  MoeComm& operator=(const MoeComm&) = delete;
  virtual ~MoeComm() = default;

  virtual int group_size(MoeGroup g) const = 0;
  // Member p receives `send[p·n, (p+1)·n)`; the result holds member p's n counts at [p·n, ...).
  virtual std::vector<std::int64_t> exchange_counts(MoeGroup g, std::span<const std::int64_t> send,
                                                    std::int64_t n) = 0;
  // Every member's `mine` (all of one length), concatenated in member order.
  virtual std::vector<std::int64_t> gather_counts(MoeGroup g,
                                                  std::span<const std::int64_t> mine) = 0;
  // send_counts[p] elements to member p (consecutive in `send`), recv_counts[p] from p.
  virtual void all_to_all_v(MoeGroup g, const void* send, std::span<const std::int64_t> send_counts,
                            void* recv, std::span<const std::int64_t> recv_counts, DType dtype) = 0;
  // Member p's counts[p] elements, concatenated in member order into recv.
  virtual void all_gather_v(MoeGroup g, const void* send, void* recv,
                            std::span<const std::int64_t> counts, DType dtype) = 0;
  // The sum over members of `send` (sum of counts elements); this member keeps its counts[p]
  // elements of it (p its position).
  virtual void reduce_scatter_v(MoeGroup g, const void* send, void* recv,
                                std::span<const std::int64_t> counts, DType dtype) = 0;
};

// One rank: ep = etp = 1, every operation a copy.
std::unique_ptr<MoeComm> make_solo_moe_comm();

}  // namespace meshsim
