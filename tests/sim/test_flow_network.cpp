#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "sim/flow_network.hpp"

using namespace meshsim;

namespace {

// Runs every gang from time 0 and returns each one's completion time, by tag.
std::vector<Nanos> finish_times(FlowNetwork& net, const std::vector<GangFlow>& gangs) {
  for (std::size_t i = 0; i < gangs.size(); ++i)
    net.start(static_cast<std::int32_t>(i), gangs[i], 0);
  std::vector<Nanos> at(gangs.size(), -1);
  std::vector<std::int32_t> done;
  while (net.next_completion() != FlowNetwork::kNever) {
    const Nanos t = net.next_completion();
    done.clear();
    net.finish_due(t, done);
    for (auto tag : done) at[static_cast<std::size_t>(tag)] = t;
  }
  return at;
}

}  // namespace

TEST_CASE("one flow runs at the port's capacity") {
  FlowNetwork net({1e9});  // 1 byte per ns
  GangFlow g{{{0, 1.0}}, 5000, 0};
  CHECK(finish_times(net, {g})[0] == 5000);  // 5000 bytes / 1 byte/ns
}

TEST_CASE("two flows on one port share it; the survivor speeds up") {
  FlowNetwork net({1e9});
  GangFlow small{{{0, 1.0}}, 1000, 0};
  GangFlow big{{{0, 1.0}}, 3000, 0};
  const auto t = finish_times(net, {small, big});
  // both at 0.5 B/ns: small done at 2000 (1000 B); big has 2000 B left, alone at 1 B/ns: 4000
  CHECK(t[0] == 2000);
  CHECK(t[1] == 4000);
  // bytes conserved on the port: 1000 + 3000
  CHECK(net.stats()[0].bytes == doctest::Approx(4000.0));
  CHECK(net.stats()[0].busy == 4000);
}

TEST_CASE("max-min fairness: a flow held back elsewhere leaves the rest to the others") {
  // Port 0 (1 B/ns) carries A and B; port 1 (0.25 B/ns) carries B only.
  // B is limited to 0.25 by port 1; A gets the remaining 0.75 of port 0.
  FlowNetwork net({1e9, 0.25e9});
  GangFlow a{{{0, 1.0}}, 750, 0};
  GangFlow b{{{0, 1.0}, {1, 1.0}}, 250, 0};
  const auto t = finish_times(net, {a, b});
  CHECK(t[0] == 1000);  // 750 / 0.75
  CHECK(t[1] == 1000);  // 250 / 0.25
}

TEST_CASE("a gang loads each port by its unit flows") {
  // Two unit flows of the gang cross port 0 (2 B/ns): rate per unit flow 1 B/ns.
  FlowNetwork net({2e9, 8e9});
  GangFlow g{{{0, 2.0}, {1, 1.0}}, 1000, 0};
  CHECK(finish_times(net, {g})[0] == 1000);
  CHECK(net.stats()[0].bytes == doctest::Approx(2000.0));  // 2 unit flows x 1000 B
  CHECK(net.stats()[1].bytes == doctest::Approx(1000.0));
}

TEST_CASE("a gang with nothing to move finishes at once") {
  FlowNetwork net({1e9});
  GangFlow barrier{{}, 0, 0};
  CHECK(finish_times(net, {barrier})[0] == 0);
}

namespace {

// A random gang over `ports` ports: 1-4 distinct ports, 1-3 unit flows each, 1-100 kB.
GangFlow random_gang(std::mt19937& rng, int ports) {
  GangFlow g;
  std::uniform_int_distribution<int> port(0, ports - 1), count(1, 4), units(1, 3);
  std::uniform_real_distribution<double> work(1e3, 1e5);
  const int n = count(rng);
  for (int k = 0; k < n; ++k) {
    const PortId p = port(rng);
    const bool dup =
        std::any_of(g.usage.begin(), g.usage.end(), [&](const PortLoad& l) { return l.port == p; });
    if (!dup) g.usage.push_back({p, static_cast<double>(units(rng))});
  }
  g.work = work(rng);
  return g;
}

// Max-min fairness, checked from its definition: no port is over capacity, and every active gang
// has a bottleneck port, saturated, on which no other gang runs faster.
void check_max_min(const FlowNetwork& net, const std::vector<GangFlow>& gangs,
                   const std::vector<double>& capacity) {
  std::vector<double> load(capacity.size(), 0.0);
  for (std::size_t i = 0; i < gangs.size(); ++i) {
    const double r = net.rate_of(static_cast<std::int32_t>(i));
    if (r < 0) continue;
    for (const auto& u : gangs[i].usage) load[static_cast<std::size_t>(u.port)] += r * u.units;
  }
  for (std::size_t p = 0; p < capacity.size(); ++p) CHECK(load[p] <= capacity[p] * (1 + 1e-9));
  for (std::size_t i = 0; i < gangs.size(); ++i) {
    const double r = net.rate_of(static_cast<std::int32_t>(i));
    if (r < 0) continue;
    bool bottleneck = false;
    for (const auto& u : gangs[i].usage) {
      const auto p = static_cast<std::size_t>(u.port);
      if (load[p] < capacity[p] * (1 - 1e-9)) continue;
      bool fastest = true;
      for (std::size_t j = 0; j < gangs.size(); ++j) {
        const double rj = net.rate_of(static_cast<std::int32_t>(j));
        const bool on_p = std::any_of(gangs[j].usage.begin(), gangs[j].usage.end(),
                                      [&](const PortLoad& l) { return l.port == u.port; });
        if (rj >= 0 && on_p && rj > r * (1 + 1e-9)) fastest = false;
      }
      bottleneck = bottleneck || fastest;
    }
    CHECK(bottleneck);
  }
}

}  // namespace

TEST_CASE("incremental recomputation gives the full recomputation's rates and times") {
  // 40 random sets of 30 gangs over 12 ports (capacities 0.5-4 B/ns), started at random times
  // in [0, 50 us): after every start and every completion, each active gang's rate from the
  // incremental network equals the full refill's within 1e-9 relative (the same filling order
  // makes them equal bit for bit), and both finish every gang at the same nanosecond.
  std::mt19937 rng(17);
  for (int set = 0; set < 40; ++set) {
    std::uniform_real_distribution<double> cap(0.5e9, 4e9);
    std::vector<double> capacity(12);
    for (double& c : capacity) c = cap(rng);
    std::vector<double> per_ns(capacity);
    for (double& c : per_ns) c *= 1e-9;
    std::vector<GangFlow> gangs;
    std::vector<std::pair<Nanos, std::int32_t>> starts;
    std::uniform_int_distribution<Nanos> at(0, 50'000);
    for (int i = 0; i < 30; ++i) {
      gangs.push_back(random_gang(rng, 12));
      starts.emplace_back(at(rng), i);
    }
    std::sort(starts.begin(), starts.end());
    FlowNetwork inc(capacity, true), full(capacity, false);
    std::vector<std::int32_t> done_inc, done_full;
    std::size_t next = 0;
    const auto compare = [&] {
      REQUIRE(inc.active() == full.active());
      for (std::size_t i = 0; i < gangs.size(); ++i) {
        const double a = inc.rate_of(static_cast<std::int32_t>(i));
        const double b = full.rate_of(static_cast<std::int32_t>(i));
        CHECK(std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)));
      }
      check_max_min(inc, gangs, per_ns);
    };
    while (next < starts.size() || inc.next_completion() != FlowNetwork::kNever) {
      REQUIRE(inc.next_completion() == full.next_completion());
      const Nanos t = inc.next_completion();
      if (next < starts.size() && starts[next].first <= t) {
        const auto [when, tag] = starts[next++];
        inc.start(tag, gangs[static_cast<std::size_t>(tag)], when);
        full.start(tag, gangs[static_cast<std::size_t>(tag)], when);
      } else {
        inc.finish_due(t, done_inc);
        full.finish_due(t, done_full);
        REQUIRE(done_inc == done_full);
      }
      compare();
    }
    CHECK(done_inc.size() == gangs.size());
    CHECK(inc.recomputations() == full.recomputations());
  }
}
