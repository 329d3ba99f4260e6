// The 1F1B family of pipeline orders (pipeline_orders.hpp): GPipe, 1F1B, Megatron's interleaved
// 1F1B and ZB-H1. None of them places communication: the Program builder exchanges at every step
// boundary. Where each order comes from is in pipeline_orders.cpp.
#include <algorithm>
#include <cstddef>
#include <deque>
#include <utility>

#include "schedules/pipeline_orders_steps.hpp"

namespace meshsim::pipeline_detail {
namespace {

// Megatron's schedule table: virtual step k -> (microbatch, chunk). Groups of g microbatches
// starting at s (a group that would reach the end takes every remaining microbatch); within a
// group, chunk 0 over the group's microbatches, then chunk 1, and so on.
std::vector<std::pair<int, int>> interleaved_table(int m, int v, int g) {
  std::vector<std::pair<int, int>> table;
  table.reserve(static_cast<std::size_t>(m) * static_cast<std::size_t>(v));
  for (int s = 0; s < m; s += g) {
    const int end = s + g >= m ? m : s + g;
    for (int c = 0; c < v; ++c) {
      for (int mb = s; mb < end; ++mb) table.emplace_back(mb, c);
    }
    if (end == m) break;
  }
  return table;
}

int interleaved_warmup(int p, int m, int v, int g, int r) {
  return std::min(2 * (p - r - 1) + (v - 1) * g, m * v);
}

}  // namespace

// GPipe: every forward, then every backward, both in microbatch order.
Order gpipe_order(int m) {
  Order out;
  out.reserve(static_cast<std::size_t>(2 * m));
  for (int i = 0; i < m; ++i) out.push_back(make(PipeWork::forward, i, 0));
  for (int i = 0; i < m; ++i) out.push_back(make(PipeWork::backward, i, 0));
  return out;
}

// 1F1B: warm-up forwards, steady (F, B) pairs, cool-down backwards.
Order one_f_one_b_order(int p, int m, int r) {
  const int warmup = std::min(p - r - 1, m);
  Order out;
  out.reserve(static_cast<std::size_t>(2 * m));
  for (int i = 0; i < warmup; ++i) out.push_back(make(PipeWork::forward, i, 0));
  for (int k = 0; k < m - warmup; ++k) {
    out.push_back(make(PipeWork::forward, warmup + k, 0));
    out.push_back(make(PipeWork::backward, k, 0));
  }
  for (int k = m - warmup; k < m; ++k) out.push_back(make(PipeWork::backward, k, 0));
  return out;
}

// Megatron's interleaved 1F1B: forward of step k is table[k]; backward of step k is
// (table[k].microbatch, v-1-table[k].chunk).
Order interleaved_order(int p, int m, int v, int g, int r) {
  const auto table = interleaved_table(m, v, g);
  const int total = m * v;
  const int warmup = interleaved_warmup(p, m, v, g, r);
  const auto fwd = [&](int k) {
    const auto& e = table[static_cast<std::size_t>(k)];
    return make(PipeWork::forward, e.first, e.second);
  };
  const auto bwd = [&](int k) {
    const auto& e = table[static_cast<std::size_t>(k)];
    return make(PipeWork::backward, e.first, v - 1 - e.second);
  };
  Order out;
  out.reserve(static_cast<std::size_t>(2 * total));
  for (int k = 0; k < warmup; ++k) out.push_back(fwd(k));
  for (int k = 0; k < total - warmup; ++k) {
    out.push_back(fwd(k + warmup));
    out.push_back(bwd(k));
  }
  for (int k = total - warmup; k < total; ++k) out.push_back(bwd(k));
  return out;
}

// ZB-H1: 1F1B's warm-up and steady state with the backward split; after each B the W's wait in
// a FIFO, and rank r lets up to r of them wait (the last rank defers the most), so the W's that
// pile up fill the cool-down, and the rest run at the end.
Order zb_h1_order(int p, int m, int r) {
  const int warmup = std::min(p - r - 1, m);
  const auto deferred = static_cast<std::size_t>(r);
  Order out;
  out.reserve(static_cast<std::size_t>(3 * m));
  std::deque<int> pending;
  const auto input_grad = [&](int k) {
    out.push_back(make(PipeWork::input_grad, k, 0));
    pending.push_back(k);
    if (pending.size() > deferred) {
      out.push_back(make(PipeWork::weight_grad, pending.front(), 0));
      pending.pop_front();
    }
  };
  for (int i = 0; i < warmup; ++i) out.push_back(make(PipeWork::forward, i, 0));
  for (int k = 0; k < m - warmup; ++k) {
    out.push_back(make(PipeWork::forward, warmup + k, 0));
    input_grad(k);
  }
  for (int k = m - warmup; k < m; ++k) input_grad(k);
  for (const int k : pending) out.push_back(make(PipeWork::weight_grad, k, 0));
  return out;
}

}  // namespace meshsim::pipeline_detail
