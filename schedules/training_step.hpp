#pragma once
// A whole training step as one Program (ARCHITECTURE.md §4.4): per layer norm, QKV (column
// parallel), attention (the CP ring over the CP group, heads/t per rank), projection (row
// parallel), norm, MLP up (column), activation, MLP down (row), with the TP collectives (all-gather
// / reduce-scatter under sequence parallelism, all-reduce otherwise); embeddings on the first and
// the output head + loss on the last global stage; the pipeline schedule over microbatches; the
// data-parallel gradient reduction bucketed and overlapped with the backward; the optimizer step.
#include "schedules/model_catalog.hpp"
#include "schedules/step_plan.hpp"
#include "sim/program.hpp"

namespace meshsim {

// The step's schedule graph on a cluster of gpus_per_node GPUs per node (the mesh placement: the
// graph does not depend on any other hardware figure).
Program build_training_step(const TransformerModel& model, const StepPlan& plan, int gpus_per_node);

}  // namespace meshsim
