"""The guard over what the stores ask of MongoDB (operations.py), and its verdict."""

from __future__ import annotations

import mongomock
import pytest

from socialapp.config import Settings
from tests.stores import documents, operations

TABLE = """
### Operations the stores may use
| operation | kind | same on mongomock and MongoDB 7 because |
|---|---|---|
| `find` | method | ... |
| `$in` | query | ... |

### Next section
| `$where` | query | not in the section |
"""


def test_operators_are_found_at_any_depth():
    pipeline = [{"$match": {"a": {"$in": [1]}}}, {"$group": {"_id": "$a", "n": {"$sum": 1}}}]
    update = {"$push": {"c": {"$each": [{"seq": 1}], "$sort": {"seq": 1}}}}

    assert operations.operators(pipeline) == {"$match", "$in", "$group", "$sum"}
    assert operations.operators(({"_id": 1}, update)) == {"$push", "$each", "$sort"}
    assert operations.operators([("_id", -1)]) == set()


def test_the_documented_list_is_the_table_under_its_heading():
    assert operations.documented_operations(TABLE) == {"find", "$in"}


def test_an_undocumented_method_or_operator_is_reported_with_its_caller():
    recorder = operations.Recorder()
    recorder.observe("users", "find", ({"a": {"$in": [1]}},), {}, "socialapp.x.get")
    recorder.observe("users", "find", ({"$where": "1"},), {"sort": [("a", 1)]}, "socialapp.x.y")
    recorder.observe("posts", "map_reduce", (), {}, "socialapp.x.z")

    assert recorder.undocumented({"find", "$in"}) == [
        "$where (users.find from socialapp.x.y)",
        "map_reduce (posts.map_reduce from socialapp.x.z)",
    ]
    assert recorder.collections == {"users", "posts"}


def test_calls_from_socialapp_code_are_recorded_and_the_tests_own_are_not(monkeypatch):
    recorder = operations.Recorder()
    monkeypatch.setattr(operations, "RECORDER", recorder)
    coll = mongomock.MongoClient().db.scratch
    store_code = compile("def get(coll):\n    return coll.find_one({'$where': 'x'})", "f", "exec")
    namespace = {"__name__": "socialapp.fake_store"}
    exec(store_code, namespace)

    coll.count_documents({"$nor": [{"a": 1}]})  # the test's own call
    with pytest.raises(NotImplementedError):  # mongomock has no $where
        namespace["get"](coll)

    assert recorder.seen == {
        "find_one": "scratch.find_one from socialapp.fake_store.get",
        "$where": "scratch.find_one from socialapp.fake_store.get",
    }
    documents.forget_clients()


@pytest.mark.last
def test_stores_use_only_documented_operations():
    """Runs after every other test: what the suite made the stores send is all documented."""
    undocumented = operations.RECORDER.undocumented(operations.documented_operations())
    assert not undocumented, (
        "operations not listed in docs/data-model.md (check that they behave the same on "
        "mongomock and MongoDB 7, then list them): " + ", ".join(undocumented)
    )
    without = operations.RECORDER.collections - set(documents.validators(Settings()))
    assert not without, f"collections without a $jsonSchema validator: {sorted(without)}"
