// Layers per global stage given by the user (LayerLayout, schedules/memory_model.hpp): Megatron's
// --decoder-first/last-pipeline-num-layers, and a per-stage list (--layers-per-stage).
#include <algorithm>
#include <functional>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "schedules/memory_model.hpp"
#include "sim/error.hpp"

namespace meshsim {

namespace {

LayerSplit given_split(int layers, std::vector<int> per_stage, std::string rule) {
  LayerSplit split;
  split.layers = std::move(per_stage);
  split.uneven = std::adjacent_find(split.layers.begin(), split.layers.end(),
                                    std::not_equal_to<>()) != split.layers.end();
  split.first = split.layers.front();
  split.last = split.layers.back();
  split.middle = split.layers.size() > 2 ? split.layers[1] : split.first;
  split.rule = fmt::format("{} layers over {} pipeline stages, {}: {}", layers, split.layers.size(),
                           rule, fmt::join(split.layers, ","));
  return split;
}

// --layers-per-stage: the list as given, checked.
LayerSplit listed_split(int layers, int stages, const LayerLayout& layout) {
  const std::vector<int>& list = layout.layers_per_stage;
  if (layout.decoder_first_pipeline_num_layers || layout.decoder_last_pipeline_num_layers) {
    throw InputError(
        "`layers_per_stage` cannot be combined with `decoder_first_pipeline_num_layers` or "
        "`decoder_last_pipeline_num_layers`: it already gives every stage's layers");
  }
  if (std::ssize(list) != stages) {
    throw InputError(fmt::format(
        "`layers_per_stage` has {} entries, the plan has {} global pipeline stages (pp x chunks "
        "per rank): one entry per stage, in model order",
        list.size(), stages));
  }
  for (std::size_t g = 0; g < list.size(); ++g) {
    if (list[g] < 0) {
      throw InputError(fmt::format(
          "`layers_per_stage` entry {} is {}: a stage holds 0 or more layers", g, list[g]));
    }
  }
  const long long sum = std::accumulate(list.begin(), list.end(), 0LL);
  if (sum != layers) {
    throw InputError(
        fmt::format("`layers_per_stage` sums to {}, the model has {} layers", sum, layers));
  }
  return given_split(layers, list, "as listed (layers_per_stage)");
}

// Megatron's --decoder-first/last-pipeline-num-layers: per pipeline rank, then per chunk.
LayerSplit first_last_split(int layers, const PipelineShape& shape, const LayerLayout& layout) {
  const int p = shape.stages, v = chunks_of(shape);
  std::vector<int> per_rank(static_cast<std::size_t>(p), -1);
  int rest = layers, ranks_left = p;
  const auto take = [&](const std::optional<int>& given, int rank, std::string_view field) {
    if (!given) return;
    if (*given < 0) {
      throw InputError(fmt::format("`{}` must be at least 0 (got {})", field, *given));
    }
    if (per_rank[static_cast<std::size_t>(rank)] >= 0) {
      throw InputError(fmt::format(
          "`{}` needs `pp` >= 2 when both the first and the last rank's layers are given", field));
    }
    per_rank[static_cast<std::size_t>(rank)] = *given;
    rest -= *given;
    --ranks_left;
  };
  take(layout.decoder_first_pipeline_num_layers, 0, "decoder_first_pipeline_num_layers");
  take(layout.decoder_last_pipeline_num_layers, p - 1, "decoder_last_pipeline_num_layers");
  if (rest < 0 || (ranks_left == 0 && rest != 0) || (ranks_left > 0 && rest % ranks_left != 0)) {
    throw InputError(fmt::format(
        "`decoder_first_pipeline_num_layers` / `decoder_last_pipeline_num_layers` leave {} of "
        "the model's {} layers for the {} other pipeline ranks: they must share them evenly "
        "(Megatron-Core's rule)",
        rest, layers, ranks_left));
  }
  std::vector<int> per_stage(static_cast<std::size_t>(p * v), 0);
  for (int r = 0; r < p; ++r) {
    int& n = per_rank[static_cast<std::size_t>(r)];
    if (n < 0) n = rest / ranks_left;
    if (n % v != 0) {
      throw InputError(fmt::format(
          "pipeline rank {} would hold {} layers, not divisible over its {} chunks (`vp`): "
          "Megatron splits a rank's layers evenly over its virtual stages",
          r, n, v));
    }
    for (int c = 0; c < v; ++c) {
      per_stage[static_cast<std::size_t>(global_stage(shape, r, c))] = n / v;
    }
  }
  return given_split(layers, std::move(per_stage),
                     "Megatron's decoder_first/last_pipeline_num_layers");
}

}  // namespace

LayerSplit split_layers(int layers, const PipelineShape& shape, const LayerLayout& layout) {
  const int stages = shape.stages * chunks_of(shape);
  if (layout.empty()) return split_layers(layers, stages);
  if (layers < 1) throw InputError(fmt::format("layers must be at least 1 (got {})", layers));
  if (!layout.layers_per_stage.empty()) return listed_split(layers, stages, layout);
  return first_last_split(layers, shape, layout);
}

}  // namespace meshsim
