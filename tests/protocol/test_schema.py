"""The outputSchema validator: the official test suite, then paths, messages and limits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpl_host.protocol import schema as schema_module
from mcpl_host.protocol.redact import CUT_MARK
from mcpl_host.protocol.schema import (
    CACHE_SIZE,
    MAX_DEPTH,
    SchemaViolation,
    UnsupportedSchema,
    compile_schema,
    validator_for,
)

SUITE = Path(__file__).parent / "jsonschema_suite"

# Groups of the suite that need what the validator refuses, by (file, group description).
# Each must raise UnsupportedSchema at compile time, so this list cannot go stale silently.
UNSUPPORTED: dict[tuple[str, str], str] = {
    ("anchor.json", "Location-independent identifier with absolute URI"): "ref to a nested $id",
    (
        "anchor.json",
        "Location-independent identifier with base URI change in subschema",
    ): "ref to a nested $id",
    ("anchor.json", "same $anchor with different base uri"): "ref relative to a nested $id",
    ("defs.json", "validate definition against metaschema"): "remote ref (the metaschema)",
    (
        "not.json",
        "collect annotations inside a 'not', even if collection is disabled",
    ): "unevaluatedProperties",
    (
        "pattern.json",
        "pattern with Unicode property escape requires unicode mode",
    ): "ECMA-262 \\p{...}: Python re cannot compile it",
    (
        "patternProperties.json",
        "patternProperties with Unicode property escape",
    ): "ECMA-262 \\p{...}: Python re cannot compile it",
    ("ref.json", "remote ref, containing refs itself"): "remote ref (the metaschema)",
    ("ref.json", "Recursive references between schemas"): "ref relative to a nested $id",
    ("ref.json", "ref creates new scope when adjacent to keywords"): "unevaluatedProperties",
    ("ref.json", "refs with relative uris and defs"): "ref relative to a nested $id",
    ("ref.json", "relative refs with absolute uris and defs"): "ref relative to a nested $id",
    (
        "ref.json",
        "$id must be resolved against nearest parent, not just immediate parent",
    ): "ref to a nested $id",
    ("ref.json", "order of evaluation: $id and $ref"): "ref to a nested $id",
    ("ref.json", "order of evaluation: $id and $ref on nested schema"): "ref to a nested $id",
    ("ref.json", "URN ref with nested pointer ref"): "ref to a nested $id",
    ("ref.json", "ref to if"): "ref to a nested $id",
    ("ref.json", "ref to then"): "ref to a nested $id",
    ("ref.json", "ref to else"): "ref to a nested $id",
    ("ref.json", "ref with absolute-path-reference"): "ref to a nested $id",
}


def _suite() -> tuple[list[Any], list[Any], set[tuple[str, str]]]:
    cases: list[Any] = []
    refused: list[Any] = []
    seen: set[tuple[str, str]] = set()
    for path in sorted(SUITE.glob("*.json")):
        for group_index, group in enumerate(json.loads(path.read_text("utf-8"))):
            key = (path.name, group["description"])
            if key in UNSUPPORTED:
                seen.add(key)
                refused.append(pytest.param(group["schema"], id=f"{path.stem}-{group_index}"))
                continue
            for case_index, case in enumerate(group["tests"]):
                cases.append(
                    pytest.param(
                        group["schema"],
                        case["data"],
                        case["valid"],
                        id=f"{path.stem}-{group_index}-{case_index}",
                    )
                )
    return cases, refused, seen


SUITE_CASES, SUITE_REFUSED, SUITE_SEEN = _suite()


def test_suite_is_vendored_with_its_license_and_origin() -> None:
    assert (SUITE / "LICENSE").read_text("utf-8").startswith("Copyright (c) 2012 Julian Berman")
    assert "44401e0c046704b476ec9d2e2fccdaee618f259d" in (SUITE / "README.md").read_text("utf-8")
    assert len(SUITE_CASES) > 900


def test_every_listed_unsupported_group_exists() -> None:
    assert set(UNSUPPORTED) == SUITE_SEEN


@pytest.mark.parametrize(("schema", "data", "valid"), SUITE_CASES)
def test_suite_case(schema: Any, data: Any, valid: bool) -> None:
    validator = compile_schema(schema)
    found = validator.errors(data)
    assert (found == []) is valid, found
    assert validator.is_valid(data) is valid


@pytest.mark.parametrize("schema", SUITE_REFUSED)
def test_suite_group_refused(schema: Any) -> None:
    with pytest.raises(UnsupportedSchema):
        compile_schema(schema)


# ---------------------------------------------------------------------------------------
# Violations: where, which keyword, what message


def test_path_points_into_the_instance() -> None:
    validator = compile_schema({"properties": {"a": {"items": {"type": "integer"}}}})
    assert validator.errors({"a": [1, "x"]}) == [
        SchemaViolation(path="/a/1", keyword="type", message="'x' is not of type 'integer'")
    ]


def test_root_violations_have_an_empty_path() -> None:
    validator = compile_schema({"type": "object", "required": ["name", "id"]})
    assert validator.errors({"id": 1}) == [
        SchemaViolation(path="", keyword="required", message="'name' is required")
    ]
    assert validator.errors([]) == [
        SchemaViolation(path="", keyword="type", message="an array is not of type 'object'")
    ]


def test_path_segments_are_json_pointer_escaped() -> None:
    validator = compile_schema({"properties": {"a/b~c": {"type": "string"}}})
    assert [v.path for v in validator.errors({"a/b~c": 1})] == ["/a~1b~0c"]


@pytest.mark.parametrize(
    ("schema", "instance", "keyword", "path", "message"),
    [
        (
            {"additionalProperties": False, "properties": {"a": True}},
            {"a": 1, "b": 2},
            "additionalProperties",
            "/b",
            "property 'b' is not allowed",
        ),
        ({"enum": ["a", "b"]}, "c", "enum", "", '\'c\' is not one of ["a","b"]'),
        ({"const": 1}, True, "const", "", "true is not the constant 1"),
        ({"minimum": 3}, 2, "minimum", "", "2 is less than the minimum of 3"),
        ({"exclusiveMaximum": 3}, 3, "exclusiveMaximum", "", "3 is not less than 3"),
        ({"multipleOf": 0.01}, 0.071, "multipleOf", "", "0.071 is not a multiple of 0.01"),
        ({"maxLength": 2}, "abc", "maxLength", "", "'abc' has 3 characters; the maximum is 2"),
        ({"minItems": 2}, [1], "minItems", "", "array has 1 items; the minimum is 2"),
        ({"pattern": "^a"}, "b", "pattern", "", "'b' does not match the pattern '^a'"),
        ({"uniqueItems": True}, [1, 2, 1.0], "uniqueItems", "", "array items 0 and 2 are equal"),
        (
            {"contains": {"type": "null"}},
            [1],
            "contains",
            "",
            "array has no item matching 'contains'",
        ),
        (
            {"prefixItems": [True], "items": False},
            [1, 2],
            "items",
            "",
            "array has 2 items; at most 1 are allowed",
        ),
        ({"not": {"type": "string"}}, "s", "not", "", "'s' must not match the 'not' schema"),
        (
            {"oneOf": [{"type": "integer"}, {"minimum": 0}]},
            1,
            "oneOf",
            "",
            "1 matches alternatives 0 and 1; exactly one must match",
        ),
        (
            {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            None,
            "anyOf",
            "",
            "null matches none of the 2 alternatives",
        ),
        (
            {"dependentRequired": {"a": ["b"]}},
            {"a": 1},
            "dependentRequired",
            "",
            "'b' is required when 'a' is present",
        ),
        (
            {"propertyNames": {"maxLength": 1}},
            {"ab": 1},
            "propertyNames",
            "",
            "property name 'ab' is invalid",
        ),
        (False, 1, "false", "", "1 is not allowed here (the schema is false)"),
    ],
)
def test_keyword_and_message(
    schema: Any, instance: Any, keyword: str, path: str, message: str
) -> None:
    assert compile_schema(schema).errors(instance) == [SchemaViolation(path, keyword, message)]


def test_json_equality_and_numbers() -> None:
    assert compile_schema({"type": "integer"}).is_valid(1.0)
    assert not compile_schema({"type": "integer"}).is_valid(True)
    assert not compile_schema({"type": "number"}).is_valid(False)
    assert not compile_schema({"const": 1}).is_valid(True)
    assert not compile_schema({"enum": [0]}).is_valid(False)
    assert compile_schema({"enum": [[1, {"a": 2.0}]]}).is_valid([1.0, {"a": 2}])
    assert not compile_schema({"enum": [[1]]}).is_valid([True])
    # Decimal arithmetic: what a person means by "a multiple of 0.01".
    assert compile_schema({"multipleOf": 0.01}).is_valid(0.07)
    assert compile_schema({"multipleOf": 3}).is_valid(10**40 * 3)
    assert compile_schema({"maxLength": 1}).is_valid("😀")  # code points, not UTF-16


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
    assert [(v.path, v.keyword) for v in found] == [
        ("", "required"),
        ("/a", "type"),
        ("/b", "minimum"),
    ]


def test_peer_text_in_messages_is_escaped_and_cut() -> None:
    validator = compile_schema({"type": "integer"})
    (found,) = validator.errors("line\nforged=1" + "x" * 500)
    assert "\n" not in found.message
    assert "\\u000a" in found.message
    assert CUT_MARK in found.message
    assert len(found.message) < 64 + 40
    (named,) = compile_schema({"additionalProperties": False}).errors({"k\x1b" + "y" * 300: 1})
    assert "\x1b" not in named.path + named.message
    assert "\\u001b" in named.path
    assert len(named.path) <= 65
    assert len(named.message) < 64 + 40


def test_schema_text_in_messages_is_cut() -> None:
    long_enum = [f"value-{i}" for i in range(100)]
    (found,) = compile_schema({"enum": long_enum}).errors("nope")
    assert CUT_MARK in found.message
    assert len(found.message) < 2 * 64 + 40


# ---------------------------------------------------------------------------------------
# Recursion, depth and references


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
        "/children/0/children/0/value", "type", "'x' is not of type 'integer'"
    )


def test_absurdly_deep_instance_is_a_violation_not_a_crash() -> None:
    validator = compile_schema(TREE)
    assert validator.is_valid(_chain(MAX_DEPTH // 2 - 1))
    deep = _chain(5000)
    assert not validator.is_valid(deep)
    (found,) = validator.errors(deep)
    assert found.keyword == "depth"
    assert "nested too deeply" in found.message


def test_deep_instance_in_equality_keywords_is_a_violation() -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(100_000):
        inner: list[Any] = []
        node.append(inner)
        node = inner
    for schema in ({"enum": [[1]]}, {"uniqueItems": True}, {"items": {"$ref": "#"}}):
        validator = compile_schema(schema)
        assert not validator.is_valid([deep, deep])
        assert validator.errors([deep, deep])[0].keyword == "depth"


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
    assert [v.path for v in validator.errors({"a": 0, "b": 1, "c": 0, "d": 0})] == [
        "/a",
        "/b",
        "/c",
        "/d",
    ]


def test_draft07_tuple_items_and_dependencies() -> None:
    validator = compile_schema(
        {
            "items": [{"type": "string"}],
            "additionalItems": {"type": "integer"},
        }
    )
    assert validator.is_valid(["a", 1, 2])
    assert [v.path for v in validator.errors(["a", 1, "b"])] == ["/2"]
    deps = compile_schema({"dependencies": {"a": ["b"], "c": {"required": ["d"]}}})
    assert deps.is_valid({"a": 1, "b": 2})
    assert [v.keyword for v in deps.errors({"a": 1, "c": 2})] == ["dependentRequired", "required"]


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"unevaluatedProperties": False}, "unevaluatedProperties"),
        ({"items": {"unevaluatedItems": False}}, "unevaluatedItems"),
        ({"$dynamicRef": "#meta"}, "$dynamicRef"),
        ({"$dynamicAnchor": "meta"}, "$dynamicAnchor"),
        ({"$recursiveRef": "#"}, "$recursiveRef"),
        ({"$ref": "https://example.com/other.json"}, "not local"),
        ({"$ref": "other.json#/x"}, "not local"),
        (
            {"$defs": {"a": {"$id": "https://x.test/a", "$ref": "#/$defs/b"}}, "$ref": "#/$defs/a"},
            "nested $id",
        ),
        ({"$ref": "#/$defs/missing"}, "does not resolve"),
        ({"$ref": "#nowhere"}, "does not resolve"),
        ({"$ref": "#"}, "cycle"),
        (
            {
                "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                "$ref": "#/$defs/a",
            },
            "cycle",
        ),
        ({"anyOf": [{"not": {"$ref": "#"}}]}, "cycle"),
        # Reached first through a property, then again in place: still a loop.
        (
            {
                "properties": {"p": {"$ref": "#/$defs/a"}},
                "allOf": [{"$ref": "#/$defs/a"}],
                "$defs": {"a": {"$ref": "#"}},
            },
            "cycle",
        ),
        (5, "not an object or a boolean"),
        ({"properties": {"a": []}}, "not an object or a boolean"),
        ({"required": 5}, "'required'"),
        ({"minimum": "x"}, "'minimum'"),
        ({"maxLength": -1}, "'maxLength'"),
        ({"multipleOf": 0}, "'multipleOf'"),
        ({"type": "float"}, "'type'"),
        ({"type": []}, "'type'"),
        ({"anyOf": []}, "'anyOf'"),
        ({"uniqueItems": "yes"}, "'uniqueItems'"),
        ({"pattern": "(?<!a+)b"}, "cannot compile"),
        ({"patternProperties": {"[": True}}, "cannot compile"),
        ({"$defs": {"a": {"$anchor": "x"}, "b": {"$anchor": "x"}}}, "twice"),
    ],
)
def test_unsupported_schemas_are_refused(schema: Any, reason: str) -> None:
    with pytest.raises(UnsupportedSchema, match=reason.replace("$", r"\$")):
        compile_schema(schema)


def test_absurdly_deep_schema_is_refused() -> None:
    schema: Any = True
    for _ in range(5000):
        schema = {"not": schema}
    with pytest.raises(UnsupportedSchema, match="nested too deeply"):
        compile_schema(schema)
    with pytest.raises(UnsupportedSchema, match="nested too deeply"):
        validator_for(schema)


def test_annotations_and_unknown_keywords_are_ignored() -> None:
    validator = compile_schema(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://example.com/s",
            "$comment": "c",
            "title": "T",
            "description": "D",
            "format": "email",
            "default": 1,
            "examples": [1],
            "deprecated": True,
            "readOnly": True,
            "contentMediaType": "application/json",
            "x-fastmcp-wrap-result": True,
            "unknownKeyword": {"$ref": "https://nowhere.invalid/"},
        }
    )
    assert validator.is_valid("not an email")


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
    "$schema": "http://json-schema.org/draft-07/schema#",
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
    # validator_for compiles the canonical (key-sorted) schema: properties in name order.
    assert [(v.path, v.keyword, v.message) for v in validator.errors(bad)] == [
        # The null alternative fails only by type, so the model explains itself.
        ("/address", "required", "'city' is required"),
        # 1.5 fails both alternatives by type alone: one summary.
        ("/age", "anyOf", "1.5 matches none of the 2 alternatives"),
        ("/kind", "enum", '\'moon\' is not one of ["home","work"]'),
        ("/tags/0", "type", "1 is not of type 'string'"),
    ]
    (missing,) = validator.errors({"name": "Ann"})
    assert missing == SchemaViolation("", "required", "'tags' is required")


def test_zod_output_schema() -> None:
    validator = validator_for(ZOD_OUTPUT)
    good = {"temperature": 21.5, "conditions": "sunny", "readings": [{"at": "now", "value": 1}]}
    assert validator.errors(good) == []
    bad = {"temperature": "hot", "conditions": "sunny", "readings": [{"at": "now", "v": 1}], "x": 1}
    assert [(v.path, v.keyword) for v in validator.errors(bad)] == [
        ("/temperature", "type"),
        ("/readings/0", "required"),
        ("/readings/0/v", "additionalProperties"),
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
    # Property names and strings the schemas above know, and control characters.
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
def test_fast_and_slow_paths_agree(instance: Any) -> None:
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


def test_cache_keeps_refusals(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    real = schema_module.compile_schema

    def counting(schema: Any) -> Any:
        calls.append(schema)
        return real(schema)

    monkeypatch.setattr(schema_module, "compile_schema", counting)
    refused = {"$ref": "https://example.com/cache-refusal-probe.json"}
    for _ in range(3):
        with pytest.raises(UnsupportedSchema, match="not local"):
            validator_for(refused)
    assert len(calls) == 1


def test_a_schema_that_is_not_json_is_refused() -> None:
    with pytest.raises(UnsupportedSchema, match="not JSON"):
        validator_for({"enum": [object()]})
    with pytest.raises(UnsupportedSchema, match="must be JSON"):
        compile_schema({"enum": [{1, 2}]})
