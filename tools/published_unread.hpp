#pragma once
// The fields of a published run's `model`, `cluster` and `parallel` objects that meshsim does not
// know. The published-runs schema is open (a source may add fields of its own), so such a field is
// not an error; but a misspelled one ("tp_comm_overlpa") would silently run the row on the default,
// so `meshsim compare` names each on stderr.
#include <string>
#include <vector>

#include "tools/published_runs.hpp"

namespace meshsim {

// "parallel.tp_comm_overlpa", ... in the order the row gives them: every key of model (and its
// moe and mla objects), cluster and parallel that is neither read by meshsim nor one of the
// schema's informational fields (model.architecture, cluster.system, parallel.model_parallel_size,
// ...: data/published/README.md).
std::vector<std::string> unread_fields(const PublishedRun& run);

}  // namespace meshsim
