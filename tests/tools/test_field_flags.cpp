#include <doctest/doctest.h>

#include "tools/field_flags.hpp"

using namespace meshsim;

TEST_CASE("field_flags: a field is the flag of its name unless the sub-command says otherwise") {
  CHECK(flag_of_field("ring-attention", "kv_heads") == "--kv-heads");
  CHECK(flag_of_field("pipeline", "chunks") == "--chunks");
  CHECK(flag_of_field("step", "chunks") == "--vp");
  CHECK(flag_of_field("sweep", "stages") == "--pp");
  CHECK(in_flag_words("ring-attention", "`seq` 64 must be divisible by `cp` 3") ==
        "--seq 64 must be divisible by --cp 3");
  CHECK(in_flag_words("step", "`chunks` must be at least 2 for `schedule` interleaved") ==
        "--vp must be at least 2 for --schedule interleaved");
}
