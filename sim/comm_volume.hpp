#pragma once
// How many bytes one rank sends per communication dimension in a Program (ARCHITECTURE.md §3):
// for each kCommDims entry (tp, cp, ep, pp, dp), the bytes a rank puts on the wire, averaged
// over the ranks that run ops. A collective sends bytes_sent_per_rank of its kind over its n
// ranks (a folded group: its timed_as size, what the real rank sends; all-to-all (n-1)/n of its
// buffer), a p2p op the bytes of its sends. Dimensions as comm_dim (sim/step_metrics).
#include <vector>

#include "sim/program.hpp"

namespace meshsim {

std::vector<double> comm_bytes_per_rank(const Program& program);  // one per kCommDims entry

}  // namespace meshsim
