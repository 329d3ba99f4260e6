#include <doctest/doctest.h>

#include <cstring>

#include "validate/tensors/npy_writer.hpp"

using namespace meshsim;

TEST_CASE("npy: magic, version, padded header, little-endian data") {
  const std::string f = npy_file({2, 3}, {1, 2, 3, 4, 5, 6}, DType::bf16);
  CHECK(f.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  const std::size_t header_len = static_cast<unsigned char>(f[8]) |
                                 (static_cast<std::size_t>(static_cast<unsigned char>(f[9])) << 8);
  CHECK((10 + header_len) % 64 == 0);
  const std::string header = f.substr(10, header_len);
  CHECK(header.find("'descr': '<f4'") != std::string::npos);
  CHECK(header.find("'shape': (2, 3)") != std::string::npos);
  CHECK(header.back() == '\n');
  REQUIRE(f.size() == 10 + header_len + 6 * 4);
  float last = 0;
  std::memcpy(&last, f.data() + f.size() - 4, 4);
  CHECK(last == 6.0f);
  const std::string d = npy_file({3}, {0.1, 0.2, 0.3}, DType::fp64);
  CHECK(d.find("'descr': '<f8'") != std::string::npos);
  CHECK(d.find("'shape': (3,)") != std::string::npos);
  double first = 0;
  std::memcpy(&first, d.data() + d.size() - 24, 8);
  CHECK(first == 0.1);
}
