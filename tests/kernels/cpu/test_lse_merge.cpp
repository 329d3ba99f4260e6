#include <doctest/doctest.h>

#include <initializer_list>

#include <cmath>
#include <vector>

#include "kernels/cpu/attention.hpp"
#include "kernels/reference/attention.hpp"
#include "tests/kernels/cpu/attention_test_util.hpp"
#include "tests/kernels/kernel_test_util.hpp"

using namespace meshsim::kernels;
using namespace meshsim::kernels::cpu;
using namespace meshsim::kernels::test;

namespace {

// Runs lse_merge on `rows` of random accumulators and blocks; compares every row of out_acc and
// lse_acc with reference::lse_merge (the definition log(e^a + e^b) in float64) on the merged rows
// and with the untouched inputs elsewhere.
void check_merge(ScalarType t, const std::vector<RowSpan>& rows, std::uint64_t seed) {
  CAPTURE(to_string(t));
  Rng rng(seed);
  const Extents e{2, 12, 3, 5};
  Buffer acc = random_buffer(t, e.size(), rng);
  Buffer blk = random_buffer(t, e.size(), rng);
  Buffer lse_acc = random_buffer(t, 2 * 3 * 12, rng, -3.0, 8.0);
  Buffer lse_blk = random_buffer(t, 2 * 3 * 12, rng, -3.0, 8.0);
  std::vector<double> want_out = acc.values(), want_lse = lse_acc.values();
  // one row where the accumulator is still empty (-inf): the merge takes the block as it is
  want_lse[0] = -INFINITY;
  lse_acc.set(want_lse);

  // reference over the merged rows, one (batch, head) at a time: rows x head_dim per head
  const std::vector<double> all_acc = acc.values(), all_blk = blk.values(),
                            all_lb = lse_blk.values();
  for (std::int64_t b = 0; b < e.batch; ++b) {
    for (std::int64_t h = 0; h < e.heads; ++h) {
      for (const RowSpan& s : rows) {
        for (std::int64_t r = s.row; r < s.row + s.count; ++r) {
          const auto o = static_cast<std::size_t>(((b * e.tokens + r) * e.heads + h) * e.dim);
          const auto l = static_cast<std::size_t>((b * e.heads + h) * e.tokens + r);
          std::vector<double> oa(all_acc.begin() + static_cast<std::ptrdiff_t>(o),
                                 all_acc.begin() + static_cast<std::ptrdiff_t>(o) + e.dim);
          const std::vector<double> ob(all_blk.begin() + static_cast<std::ptrdiff_t>(o),
                                       all_blk.begin() + static_cast<std::ptrdiff_t>(o) + e.dim);
          std::vector<double> la{want_lse[l]};
          const std::vector<double> lb{all_lb[l]};
          reference::lse_merge(1, e.dim, oa, la, ob, lb);
          std::copy(oa.begin(), oa.end(), want_out.begin() + static_cast<std::ptrdiff_t>(o));
          want_lse[l] = la[0];
        }
      }
    }
  }
  lse_merge(rows, heads_view(blk.data(), t, 2, 12, 3, 5), lse_view(lse_blk.data(), t, 2, 3, 12),
            heads_view(acc.data(), t, 2, 12, 3, 5), lse_view(lse_acc.data(), t, 2, 3, 12));
  // max |x - ref| / max |ref|: fp32 1e-5 (a few exp/log1p in float32), fp64 1e-12
  CHECK(max_rel_error(acc.values(), want_out) <= tolerance(t));
  std::vector<double> got_lse = lse_acc.values();
  CHECK(max_rel_error(got_lse, want_lse) <= tolerance(t));
}

}  // namespace

TEST_CASE("lse_merge equals log-sum-exp merging by definition, all rows and a subset") {
  for (ScalarType t : {ScalarType::fp32, ScalarType::fp64}) {
    check_merge(t, {{0, 0, 12}}, 1);
    check_merge(t, {{6, 0, 6}}, 2);  // the zigzag's second half
    check_merge(t, {{0, 0, 2}, {9, 0, 1}}, 3);
  }
}

TEST_CASE("lse_merge is stable where e^lse overflows float32") {
  // lse_acc = lse_blk = 200 (e^200 > FLT_MAX): lse' = 200 + log 2, out' = (out_acc + out_blk) / 2.
  std::vector<float> acc{2, 4}, blk{6, 8}, la{200}, lb{200};
  const std::vector<RowSpan> rows{{0, 0, 1}};
  lse_merge(rows, heads_view(blk.data(), ScalarType::fp32, 1, 1, 1, 2),
            lse_view(lb.data(), ScalarType::fp32, 1, 1, 1),
            heads_view(acc.data(), ScalarType::fp32, 1, 1, 1, 2),
            lse_view(la.data(), ScalarType::fp32, 1, 1, 1));
  CHECK(acc[0] == doctest::Approx(4.0));
  CHECK(acc[1] == doctest::Approx(6.0));
  CHECK(la[0] == doctest::Approx(200.0 + std::log(2.0)));
}
