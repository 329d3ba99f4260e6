#include <doctest/doctest.h>

#include "traces/markup.hpp"

using namespace meshsim;

TEST_CASE("markup_escape: the five characters markup gives meaning to, nothing else") {
  CHECK(markup_escape("<&>\"'") == "&lt;&amp;&gt;&quot;&#39;");
  CHECK(markup_escape("F mb 3 c1 -> rank 2 (100%)") == "F mb 3 c1 -&gt; rank 2 (100%)");
  CHECK(markup_escape("") == "");
  CHECK(markup_escape("&amp;") == "&amp;amp;");  // escaping is not idempotent: escape once
}
