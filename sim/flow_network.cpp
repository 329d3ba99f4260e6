#include "sim/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <queue>

#include "sim/error.hpp"

namespace meshsim {

FlowNetwork::FlowNetwork(std::vector<double> port_capacity)
    : capacity_(std::move(port_capacity)), stats_(capacity_.size()) {
  for (double& c : capacity_) {
    MESHSIM_CHECK(c > 0, "port capacity must be positive");
    c *= 1e-9;  // bytes per ns
  }
  residual_.assign(capacity_.size(), 0);
  demand_.assign(capacity_.size(), 0);
  users_.resize(capacity_.size());
}

void FlowNetwork::sample_classes(std::vector<std::uint8_t> class_of, int classes) {
  MESHSIM_CHECK(class_of.size() == capacity_.size(), "one class per port");
  class_of_ = std::move(class_of);
  classes_ = classes;
}

void FlowNetwork::start(std::int32_t tag, const GangFlow& gang, Nanos now) {
  advance(now);
  for (const auto& u : gang.usage) {
    MESHSIM_CHECK(u.port >= 0 && static_cast<std::size_t>(u.port) < capacity_.size(),
                  "flow over an unknown port");
  }
  active_.push_back(Active{tag, &gang, gang.work});
  recompute_rates(now);
}

void FlowNetwork::advance(Nanos now) {
  MESHSIM_CHECK(now >= now_, "the flow network cannot go back in time");
  const Nanos dt = now - now_;
  if (dt > 0 && !active_.empty()) {
    for (auto& a : active_) {
      const double moved = std::min(a.remaining, a.rate * static_cast<double>(dt));
      a.remaining -= moved;
      for (const auto& u : a.gang->usage) {
        auto& s = stats_[static_cast<std::size_t>(u.port)];
        s.bytes += moved * u.units;
        s.bytes_by_cause[a.gang->cause] += moved * u.units;
      }
    }
    // touched_ holds the ports of the active gangs since the last recomputation.
    for (PortId p : touched_) stats_[static_cast<std::size_t>(p)].busy += dt;
  }
  now_ = now;
}

void FlowNetwork::finish_due(Nanos now, std::vector<std::int32_t>& done) {
  advance(now);
  const std::size_t before = done.size();
  std::vector<Active> still;
  still.reserve(active_.size());
  for (auto& a : active_) {
    if (a.done_at <= now) {
      done.push_back(a.tag);
    } else {
      still.push_back(a);
    }
  }
  active_.swap(still);
  // Equal completion times finish in tag order, whatever order they started in.
  std::sort(done.begin() + static_cast<std::ptrdiff_t>(before), done.end());
  recompute_rates(now);
}

// Max-min fairness by progressive filling: all unfrozen gangs rise together; the port with the
// least residual capacity per unfrozen unit flow saturates first and freezes the gangs through it.
void FlowNetwork::recompute_rates(Nanos now) {
  ++recomputations_;
  touched_.clear();
  for (std::size_t g = 0; g < active_.size(); ++g) {
    for (const auto& u : active_[g].gang->usage) {
      const auto p = static_cast<std::size_t>(u.port);
      if (users_[p].empty()) {
        touched_.push_back(u.port);
        residual_[p] = capacity_[p];
        demand_[p] = 0;
      }
      users_[p].emplace_back(static_cast<std::int32_t>(g), u.units);
      demand_[p] += u.units;
    }
  }
  using Entry = std::pair<double, PortId>;  // (level at which the port saturates, port)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  for (PortId p : touched_) {
    const auto i = static_cast<std::size_t>(p);
    if (demand_[i] > 0) heap.emplace(residual_[i] / demand_[i], p);
  }
  std::vector<bool> frozen(active_.size(), false);
  std::size_t unfrozen = active_.size();
  while (!heap.empty() && unfrozen > 0) {
    const auto [level, p] = heap.top();
    heap.pop();
    const auto i = static_cast<std::size_t>(p);
    if (demand_[i] <= 0 || level != residual_[i] / demand_[i]) continue;  // stale entry
    for (const auto& [g, units] : users_[i]) {
      const auto gi = static_cast<std::size_t>(g);
      if (frozen[gi]) continue;
      frozen[gi] = true;
      --unfrozen;
      active_[gi].rate = level;
      for (const auto& u : active_[gi].gang->usage) {
        const auto q = static_cast<std::size_t>(u.port);
        residual_[q] = std::max(0.0, residual_[q] - u.units * level);
        demand_[q] -= u.units;
        if (q != i && demand_[q] > 1e-12) heap.emplace(residual_[q] / demand_[q], u.port);
      }
    }
  }
  for (PortId p : touched_) users_[static_cast<std::size_t>(p)].clear();
  if (classes_ > 0) {
    LinkRateSample s{now, std::vector<double>(static_cast<std::size_t>(classes_), 0.0)};
    for (const auto& a : active_) {
      for (const auto& u : a.gang->usage) {
        s.bytes_per_s[class_of_[static_cast<std::size_t>(u.port)]] += a.rate * u.units * 1e9;
      }
    }
    if (!samples_.empty() && samples_.back().time == now) {
      samples_.back() = std::move(s);
    } else {
      samples_.push_back(std::move(s));
    }
  }
  next_completion_ = kNever;
  for (auto& a : active_) {
    if (a.gang->usage.empty() || a.remaining <= 0) {
      a.done_at = now;  // nothing to move
    } else {
      MESHSIM_CHECK(a.rate > 0, "a flow got no bandwidth");
      a.done_at = now + static_cast<Nanos>(std::ceil(a.remaining / a.rate - 1e-9));
    }
    next_completion_ = std::min(next_completion_, a.done_at);
  }
}

}  // namespace meshsim
