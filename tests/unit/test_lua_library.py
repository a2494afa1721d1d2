"""A script is sent with the library's definitions it uses, directly or through others, in
the library's order; a forward declaration comes with the assignment that fills it."""

from socialapp.stores.lua_library import used_part

LIBRARY = """-- the header, kept
local LIMIT = 3
local later

local function small(x)
  return x + LIMIT
end

local function unused(x)  -- calls small, but nothing calls it
  return small(x) * 2
end

local function big(x)
  return later(small(x))
end

later = function(x)
  return x - 1
end
"""


def test_a_script_gets_what_it_calls_and_what_that_calls():
    part = used_part(LIBRARY, "return big(1)")
    assert "local function big" in part and "local function small" in part
    assert "local later" in part and "later = function" in part and "local LIMIT" in part
    assert "unused" not in part
    assert part.index("local function small") < part.index("local function big")


def test_a_name_in_a_comment_brings_nothing():
    part = used_part(LIBRARY, "-- big(1) would do\nreturn small(1)")
    assert "local function big" not in part and "local function small" in part
    assert part.startswith("-- the header, kept")
