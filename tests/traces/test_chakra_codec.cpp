#include <doctest/doctest.h>

#include "sim/error.hpp"
#include "traces/chakra_codec.hpp"

using namespace meshsim;
using namespace meshsim::chakra;

TEST_CASE("Chakra framing: a varint length in front of each message, as protolib writes it") {
  pb::Node n;
  n.set_name(std::string(295, 'x'));  // field 2: tag byte, 2-byte length 295, 295 bytes = 298
  n.set_id(1);                        // field 1: tag byte, value byte = 2
  std::string out;
  append_delimited(out, n);
  // 300 = 0b10'0101100: low group 0x2c with the continuation bit (0xac), then 0x02.
  REQUIRE(out.size() == 302);
  CHECK(static_cast<unsigned char>(out[0]) == 0xac);
  CHECK(static_cast<unsigned char>(out[1]) == 0x02);
  pb::GlobalMetadata meta;
  meta.set_version("0.0.4");
  append_delimited(out, meta);
  DelimitedReader in(out, "f.0.et");
  pb::Node back;
  in.next(back, "node 0");
  CHECK(back.name() == n.name());
  CHECK(in.offset() == 302);
  pb::GlobalMetadata meta_back;
  in.next(meta_back, "GlobalMetadata");
  CHECK(meta_back.version() == "0.0.4");
  CHECK(in.at_end());
}

TEST_CASE("Chakra framing: truncated and corrupt input name the file, message and offset") {
  pb::Node n;
  n.set_name("x");
  std::string out;
  append_delimited(out, n);
  pb::Node back;
  {
    DelimitedReader in(std::string_view(out).substr(0, out.size() - 1), "f.1.et");
    CHECK_THROWS_WITH_AS(in.next(back, "node 0"),
                         "f.1.et: node 0 at byte 0: a message of 3 bytes, but only 2 bytes are "
                         "left (truncated?)",
                         InputError);
  }
  {
    const std::string bad(6, '\x80');
    DelimitedReader in(bad, "f.2.et");
    CHECK_THROWS_WITH_AS(in.next(back, "node 0"), doctest::Contains("longer than 5 bytes"),
                         InputError);
  }
  {
    const std::string end("\x80", 1);
    DelimitedReader in(end, "f.3.et");
    CHECK_THROWS_WITH_AS(in.next(back, "node 0"), doctest::Contains("inside its length prefix"),
                         InputError);
  }
  {
    const std::string junk("\x02\xff\xff", 3);  // field 31, wire type 7: not protobuf
    DelimitedReader in(junk, "f.4.et");
    CHECK_THROWS_WITH_AS(in.next(back, "node 0"), doctest::Contains("not a valid Chakra"),
                         InputError);
  }
}

TEST_CASE("Chakra attributes: integers in any of the schema's integer kinds") {
  pb::Node n;
  add_int64(n, "a", -5);
  add_uint64(n, "b", 7);
  add_int32(n, "c", 3);
  add_string(n, "d", "x");
  CHECK(integer_value(*find_attr(n, "a")) == -5);
  CHECK(integer_value(*find_attr(n, "b")) == 7);
  CHECK(integer_value(*find_attr(n, "c")) == 3);
  CHECK_FALSE(integer_value(*find_attr(n, "d")).has_value());
  CHECK(find_attr(n, "e") == nullptr);
  add_uint64(n, "huge", ~std::uint64_t{0});
  CHECK_FALSE(integer_value(*find_attr(n, "huge")).has_value());
}
