#include "sim/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <queue>

#include "sim/error.hpp"

namespace meshsim {

FlowNetwork::FlowNetwork(std::vector<double> port_capacity, bool incremental)
    : capacity_(std::move(port_capacity)), incremental_(incremental), stats_(capacity_.size()) {
  for (double& c : capacity_) {
    MESHSIM_CHECK(c > 0, "port capacity must be positive");
    c *= 1e-9;  // bytes per ns
  }
  residual_.assign(capacity_.size(), 0);
  demand_.assign(capacity_.size(), 0);
  users_.resize(capacity_.size());
  port_users_.resize(capacity_.size());
  busy_at_.assign(capacity_.size(), -1);
  port_seen_.assign(capacity_.size(), 0);
}

void FlowNetwork::sample_classes(std::vector<std::uint8_t> class_of, int classes,
                                 std::vector<double> multiplicity) {
  MESHSIM_CHECK(class_of.size() == capacity_.size() && multiplicity.size() == capacity_.size(),
                "one class and multiplicity per port");
  MESHSIM_CHECK(classes >= 0 && classes <= kMaxLinkClasses, "too many link classes");
  class_of_ = std::move(class_of);
  multiplicity_ = std::move(multiplicity);
  classes_ = classes;
}

double FlowNetwork::rate_of(std::int32_t tag) const {
  for (std::int32_t s : order_) {
    if (slots_[static_cast<std::size_t>(s)].tag == tag)
      return slots_[static_cast<std::size_t>(s)].rate;
  }
  return -1;
}

void FlowNetwork::start(std::int32_t tag, const GangFlow& gang, Nanos now) {
  advance(now);
  for (const auto& u : gang.usage) {
    MESHSIM_CHECK(u.port >= 0 && static_cast<std::size_t>(u.port) < capacity_.size(),
                  "flow over an unknown port");
  }
  std::int32_t slot;
  if (free_.empty()) {
    slot = static_cast<std::int32_t>(slots_.size());
    slots_.emplace_back();
    rank_.push_back(0);
    slot_seen_.push_back(0);
  } else {
    slot = free_.back();
    free_.pop_back();
  }
  Active& a = slots_[static_cast<std::size_t>(slot)];
  a = Active{tag, &gang, gang.work};
  for (const auto& u : gang.usage) {
    if (classes_ > 0) {
      const auto p = static_cast<std::size_t>(u.port);
      a.class_units[class_of_[p]] += u.units * multiplicity_[p];
    }
  }
  rank_[static_cast<std::size_t>(slot)] = static_cast<std::int32_t>(order_.size());
  order_.push_back(slot);
  attach(slot);
  std::vector<PortId> seeds;
  seeds.reserve(gang.usage.size());
  for (const auto& u : gang.usage) seeds.push_back(u.port);
  recompute_rates(now, seeds);
}

// Registers an active gang on its ports.
void FlowNetwork::attach(std::int32_t slot) {
  for (const auto& u : slots_[static_cast<std::size_t>(slot)].gang->usage) {
    const auto p = static_cast<std::size_t>(u.port);
    if (port_users_[p].empty()) {
      busy_at_[p] = static_cast<std::int32_t>(busy_.size());
      busy_.push_back(u.port);
    }
    port_users_[p].push_back(slot);
  }
}

void FlowNetwork::detach(std::int32_t slot) {
  for (const auto& u : slots_[static_cast<std::size_t>(slot)].gang->usage) {
    const auto p = static_cast<std::size_t>(u.port);
    auto& users = port_users_[p];
    const auto it = std::find(users.begin(), users.end(), slot);
    if (it == users.end()) continue;  // a port listed twice in one usage
    *it = users.back();
    users.pop_back();
    if (users.empty()) {
      const auto at = static_cast<std::size_t>(busy_at_[p]);
      busy_[at] = busy_.back();
      busy_at_[static_cast<std::size_t>(busy_[at])] = static_cast<std::int32_t>(at);
      busy_.pop_back();
      busy_at_[p] = -1;
    }
  }
}

void FlowNetwork::advance(Nanos now) {
  MESHSIM_CHECK(now >= now_, "the flow network cannot go back in time");
  const Nanos dt = now - now_;
  if (dt > 0 && !order_.empty()) {
    for (std::int32_t slot : order_) {
      auto& a = slots_[static_cast<std::size_t>(slot)];
      const double moved = std::min(a.remaining, a.rate * static_cast<double>(dt));
      a.remaining -= moved;
      for (const auto& u : a.gang->usage) {
        auto& st = stats_[static_cast<std::size_t>(u.port)];
        st.bytes += moved * u.units;
        st.bytes_by_cause[a.gang->cause] += moved * u.units;
      }
    }
    for (PortId p : busy_) stats_[static_cast<std::size_t>(p)].busy += dt;
  }
  now_ = now;
}

void FlowNetwork::finish_due(Nanos now, std::vector<std::int32_t>& done) {
  advance(now);
  const std::size_t before = done.size();
  std::vector<PortId> seeds;
  std::vector<std::int32_t> still;
  still.reserve(order_.size());
  for (std::int32_t slot : order_) {
    const auto& a = slots_[static_cast<std::size_t>(slot)];
    if (a.done_at <= now) {
      done.push_back(a.tag);
      for (const auto& u : a.gang->usage) seeds.push_back(u.port);
      detach(slot);
      free_.push_back(slot);
    } else {
      rank_[static_cast<std::size_t>(slot)] = static_cast<std::int32_t>(still.size());
      still.push_back(slot);
    }
  }
  order_.swap(still);
  // Equal completion times finish in tag order, whatever order they started in.
  std::sort(done.begin() + static_cast<std::ptrdiff_t>(before), done.end());
  recompute_rates(now, seeds);
}

// The active gangs reached from `seeds` through shared ports, in start order (all of them when
// not incremental).
void FlowNetwork::component(const std::vector<PortId>& seeds) {
  comp_.clear();
  if (!incremental_) {
    comp_ = order_;
    return;
  }
  seen_ports_.clear();
  const auto visit = [&](PortId p) {
    auto& seen = port_seen_[static_cast<std::size_t>(p)];
    if (seen == 0) {
      seen = 1;
      seen_ports_.push_back(p);
    }
  };
  for (PortId p : seeds) visit(p);
  for (std::size_t i = 0; i < seen_ports_.size(); ++i) {
    for (std::int32_t slot : port_users_[static_cast<std::size_t>(seen_ports_[i])]) {
      auto& seen = slot_seen_[static_cast<std::size_t>(slot)];
      if (seen != 0) continue;
      seen = 1;
      comp_.push_back(slot);
      for (const auto& u : slots_[static_cast<std::size_t>(slot)].gang->usage) visit(u.port);
    }
  }
  for (PortId p : seen_ports_) port_seen_[static_cast<std::size_t>(p)] = 0;
  for (std::int32_t slot : comp_) slot_seen_[static_cast<std::size_t>(slot)] = 0;
  std::sort(comp_.begin(), comp_.end(), [&](std::int32_t a, std::int32_t b) {
    return rank_[static_cast<std::size_t>(a)] < rank_[static_cast<std::size_t>(b)];
  });
}

void FlowNetwork::recompute_rates(Nanos now, const std::vector<PortId>& seeds) {
  ++recomputations_;
  component(seeds);
  fill();
  if (classes_ > 0) record_sample(now);
  next_completion_ = kNever;
  for (std::int32_t slot : order_) {
    auto& a = slots_[static_cast<std::size_t>(slot)];
    if (a.gang->usage.empty() || a.remaining <= 0) {
      a.done_at = now;  // nothing to move
    } else {
      MESHSIM_CHECK(a.rate > 0, "a flow got no bandwidth");
      a.done_at = now + static_cast<Nanos>(std::ceil(a.remaining / a.rate - 1e-9));
    }
    next_completion_ = std::min(next_completion_, a.done_at);
  }
}

// Max-min fairness by progressive filling over the component: all its gangs rise together; the
// port with the least residual capacity per unfrozen unit flow saturates first and freezes the
// gangs through it.
void FlowNetwork::fill() {
  touched_.clear();
  for (std::size_t g = 0; g < comp_.size(); ++g) {
    for (const auto& u : slots_[static_cast<std::size_t>(comp_[g])].gang->usage) {
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
  std::vector<bool> frozen(comp_.size(), false);
  std::size_t unfrozen = comp_.size();
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
      auto& a = slots_[static_cast<std::size_t>(comp_[gi])];
      a.rate = level;
      for (const auto& u : a.gang->usage) {
        const auto q = static_cast<std::size_t>(u.port);
        residual_[q] = std::max(0.0, residual_[q] - u.units * level);
        demand_[q] -= u.units;
        if (q != i && demand_[q] > 1e-12) heap.emplace(residual_[q] / demand_[q], u.port);
      }
    }
  }
  for (PortId p : touched_) users_[static_cast<std::size_t>(p)].clear();
}

void FlowNetwork::record_sample(Nanos now) {
  LinkRateSample s{now, std::vector<double>(static_cast<std::size_t>(classes_), 0.0)};
  for (std::int32_t slot : order_) {
    const auto& a = slots_[static_cast<std::size_t>(slot)];
    for (std::size_t c = 0; c < s.bytes_per_s.size(); ++c) {
      s.bytes_per_s[c] += a.rate * a.class_units[c] * 1e9;
    }
  }
  if (!samples_.empty() && samples_.back().time == now) {
    samples_.back() = std::move(s);
  } else {
    samples_.push_back(std::move(s));
  }
}

}  // namespace meshsim
