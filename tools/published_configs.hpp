#pragma once
// Configuration fields a published run's own source leaves null but a companion publication of the
// same runs prints (data/published/published_configs.json). An entry names a row by its source id
// and model name and gives model and parallel fields with the publication and place they are
// printed in. Only null (or absent) fields of a row are filled; a companion value that contradicts
// a printed one, a second entry for the same row, an entry whose source has rows in the runs file
// but whose model matches none of them, and a value that is not a number, string or boolean are
// InputErrors naming the entry and field. An entry whose source has no row in the runs file (the
// folder's configs file beside another runs file) fills nothing. Each filled field is
// recorded in the row's `filled` notes, which the plan lists with its conventions. Measured values
// are never read.
#include <string_view>

#include <nlohmann/json.hpp>

#include "tools/published_runs.hpp"

namespace meshsim {

// Fills the rows of `runs` from the configs document `doc` (read from `origin`); returns how many
// rows an entry matched.
int apply_published_configs(PublishedRuns& runs, const nlohmann::json& doc,
                            std::string_view origin);

}  // namespace meshsim
