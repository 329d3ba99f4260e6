#include "sim/intervals.hpp"

#include <algorithm>

namespace meshsim {

std::vector<Interval> merge_intervals(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& iv : v) {
    if (iv.second <= iv.first) continue;
    if (!out.empty() && iv.first <= out.back().second) {
      out.back().second = std::max(out.back().second, iv.second);
    } else {
      out.push_back(iv);
    }
  }
  return out;
}

Nanos total_length(const std::vector<Interval>& merged) {
  Nanos total = 0;
  for (const auto& iv : merged) total += iv.second - iv.first;
  return total;
}

std::vector<Interval> subtract_intervals(const std::vector<Interval>& a,
                                         const std::vector<Interval>& b) {
  std::vector<Interval> out;
  std::size_t j = 0;
  for (auto [s, e] : a) {
    while (j < b.size() && b[j].second <= s) ++j;
    for (std::size_t k = j; s < e && k < b.size() && b[k].first < e; ++k) {
      if (b[k].first > s) out.emplace_back(s, b[k].first);
      s = std::max(s, b[k].second);
    }
    if (s < e) out.emplace_back(s, e);
  }
  return out;
}

}  // namespace meshsim
