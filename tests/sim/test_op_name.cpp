#include <doctest/doctest.h>

#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "sim/op_name.hpp"

using namespace meshsim;

TEST_CASE("op name: reads as the string it was given, however it was given") {
  const std::string text = "qkv gemm";
  const OpName from_string(text), from_literal("qkv gemm"), from_view{std::string_view(text)};
  CHECK(from_string.view() == "qkv gemm");
  CHECK(from_string == from_literal);
  CHECK(from_literal == from_view);
  CHECK(from_string == text);
  CHECK(from_string == std::string_view("qkv gemm"));
  CHECK_FALSE(from_string == "qkv");
  CHECK(from_string.size() == 8);
  CHECK(from_string.find("gemm") == 4);
  CHECK(from_string.substr(0, 3) == "qkv");
  CHECK(from_string.starts_with("qkv"));
  CHECK(from_string.ends_with("gemm"));
  CHECK(fmt::format("'{}'", from_string) == "'qkv gemm'");
  std::ostringstream os;
  os << from_string;
  CHECK(os.str() == "qkv gemm");
  CHECK(from_string.str() == text);
}

TEST_CASE("op name: interned, one stored text per distinct name, whatever the source's lifetime") {
  OpName a;
  {
    std::string temporary = fmt::format("step {}", 17);
    a = OpName(temporary);
    temporary.assign("overwritten");
  }
  const OpName b(fmt::format("step {}", 17));
  CHECK(a.view() == "step 17");
  CHECK(a.view().data() == b.view().data());  // the same stored text
  CHECK(OpName("step 18").view().data() != a.view().data());
}

TEST_CASE("op name: the empty name, default or given, is one name") {
  const OpName none, given("");
  CHECK(none.empty());
  CHECK(given.empty());
  CHECK(none == given);
  CHECK(none.view().empty());
}

TEST_CASE("op name: threads interning the same names agree on the stored texts") {
  constexpr int kThreads = 4, kNames = 200;
  std::vector<std::vector<const char*>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &seen] {
      for (int i = 0; i < kNames; ++i) {
        seen[static_cast<std::size_t>(t)].push_back(
            OpName(fmt::format("thread op {}", i)).view().data());
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 1; t < kThreads; ++t) CHECK(seen[static_cast<std::size_t>(t)] == seen[0]);
  CHECK(std::set<const char*>(seen[0].begin(), seen[0].end()).size() == kNames);
}
