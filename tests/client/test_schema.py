"""The outputSchema validator (jsonschema-rs behind mcpl_host.client.schema): the official
test suite, then paths, messages, secrets, references, bounds and the cache."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpl_host.client import schema as schema_module
from mcpl_host.client._schema_shape import Shape, ShapeError, shape_of
from mcpl_host.client.schema import (
    ALL_ERRORS_BYTES,
    CACHE_SIZE,
    MAX_DEPTH,
    MAX_SCHEMA_BYTES,
    SchemaViolation,
    UnsupportedSchema,
    compile_schema,
    validator_for,
)
from mcpl_host.protocol.redact import CUT_MARK

from .helpers import schema_server

SUITE = Path(__file__).parent / "jsonschema_suite"
DRAFT_07 = "http://json-schema.org/draft-07/schema#"

# Groups of the suite that need a schema from elsewhere: the validator never fetches one,
# so each must be refused at compile time (and this list cannot go stale silently).
_REMOTE = "a $ref to another document (never fetched)"
_META = "a custom metaschema from another document (never fetched)"
UNSUPPORTED: dict[tuple[str, str, str], str] = {
    **{
        ("draft2020-12", "dynamicRef.json", description): _REMOTE
        for description in (
            "strict-tree schema, guards against misspelled properties",
            "tests for implementation dynamic anchor and reference link",
            "$ref and $dynamicAnchor are independent of order - $defs first",
            "$ref and $dynamicAnchor are independent of order - $ref first",
            "$ref to $dynamicRef finds detached $dynamicAnchor",
        )
    },
    **{
        ("draft2020-12", "vocabulary.json", description): _META
        for description in (
            "schema that uses custom metaschema with with no validation vocabulary",
            "ignore unrecognized optional vocabulary",
        )
    },
}
REMOTE_FILES = {("draft2020-12", "refRemote.json"), ("draft7", "refRemote.json")}


def _schema(draft: str, schema: Any) -> Any:
    """A draft-07 schema as a server sends it: saying so (the suite's mostly do not)."""
    if draft == "draft7" and isinstance(schema, dict) and "$schema" not in schema:
        return {**schema, "$schema": DRAFT_07}
    return schema


def _suite() -> tuple[list[Any], list[Any], set[tuple[str, str, str]]]:
    cases: list[Any] = []
    refused: list[Any] = []
    seen: set[tuple[str, str, str]] = set()
    for draft in ("draft2020-12", "draft7"):
        for path in sorted((SUITE / "tests" / draft).glob("*.json")):
            for group_index, group in enumerate(json.loads(path.read_text("utf-8"))):
                key = (draft, path.name, group["description"])
                schema = _schema(draft, group["schema"])
                if key in UNSUPPORTED or (draft, path.name) in REMOTE_FILES:
                    seen.add(key)
                    refused.append(pytest.param(schema, id=f"{draft}-{path.stem}-{group_index}"))
                    continue
                for case_index, case in enumerate(group["tests"]):
                    cases.append(
                        pytest.param(
                            schema,
                            case["data"],
                            case["valid"],
                            id=f"{draft}-{path.stem}-{group_index}-{case_index}",
                        )
                    )
    return cases, refused, seen


SUITE_CASES, SUITE_REFUSED, SUITE_SEEN = _suite()


def test_suite_is_vendored_whole_with_its_license_and_origin() -> None:
    assert (SUITE / "LICENSE").read_text("utf-8").startswith("Copyright (c) 2012 Julian Berman")
    readme = (SUITE / "README.md").read_text("utf-8")
    assert "44401e0c046704b476ec9d2e2fccdaee618f259d" in readme
    # Every required file of both drafts: 46 and 37 at that commit.
    assert len(list((SUITE / "tests/draft2020-12").glob("*.json"))) == 46
    assert len(list((SUITE / "tests/draft7").glob("*.json"))) == 37
    assert len(SUITE_CASES) > 2100


def test_every_listed_unsupported_group_exists() -> None:
    assert set(UNSUPPORTED) <= SUITE_SEEN


@pytest.mark.parametrize(("schema", "data", "valid"), SUITE_CASES)
def test_suite_case(schema: Any, data: Any, valid: bool) -> None:
    validator = validator_for(schema)
    found = validator.errors(data)
    assert (found == []) is valid, found
    assert validator.is_valid(data) is valid


@pytest.mark.parametrize("schema", SUITE_REFUSED)
def test_suite_group_that_needs_another_document_is_refused(schema: Any) -> None:
    with pytest.raises(UnsupportedSchema, match="never fetched: http://localhost:1234/"):
        compile_schema(schema)


# ---------------------------------------------------------------------------------------
# Violations: where, which keyword, what message


def test_path_points_into_the_instance() -> None:
    validator = compile_schema({"properties": {"a": {"items": {"type": "integer"}}}})
    assert validator.errors({"a": [1, "x"]}) == [
        SchemaViolation(path="/a/1", keyword="type", message='<value> is not of type "integer"')
    ]


def test_root_violations_have_an_empty_path() -> None:
    validator = compile_schema({"type": "object", "required": ["name", "id"]})
    assert validator.errors({"id": 1}) == [
        SchemaViolation(path="", keyword="required", message='"name" is a required property')
    ]
    assert [(v.path, v.keyword) for v in validator.errors([])] == [("", "type")]


def test_path_segments_are_json_pointer_escaped() -> None:
    validator = compile_schema({"properties": {"a/b~c": {"type": "string"}}})
    assert [v.path for v in validator.errors({"a/b~c": 1})] == ["/a~1b~0c"]


@pytest.mark.parametrize(
    ("schema", "instance", "keyword", "path"),
    [
        (
            {"additionalProperties": False, "properties": {"a": True}},
            {"a": 1, "b": 2},
            "additionalProperties",
            "/b",
        ),
        ({"enum": ["a", "b"]}, "c", "enum", ""),
        ({"const": 1}, True, "const", ""),
        ({"minimum": 3}, 2, "minimum", ""),
        ({"exclusiveMaximum": 3}, 3, "exclusiveMaximum", ""),
        ({"multipleOf": 0.01}, 0.071, "multipleOf", ""),
        ({"maxLength": 2}, "abc", "maxLength", ""),
        ({"minItems": 2}, [1], "minItems", ""),
        ({"pattern": "^a"}, "b", "pattern", ""),
        ({"uniqueItems": True}, [1, 2, 1.0], "uniqueItems", ""),
        ({"contains": {"type": "null"}}, [1], "contains", ""),
        ({"prefixItems": [True], "items": False}, [1, 2], "falseSchema", "/1"),
        ({"not": {"type": "string"}}, "s", "not", ""),
        ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, 1, "oneOf", ""),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, None, "anyOf", ""),
        ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, "required", ""),
        ({"propertyNames": {"maxLength": 1}}, {"ab": 1}, "propertyNames", ""),
        ({"unevaluatedProperties": False}, {"a": 1}, "unevaluatedProperties", "/a"),
        (False, 1, "falseSchema", ""),
    ],
)
def test_keyword_and_path(schema: Any, instance: Any, keyword: str, path: str) -> None:
    (found,) = compile_schema(schema).errors(instance)
    assert (found.keyword, found.path) == (keyword, path)
    assert found.message


def test_json_equality_and_numbers() -> None:
    assert compile_schema({"type": "integer"}).is_valid(1.0)
    assert not compile_schema({"type": "integer"}).is_valid(True)
    assert not compile_schema({"type": "number"}).is_valid(False)
    assert not compile_schema({"const": 1}).is_valid(True)
    assert not compile_schema({"enum": [0]}).is_valid(False)
    assert compile_schema({"enum": [[1, {"a": 2.0}]]}).is_valid([1.0, {"a": 2}])
    assert not compile_schema({"enum": [[1]]}).is_valid([True])
    assert compile_schema({"multipleOf": 0.01}).is_valid(0.07)
    assert compile_schema({"multipleOf": 3}).is_valid(10**40 * 3)
    assert compile_schema({"maxLength": 1}).is_valid("😀")  # code points, not UTF-16


def test_formats_are_annotations() -> None:
    validator = compile_schema({"format": "email", "$schema": DRAFT_07})
    assert validator.is_valid("not an email")
    assert compile_schema({"format": "date-time"}).is_valid("yesterday")


def test_limit_caps_the_number_of_violations() -> None:
    validator = compile_schema({"items": {"type": "integer"}})
    instance = ["x"] * 50
    assert len(validator.errors(instance)) == 10
    assert [v.path for v in validator.errors(instance, limit=3)] == ["/0", "/1", "/2"]
    assert validator.errors(instance, limit=0) == []
    assert validator.errors([1, 2]) == []


def test_every_violation_of_an_object_is_reported() -> None:
    validator = compile_schema(
        {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"minimum": 0}},
            "required": ["a", "b", "c"],
        }
    )
    found = validator.errors({"a": 1, "b": -1})
    assert sorted((v.path, v.keyword) for v in found) == [
        ("", "required"),
        ("/a", "type"),
        ("/b", "minimum"),
    ]


# ---------------------------------------------------------------------------------------
# Secrets: instance values never reach a message; peer text is escaped and cut

SECRET = "sk-live-4f9c2b7e1d8a6f3c0b5e"


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "integer"}, SECRET),
        ({"enum": ["a", "b"]}, SECRET),
        ({"const": "public"}, SECRET),
        ({"pattern": "^[0-9]+$"}, SECRET),
        ({"maxLength": 3}, SECRET),
        ({"format": "email", "minLength": 100}, SECRET),
        ({"not": {"type": "string"}}, SECRET),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, SECRET),
        ({"oneOf": [{"type": "string"}, {"minLength": 1}]}, SECRET),
        ({"contains": {"type": "integer"}}, [SECRET]),
        ({"uniqueItems": True}, [SECRET, SECRET]),
        ({"items": False}, [SECRET]),
        (False, SECRET),
    ],
)
def test_an_instance_value_is_never_echoed(schema: Any, value: Any) -> None:
    validator = compile_schema({"properties": {"token": schema}})
    found = validator.errors({"token": value})
    assert found, schema
    for violation in found:
        assert SECRET not in violation.message + violation.path
        assert violation.path.startswith("/token")


def test_peer_text_in_paths_and_messages_is_escaped_and_cut() -> None:
    validator = compile_schema({"properties": {"a": True}, "additionalProperties": False})
    (named,) = validator.errors({"k\x1b" + "y" * 300: 1})
    assert "\x1b" not in named.message
    assert "\\u001b" in named.message
    assert CUT_MARK in named.message
    assert len(named.message) <= 160
    assert named.path.startswith("/k\\u001b")
    assert CUT_MARK in named.path
    assert len(named.path) <= 65
    (deep,) = compile_schema({"additionalProperties": {"type": "integer"}}).errors(
        {"k\n" + "z" * 300: "v"}
    )
    assert deep.path.startswith("/k\\u000a")
    assert CUT_MARK in deep.path
    assert len(deep.path) <= 65


def test_schema_text_in_messages_is_cut() -> None:
    (found,) = compile_schema({"pattern": "a" * 500}).errors("b")
    assert CUT_MARK in found.message
    assert len(found.message) <= 160
    (listed,) = compile_schema({"enum": [f"value-{i}" for i in range(100)]}).errors("nope")
    assert len(listed.message) <= 160


def test_the_failing_alternative_explains_itself() -> None:
    validator = compile_schema(
        {
            "properties": {"address": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]}},
            "$defs": {"A": {"type": "object", "required": ["city"]}},
        }
    )
    assert validator.errors({"address": {"street": "x"}}) == [
        SchemaViolation("/address", "required", '"city" is a required property')
    ]
    # Both alternatives fail by type alone: one summary.
    assert [v.keyword for v in validator.errors({"address": 1})] == ["anyOf"]


# ---------------------------------------------------------------------------------------
# References: local ones resolve, nothing is ever fetched


def test_the_recording_server_serves_what_a_fetch_would_get() -> None:
    # The check below is only worth something if a fetch would reach this server.
    with (
        schema_server() as (url, hits),
        contextlib.closing(
            __import__("urllib.request").request.urlopen(f"{url}/probe", timeout=5)
        ) as answer,
    ):
        assert json.loads(answer.read()) == {"type": "integer"}
    assert hits == ["/probe"]


@pytest.mark.parametrize("where", ["root", "nested", "defs"])
def test_a_network_ref_is_refused_and_never_fetched(where: str) -> None:
    with schema_server() as (url, hits):
        ref = {"$ref": f"{url}/x"}
        schema = {
            "root": ref,
            "nested": {"properties": {"a": {"items": ref}}},
            "defs": {"$defs": {"r": ref}, "properties": {"a": {"$ref": "#/$defs/r"}}},
        }[where]
        with pytest.raises(UnsupportedSchema, match="never fetched"):
            compile_schema(schema)
        with pytest.raises(UnsupportedSchema):
            validator_for(schema)
        time.sleep(0.05)  # a stray fetch would have arrived by now
        assert hits == []


def test_a_file_ref_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "integer.json"
    target.write_text('{"type": "integer"}')
    with pytest.raises(UnsupportedSchema, match="never fetched"):
        compile_schema({"$ref": target.as_uri()})


def test_local_refs_anchors_and_draft07_definitions() -> None:
    validator = compile_schema(
        {
            "$id": "https://example.com/root.json",
            "definitions": {"pos": {"type": "integer", "minimum": 1}},
            "$defs": {"named": {"$anchor": "name", "type": "string"}},
            "properties": {
                "a": {"$ref": "#/definitions/pos"},
                "b": {"$ref": "#name"},
                "c": {"$ref": "https://example.com/root.json#/definitions/pos"},
                "d": {"$ref": "#/properties/a"},
            },
        }
    )
    assert validator.is_valid({"a": 1, "b": "x", "c": 2, "d": 3})
    assert sorted(v.path for v in validator.errors({"a": 0, "b": 1, "c": 0, "d": 0})) == [
        "/a",
        "/b",
        "/c",
        "/d",
    ]


def test_draft07_tuple_items_and_dependencies() -> None:
    validator = compile_schema(
        {"$schema": DRAFT_07, "items": [{"type": "string"}], "additionalItems": {"type": "integer"}}
    )
    assert validator.is_valid(["a", 1, 2])
    assert [v.path for v in validator.errors(["a", 1, "b"])] == ["/2"]
    deps = compile_schema(
        {"$schema": DRAFT_07, "dependencies": {"a": ["b"], "c": {"required": ["d"]}}}
    )
    assert deps.is_valid({"a": 1, "b": 2})
    assert [v.keyword for v in deps.errors({"a": 1, "c": 2})] == ["required", "required"]


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        (
            {"$ref": "https://example.com/other.json"},
            "never fetched: https://example.com/other.json",
        ),
        (
            {"$schema": "https://example.com/my-metaschema"},
            "never fetched: https://example.com/my-metaschema",
        ),
        ({"$ref": "#/$defs/missing"}, "missing"),
        ({"$ref": "#"}, "cycle"),
        (
            {
                "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                "$ref": "#/$defs/a",
            },
            "cycle",
        ),
        ({"anyOf": [{"not": {"$ref": "#"}}]}, "cycle"),
        (5, "not an object or a boolean"),
        ({"properties": {"a": []}}, "malformed schema at /properties/a"),
        ({"required": 5}, "malformed schema at /required"),
        ({"minimum": "x"}, "malformed schema at /minimum"),
        ({"maxLength": -1}, "malformed schema at /maxLength"),
        ({"type": "float"}, "malformed schema at /type"),
        ({"pattern": "(?<!a+)b["}, "malformed schema at /pattern"),
        ({"patternProperties": {"[": True}}, "malformed schema at /patternProperties"),
    ],
)
def test_unsupported_schemas_are_refused(schema: Any, reason: str) -> None:
    with pytest.raises(UnsupportedSchema, match=reason.replace("$", r"\$")):
        compile_schema(schema)


def test_a_schema_that_is_not_json_is_refused() -> None:
    with pytest.raises(UnsupportedSchema, match="not JSON"):
        validator_for({"enum": [object()]})
    with pytest.raises(UnsupportedSchema, match="not JSON"):
        compile_schema({"const": 1j})


# ---------------------------------------------------------------------------------------
# Bounds: what a hostile schema or instance can cost


TREE = {
    "type": "object",
    "properties": {
        "value": {"type": "integer"},
        "children": {"type": "array", "items": {"$ref": "#"}},
    },
    "required": ["value"],
}


def _chain(levels: int, leaf: Any = 1) -> dict[str, Any]:
    root: dict[str, Any] = {"value": 1, "children": []}
    node = root
    for _ in range(levels):
        child: dict[str, Any] = {"value": 1, "children": []}
        node["children"].append(child)
        node = child
    node["value"] = leaf
    return root


def test_recursive_schema_that_descends_works() -> None:
    validator = compile_schema(TREE)
    assert validator.is_valid(_chain(20))
    (found,) = validator.errors(_chain(2, leaf="x"))
    assert found == SchemaViolation(
        "/children/0/children/0/value", "type", '<value> is not of type "integer"'
    )


def test_depth_allowed_under_a_recursive_schema() -> None:
    validator = compile_schema(TREE)
    # Each tree level is two levels of JSON (an object, then its children array).
    assert validator.is_valid(_chain(MAX_DEPTH // 2 - 1))
    too_deep = _chain(MAX_DEPTH // 2 + 1)
    assert not validator.is_valid(too_deep)
    assert validator.errors(too_deep) == [
        SchemaViolation(
            "",
            "depth",
            f"instance nested too deeply for this schema (more than {MAX_DEPTH} levels)",
        )
    ]
    # Without references the library's own nesting limit bounds the recursion.
    assert compile_schema({"type": "object"}).is_valid(_chain(5000))


# Each of these, in the library alone, overflows the native stack and kills the process
# (docs/libraries.md), or runs for minutes. They run in a child process: a crash there
# fails the test instead of ending the test run.
_HOSTILE_CHILD = """
import json, sys
from mcpl_host.client.schema import UnsupportedSchema, compile_schema

def nested(levels, leaf):
    root = []
    node = root
    for _ in range(levels):
        inner = []
        node.append(inner)
        node = inner
    node.append(leaf)
    return root

def chain(links):
    defs = {f"b{i}": {"allOf": [{"$ref": f"#/$defs/b{i + 1}"}], "minItems": 0} for i in range(links)}
    defs[f"b{links}"] = {"items": {"$ref": "#/$defs/b0"}}
    return {"$defs": defs, "$ref": "#/$defs/b0"}

def doubling(steps):
    defs = {f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]} for i in range(steps)}
    defs[f"d{steps}"] = {"minimum": 0}
    return {"$defs": defs, "$ref": "#/$defs/d0"}

case = sys.argv[1]
schema, instance = {
    "deep-instance": lambda: ({"items": {"$ref": "#"}}, nested(100_000, 1)),
    "ref-chain": lambda: (chain(1000), nested(50, 1)),
    "doubling": lambda: (doubling(40), -1),
    "redos": lambda: ({"pattern": "^(a+)+$"}, "a" * 40 + "!"),
    "redos-backtracking": lambda: ({"pattern": "^(\\\\w+\\\\s?)*\\\\1$"}, "a" * 40 + "!"),
    "big": lambda: ({"items": {"type": "integer"}}, ["x"] * 1_000_000),
}[case]()
try:
    validator = compile_schema(schema)
except UnsupportedSchema as exc:
    print(json.dumps({"refused": str(exc)}))
else:
    found = validator.errors(instance)
    print(json.dumps({"valid": validator.is_valid(instance), "errors": [list(v) for v in [(e.path, e.keyword) for e in found]]}))
"""


async def _hostile(case: str) -> dict[str, Any]:
    with trio.fail_after(20):
        done = await trio.run_process(
            [sys.executable, "-c", _HOSTILE_CHILD, case], capture_stdout=True, check=False
        )
    assert done.returncode == 0, f"{case}: exit {done.returncode}"
    result: dict[str, Any] = json.loads(done.stdout)
    return result


async def test_deep_instance_under_a_recursive_schema_is_a_violation_not_a_crash() -> None:
    assert await _hostile("deep-instance") == {"valid": False, "errors": [["", "depth"]]}


async def test_long_in_place_chains_lower_the_depth_allowed() -> None:
    assert await _hostile("ref-chain") == {"valid": False, "errors": [["", "depth"]]}


async def test_work_doubling_at_each_reference_is_refused() -> None:
    found = await _hostile("doubling")
    assert "too costly" in found["refused"]


@pytest.mark.parametrize("case", ["redos", "redos-backtracking"])
async def test_a_catastrophic_pattern_costs_bounded_time(case: str) -> None:
    found = await _hostile(case)
    assert found["valid"] is False
    assert [keyword for _, keyword in found["errors"]] == ["pattern"]


async def test_a_huge_invalid_instance_reports_its_first_violation_quickly() -> None:
    found = await _hostile("big")
    assert found == {"valid": False, "errors": [["/0", "type"]]}


def _doubling(steps: int, ids: bool) -> dict[str, Any]:
    defs: dict[str, Any] = {}
    for i in range(steps + 1):
        # With ids, each step is a resource of its own, reached by a relative reference.
        nxt = f"d{i + 1}.json" if ids else f"#/$defs/d{i + 1}"
        step: dict[str, Any] = {"allOf": [{"$ref": nxt}, {"$ref": nxt}]}
        if i == steps:
            step = {"minimum": 0}
        if ids:
            step["$id"] = f"https://schemas.test/d{i}.json"
        defs[f"d{i}"] = step
    return {"$defs": defs, "$ref": "https://schemas.test/d0.json" if ids else "#/$defs/d0"}


@pytest.mark.parametrize("ids", [False, True])
def test_shape_follows_references_across_ids(ids: bool) -> None:
    shape = shape_of(_doubling(10, ids))
    # The root, then per step the allOf and one of its items: 1 + 2 * 10 + the leaf.
    # Work: W(leaf) = 1, W(step) = 1 + 2 * (1 + W(next)), so 4 * 2**10 - 3, and the root.
    assert (shape.hops, shape.work, shape.followed) == (22, 4 * 2**10 - 3 + 1, True)
    with pytest.raises(UnsupportedSchema, match="too costly"):
        compile_schema(_doubling(14, ids))
    assert compile_schema(_doubling(10, ids)).is_valid(1)


def test_shape_of_chains_loops_and_other_documents() -> None:
    assert shape_of({"type": "object"}) == Shape(hops=1, work=1, recursive=False)
    assert shape_of(TREE).recursive
    assert shape_of(TREE).hops == 2  # the root, then the $ref to it from an item
    with pytest.raises(ShapeError):
        shape_of({"$defs": {"a": {"allOf": [{"$ref": "#"}]}}, "$ref": "#/$defs/a"})
    assert not shape_of({"$ref": "https://elsewhere.test/s.json"}).followed
    # A metaschema the library holds is a known leaf, not another document.
    assert shape_of({"$ref": "https://json-schema.org/draft/2020-12/schema"}).followed


def test_small_invalid_instances_list_every_violation_up_to_the_limit() -> None:
    validator = compile_schema({"items": {"type": "integer"}})
    small = ["x"] * (ALL_ERRORS_BYTES // 8)
    assert len(validator.errors(small, limit=100)) == 100
    big = ["x"] * ALL_ERRORS_BYTES
    assert [v.path for v in validator.errors(big, limit=100)] == ["/0"]


def test_a_schema_past_the_size_bound_is_refused() -> None:
    schema = {"enum": ["x" * 1000] * (MAX_SCHEMA_BYTES // 1000)}
    with pytest.raises(UnsupportedSchema, match="larger than"):
        compile_schema(schema)
    compile_schema({"enum": ["x" * 1000] * (MAX_SCHEMA_BYTES // 1100)})


def test_absurdly_deep_schema_is_refused() -> None:
    schema: Any = True
    for _ in range(5000):
        schema = {"not": schema}
    with pytest.raises(UnsupportedSchema, match=r"nested too deeply|Recursion limit"):
        compile_schema(schema)
    with pytest.raises(UnsupportedSchema, match=r"nested too deeply|Recursion limit"):
        validator_for(schema)


def test_jsonschema_rs_is_imported_on_the_first_compile_only() -> None:
    probe = (
        "import sys, mcpl_host\n"
        "assert 'jsonschema_rs' not in sys.modules\n"
        "from mcpl_host.client.schema import compile_schema\n"
        "compile_schema({'type': 'object'})\n"
        "assert 'jsonschema_rs' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=60)


# ---------------------------------------------------------------------------------------
# Schemas as the official SDKs generate them


PYDANTIC_OUTPUT = {
    "$defs": {
        "Address": {
            "properties": {
                "street": {"title": "Street", "type": "string"},
                "city": {"title": "City", "type": "string"},
            },
            "required": ["street", "city"],
            "title": "Address",
            "type": "object",
        },
        "Kind": {"enum": ["home", "work"], "title": "Kind", "type": "string"},
    },
    "properties": {
        "name": {"title": "Name", "type": "string"},
        "age": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None, "title": "Age"},
        "address": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}], "default": None},
        "kind": {"$ref": "#/$defs/Kind", "default": "home"},
        "tags": {"items": {"type": "string"}, "title": "Tags", "type": "array"},
    },
    "required": ["name", "tags"],
    "title": "Person",
    "type": "object",
}

ZOD_OUTPUT = {
    "type": "object",
    "properties": {
        "temperature": {"type": "number"},
        "conditions": {"type": "string", "enum": ["sunny", "cloudy", "rainy"]},
        "readings": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "at": {"type": "string", "format": "date-time"},
                    "value": {"type": "number"},
                },
                "required": ["at", "value"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["temperature", "conditions"],
    "additionalProperties": False,
    "$schema": DRAFT_07,
}


def test_pydantic_output_schema() -> None:
    validator = validator_for(PYDANTIC_OUTPUT)
    good: dict[str, Any] = {
        "name": "Ann",
        "age": None,
        "address": {"street": "Main", "city": "Oslo"},
        "kind": "work",
        "tags": [],
    }
    assert validator.errors(good) == []
    assert validator.is_valid({"name": "Bo", "tags": ["a"], "age": 3})
    bad = {"name": "Ann", "age": 1.5, "address": {"street": "Main"}, "kind": "moon", "tags": [1]}
    assert sorted((v.path, v.keyword) for v in validator.errors(bad)) == [
        # The null alternative fails only by type, so the model explains itself.
        ("/address", "required"),
        # 1.5 fails both alternatives by type alone: one summary.
        ("/age", "anyOf"),
        ("/kind", "enum"),
        ("/tags/0", "type"),
    ]
    (missing,) = validator.errors({"name": "Ann"})
    assert missing == SchemaViolation("", "required", '"tags" is a required property')


def test_zod_output_schema() -> None:
    validator = validator_for(ZOD_OUTPUT)
    good = {"temperature": 21.5, "conditions": "sunny", "readings": [{"at": "now", "value": 1}]}
    assert validator.errors(good) == []
    bad = {"temperature": "hot", "conditions": "sunny", "readings": [{"at": "now", "v": 1}], "x": 1}
    assert sorted((v.path, v.keyword) for v in validator.errors(bad)) == [
        ("/readings/0", "required"),
        ("/readings/0/v", "additionalProperties"),
        ("/temperature", "type"),
        ("/x", "additionalProperties"),
    ]


def test_fastmcp_wrapped_result_schema() -> None:
    validator = validator_for(
        {
            "type": "object",
            "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
            "required": ["result"],
            "x-fastmcp-wrap-result": True,
        }
    )
    assert validator.is_valid({"result": [1, 2]})
    assert [v.path for v in validator.errors({"result": [1, "2"]})] == ["/result/1"]


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["name", "tags", "city", "street", "home", "a\nb"])
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["name", "age", "address", "kind", "tags", "street", "city", "x"]),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=100, deadline=None)
@given(JSON_VALUES)
def test_verdict_and_violations_agree(instance: Any) -> None:
    for schema in (PYDANTIC_OUTPUT, ZOD_OUTPUT, TREE):
        validator = validator_for(schema)
        found = validator.errors(instance, limit=5)
        assert (found == []) is validator.is_valid(instance)
        assert len(found) <= 5
        for violation in found:
            assert "\n" not in violation.message + violation.path


# ---------------------------------------------------------------------------------------
# The cache


def test_cache_returns_the_same_validator_for_equal_schemas() -> None:
    first = validator_for(
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}}
    )
    again = validator_for(
        {"properties": {"a": {"minLength": 1, "type": "string"}}, "type": "object"}
    )
    assert first is again
    assert validator_for({"type": "object"}) is not first


def test_cached_validator_ignores_later_mutation_of_the_schema() -> None:
    schema: dict[str, Any] = {"required": ["cache-mutation-probe"]}
    validator = validator_for(schema)
    schema["required"].append("other")
    assert validator.is_valid({"cache-mutation-probe": 1})


def test_cache_is_bounded() -> None:
    first = validator_for({"const": "cache-bound-probe"})
    assert validator_for({"const": "cache-bound-probe"}) is first
    for i in range(CACHE_SIZE):
        validator_for({"const": i, "title": "cache filler"})
    assert validator_for({"const": "cache-bound-probe"}) is not first


def test_cache_compiles_once_and_keeps_refusals(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bytes] = []
    real = schema_module._compile

    def counting(canonical: bytes) -> Any:
        calls.append(canonical)
        return real(canonical)

    monkeypatch.setattr(schema_module, "_compile", counting)
    for _ in range(3):
        validator_for({"type": "object", "title": "cache-compile-probe"})
    refused = {"$ref": "https://example.com/cache-refusal-probe.json"}
    for _ in range(3):
        with pytest.raises(UnsupportedSchema, match="never fetched"):
            validator_for(refused)
    assert len(calls) == 2


@pytest.mark.parametrize(
    ("schema", "malformed"),
    [
        ({"type": 5}, True),
        ("not a schema", True),
        ({"$ref": "https://example.com/schemas/place.json"}, False),
        ({"$schema": "https://example.com/my-dialect"}, False),
        ({"description": "x" * (MAX_SCHEMA_BYTES + 1)}, False),
    ],
)
def test_a_refusal_tells_a_malformed_schema_from_one_not_checked_here(
    schema: Any, malformed: bool
) -> None:
    for compile_ in (compile_schema, validator_for):
        with pytest.raises(UnsupportedSchema) as refused:
            compile_(schema)
        assert refused.value.malformed is malformed, str(refused.value)
