#include <doctest/doctest.h>

#include "tools/compare_runs.hpp"

using namespace meshsim;

namespace {

ComparedRow row(const char* id, double measured, std::optional<double> predicted) {
  ComparedRow r;
  r.id = id;
  r.table = "t";
  r.metric = "iteration_time";
  r.measured = measured;
  r.predicted = predicted;
  return r;
}

}  // namespace

TEST_CASE("compare: a table's MAPE, worst row and pairs kept in order") {
  const ComparedRow a = row("a", 1.0, 1.1), b = row("b", 2.0, 1.5), c = row("c", 3.0, 1.2),
                    d = row("d", 4.0, std::nullopt);
  const TableSummary s = summarize({&a, &b, &c, &d});
  CHECK(s.rows == 4);
  CHECK(s.expressed == 3);
  // |+10 %|, |-25 %|, |-60 %| -> mean 31.67 %
  CHECK(s.mape == doctest::Approx((0.1 + 0.25 + 0.6) / 3));
  CHECK(s.worst == doctest::Approx(-0.6));
  CHECK(s.worst_row == "c");
  // Pairs (a,b) kept (1.1 < 1.5), (a,c) kept (1.1 < 1.2), (b,c) inverted (1.5 > 1.2).
  CHECK(s.pairs == 3);
  CHECK(s.pairs_kept == 2);
}

TEST_CASE("compare: the JSON form carries every row, skipped ones with the reason") {
  Comparison c;
  c.rows.push_back(row("a", 2.0, 2.5));
  ComparedRow s = row("b", 1.0, std::nullopt);
  s.reason = "no profile";
  c.rows.push_back(s);
  c.tables["t"] = summarize({&c.rows[0], &c.rows[1]});
  const auto j = comparison_json(c);
  CHECK(j["rows"][0]["predicted"] == 2.5);
  CHECK(j["rows"][0]["error"].get<double>() == doctest::Approx(0.25));
  CHECK(j["rows"][1]["skipped"] == true);
  CHECK(j["rows"][1]["reason"] == "no profile");
  CHECK(j["tables"]["t"]["expressed"] == 1);
  CHECK(comparison_text(c).find("skipped: no profile") != std::string::npos);
  // |+25 %| over the one expressed row; the skipped row's reason counted.
  CHECK(comparison_markdown(c).find(
            "| t | 2 | 1 | 25.0 % | +25.0 % (a) | 0 / 0 | no profile (1) |") != std::string::npos);
}
