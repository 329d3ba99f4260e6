#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "validate/run/issue_order.hpp"

using namespace meshsim;
using namespace std::chrono_literals;

TEST_CASE("the k-th collective of a group waits until the (k-1)-th was issued") {
  GroupIssueOrder order(2);
  std::atomic<int> issued_second{0};
  std::thread second([&] {
    REQUIRE(order.wait_turn(0, 1));
    issued_second = 1;
    order.issued(0);
  });
  std::this_thread::sleep_for(30ms);
  CHECK(issued_second == 0);     // still waiting for ordinal 0
  CHECK(order.wait_turn(1, 0));  // another group is independent
  CHECK(order.wait_turn(0, 0));
  order.issued(0);
  second.join();
  CHECK(issued_second == 1);
  CHECK(order.wait_turn(0, 2));
}

TEST_CASE("abort releases waiters with false") {
  GroupIssueOrder order(1);
  bool result = true;
  std::thread waiter([&] { result = order.wait_turn(0, 5); });
  std::this_thread::sleep_for(10ms);
  order.abort();
  waiter.join();
  CHECK_FALSE(result);
}
