#!/usr/bin/env python3
"""JSON Schema validators for tool ``outputSchema``, measured side by side.

For each candidate that is installed, in this order:

1. **Correctness**: every case of the official JSON-Schema-Test-Suite for draft 2020-12
   and draft 7 (``tests/<draft>/*.json``; ``optional/`` apart, ``optional/format/`` left
   out: formats are annotations here). A case is *passed* (the verdict the suite
   expects), *failed* (the other verdict, or an exception while validating) or *refused*
   (the candidate would not compile the group's schema). ``$ref`` to the suite's
   ``http://localhost:1234/`` is served from its ``remotes/`` directory by a local
   retriever: nothing is fetched, and a candidate that cannot take a retriever refuses.
2. **Speed** on real tool schemas (``bench/tool_schemas.json``: server-everything, the
   official Python SDK, the conformance suite): microseconds to compile, to validate a
   valid instance, to list the violations of an invalid one (ten at most).
3. **Hostile input**, each in a child process with a time limit (a crash is a result):
   a catastrophic regex, a deep instance under a recursive schema, recursion through a
   chain of ``$ref``, ``anyOf`` whose alternatives both descend.
4. **Weight**: import time and RSS added by the import (child processes, medians), and
   the installed size of the distribution with its runtime requirements.

Candidates: ``mcpl_host-handwritten`` (``mcpl_host.protocol.schema``, the validator this
replaced; measured while it existed, see docs/libraries.md), ``mcpl_host`` (the adapter in
``mcpl_host.client.schema``), ``jsonschema-rs``, ``jsonschema`` (python-jsonschema),
``fastjsonschema`` (draft 7 at most: a 2020-12 schema is read as draft 7).

    .venv/bin/pip install -e '.[bench]'
    .venv/bin/python bench/jsonschema_suite.py [SUITE_DIR] [--only NAME ...] [--sections suite,speed,...]

SUITE_DIR defaults to the copy vendored in tests/client/jsonschema_suite (same layout
as a checkout of https://github.com/json-schema-org/JSON-Schema-Test-Suite).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_SUITE = ROOT / "tests/client/jsonschema_suite"
REMOTE = "http://localhost:1234/"
DRAFTS = ("draft2020-12", "draft7")
ERRORS_SHOWN = 10


class Refused(Exception):
    """The candidate would not compile the schema."""


Retrieve = Callable[[str], Any]


# ---------------------------------------------------------------------------------------
# Candidates: compile(schema, draft, retrieve) -> (is_valid, errors)


class Compiled:
    def __init__(self, is_valid: Callable[[Any], bool], errors: Callable[[Any], int]) -> None:
        self.is_valid = is_valid
        self.errors = errors  # the number of violations listed, at most ERRORS_SHOWN


def _handwritten(schema: Any, _draft: str, _retrieve: Retrieve) -> Compiled:
    # Deleted with the switch to jsonschema-rs: run this script at the commit before it
    # (git log -- mcpl_host/protocol/schema.py) to measure it again.
    from mcpl_host.protocol.schema import UnsupportedSchema, compile_schema

    try:
        validator = compile_schema(schema)
    except UnsupportedSchema as exc:
        raise Refused(str(exc)) from exc
    return Compiled(validator.is_valid, lambda i: len(validator.errors(i, ERRORS_SHOWN)))


def _adapter(schema: Any, draft: str, _retrieve: Retrieve) -> Compiled:
    from mcpl_host.client.schema import UnsupportedSchema, compile_schema

    if draft == "draft7" and isinstance(schema, dict) and "$schema" not in schema:
        # The adapter reads the draft from $schema (2020-12 without), as a server's draft-07
        # schema says it; the suite's draft-7 schemas mostly leave it out.
        schema = {**schema, "$schema": "http://json-schema.org/draft-07/schema#"}
    try:
        # The adapter never retrieves: a suite remote is refused.
        validator = compile_schema(schema)
    except UnsupportedSchema as exc:
        raise Refused(str(exc)) from exc
    return Compiled(validator.is_valid, lambda i: len(validator.errors(i, ERRORS_SHOWN)))


def _jsonschema_rs(schema: Any, draft: str, retrieve: Retrieve) -> Compiled:
    import jsonschema_rs

    cls = jsonschema_rs.Draft7Validator if draft == "draft7" else jsonschema_rs.Draft202012Validator
    try:
        validator = cls(schema, retriever=retrieve, validate_formats=False)
    except (ValueError, jsonschema_rs.ReferencingError) as exc:
        raise Refused(str(exc)) from exc
    return Compiled(
        validator.is_valid,
        lambda i: sum(1 for _ in itertools.islice(validator.iter_errors(i), ERRORS_SHOWN)),
    )


def _jsonschema(schema: Any, draft: str, retrieve: Retrieve) -> Compiled:
    import jsonschema
    from referencing import Registry, Resource

    cls = jsonschema.Draft7Validator if draft == "draft7" else jsonschema.Draft202012Validator
    registry: Registry[Any] = Registry(
        retrieve=lambda uri: Resource.from_contents(
            retrieve(uri), default_specification=_spec(draft)
        )
    )
    try:
        validator = cls(schema, registry=registry)
    except Exception as exc:
        raise Refused(str(exc)) from exc
    return Compiled(
        validator.is_valid,
        lambda i: sum(1 for _ in itertools.islice(validator.iter_errors(i), ERRORS_SHOWN)),
    )


def _spec(draft: str) -> Any:
    from referencing.jsonschema import DRAFT7, DRAFT202012

    return DRAFT7 if draft == "draft7" else DRAFT202012


def _fastjsonschema(schema: Any, _draft: str, retrieve: Retrieve) -> Compiled:
    import fastjsonschema

    try:
        # use_default=False: it would otherwise write defaults into the instance.
        check = fastjsonschema.compile(
            schema, handlers={"http": retrieve}, use_default=False, use_formats=False
        )
    except Exception as exc:
        raise Refused(str(exc)) from exc

    def is_valid(instance: Any) -> bool:
        try:
            check(instance)
        except fastjsonschema.JsonSchemaValueException:
            return False
        return True

    return Compiled(is_valid, lambda i: 0 if is_valid(i) else 1)  # it stops at the first


CANDIDATES: dict[str, tuple[str, str, Callable[[Any, str, Retrieve], Compiled]]] = {
    # name: (module to import, distribution, compile)
    "mcpl_host-handwritten": ("mcpl_host.protocol.schema", "mcpl_host", _handwritten),
    "mcpl_host": ("mcpl_host.client.schema", "mcpl_host", _adapter),
    "jsonschema-rs": ("jsonschema_rs", "jsonschema-rs", _jsonschema_rs),
    "jsonschema": ("jsonschema", "jsonschema", _jsonschema),
    "fastjsonschema": ("fastjsonschema", "fastjsonschema", _fastjsonschema),
}


def _available(name: str) -> bool:
    try:
        __import__(CANDIDATES[name][0])
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------------------------------
# 1. The test suite


def _retriever(suite: Path) -> Retrieve:
    remotes = suite / "remotes"

    def retrieve(uri: str) -> Any:
        if not uri.startswith(REMOTE):
            raise LookupError(f"not a suite remote: {uri}")
        path = (remotes / uri.removeprefix(REMOTE).partition("#")[0]).resolve()
        if not path.is_relative_to(remotes.resolve()) or not path.is_file():
            raise LookupError(f"no such remote: {uri}")
        return json.loads(path.read_text("utf-8"))

    return retrieve


def _files(suite: Path, draft: str, optional: bool) -> list[Path]:
    base = suite / "tests" / draft
    return sorted((base / "optional").glob("*.json") if optional else base.glob("*.json"))


def run_suite(name: str, suite: Path, draft: str, optional: bool) -> dict[str, int]:
    compile_ = CANDIDATES[name][2]
    retrieve = _retriever(suite)
    counts = {"passed": 0, "failed": 0, "refused": 0}
    for path in _files(suite, draft, optional):
        for group in json.loads(path.read_text("utf-8")):
            try:
                compiled = compile_(group["schema"], draft, retrieve)
            except Refused:
                counts["refused"] += len(group["tests"])
                continue
            except RecursionError:
                counts["refused"] += len(group["tests"])
                continue
            for case in group["tests"]:
                try:
                    ok = compiled.is_valid(case["data"]) is case["valid"]
                except Exception:
                    ok = False
                counts["passed" if ok else "failed"] += 1
    return counts


# ---------------------------------------------------------------------------------------
# 2. Speed on real tool schemas


def _cases() -> Iterator[tuple[str, Any, Any, Any]]:
    entries = json.loads((HERE / "tool_schemas.json").read_text("utf-8"))
    for entry in entries:
        yield entry["name"], entry["schema"], entry["valid"], entry["invalid"]
    roots = next(e for e in entries if e["name"].startswith("list_roots"))
    many = [
        {"uri": f"file:///work/project-{i}", "name": f"project {i}" if i % 2 else None}
        for i in range(500)
    ]
    broken = [dict(root, name=0) for root in many]
    yield "list_roots output, 500 roots", roots["schema"], {"roots": many}, {"roots": broken}


def _per_call(call: Callable[[], Any], budget: float = 0.2) -> float:
    """Median microseconds per call over 5 rounds of about ``budget`` seconds in all."""
    started = time.perf_counter()
    call()
    once = max(time.perf_counter() - started, 1e-7)
    number = max(1, int(budget / 5 / once))
    rounds = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(number):
            call()
        rounds.append((time.perf_counter() - started) / number)
    return statistics.median(rounds) * 1e6


def run_speed(name: str) -> list[tuple[str, float, float, float]]:
    compile_ = CANDIDATES[name][2]

    def no_remote(uri: str) -> Any:
        raise LookupError(uri)

    rows = []
    for label, schema, valid, invalid in _cases():
        draft = "draft7" if "draft-07" in str(schema.get("$schema", "")) else "draft2020-12"
        compiled = compile_(schema, draft, no_remote)
        assert compiled.is_valid(valid), (name, label)
        assert not compiled.is_valid(invalid), (name, label)
        rows.append(
            (
                label,
                _per_call(lambda s=schema, d=draft: compile_(s, d, no_remote)),
                _per_call(lambda c=compiled, v=valid: c.is_valid(v)),
                _per_call(lambda c=compiled, v=invalid: c.errors(v)),
            )
        )
    return rows


# ---------------------------------------------------------------------------------------
# 3. Hostile input, in a child process each


def _deep(levels: int, leaf: Any = None) -> Any:
    root: list[Any] = []
    node = root
    for _ in range(levels):
        inner: list[Any] = []
        node.append(inner)
        node = inner
    if leaf is not None:
        node.append(leaf)
    return root


def _chain(links: int) -> dict[str, Any]:
    """Each array level passes through ``links`` in-place ``allOf``/``$ref`` hops."""
    defs: dict[str, Any] = {
        f"b{i}": {"allOf": [{"$ref": f"#/$defs/b{i + 1}"}], "minItems": 0} for i in range(links)
    }
    defs[f"b{links}"] = {"items": {"$ref": "#/$defs/b0"}}
    return {"$defs": defs, "$ref": "#/$defs/b0"}


def _doubling(steps: int) -> dict[str, Any]:
    defs: dict[str, Any] = {
        f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
        for i in range(steps)
    }
    defs[f"d{steps}"] = {"minimum": 0}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


ANY_OF_TWICE = {
    "$defs": {
        "n": {
            "type": "array",
            "anyOf": [
                {"items": {"$ref": "#/$defs/n"}, "minItems": 0},
                {"items": {"$ref": "#/$defs/n"}, "maxItems": 5},
            ],
        }
    },
    "$ref": "#/$defs/n",
}

HOSTILE: dict[str, tuple[str, Callable[[], tuple[Any, Any]], str]] = {
    # name: (what, () -> (schema, instance), which call)
    "redos": (
        '"pattern": "^(a+)+$" against "a" * 28 + "!"',
        lambda: ({"pattern": "^(a+)+$"}, "a" * 28 + "!"),
        "is_valid",
    ),
    "deep-instance": (
        '{"items": {"$ref": "#"}} against arrays nested 100,000 deep, violations',
        lambda: ({"items": {"$ref": "#"}}, _deep(100_000, leaf=1)),
        "errors",
    ),
    "ref-chain": (
        "50 levels of arrays, 1,000 in-place $ref hops per level, violations",
        lambda: (_chain(1000), _deep(50, leaf=1)),
        "errors",
    ),
    "anyof-twice": (
        "anyOf of two alternatives that both descend, 22 levels, failing at the leaf",
        lambda: (ANY_OF_TWICE, _deep(22, leaf=1)),
        "is_valid",
    ),
    "doubling": (
        "allOf of the same $ref twice, 30 steps deep: 2^30 checks of one valid number",
        lambda: (_doubling(30), 1),
        "is_valid",
    ),
}
HOSTILE_TIMEOUT = 20.0


def _hostile_child(name: str, case: str) -> None:
    """Run one hostile case in this (child) process; print seconds and the verdict."""
    sys.setrecursionlimit(10_000)  # deep test values are built iteratively; this is for
    # the Python candidates, which raise RecursionError instead of recursing forever
    _, build, call = HOSTILE[case]
    schema, instance = build()
    compile_ = CANDIDATES[name][2]
    compile_({"type": "object"}, "draft2020-12", lambda _uri: None)  # imports, lazy ones too
    started = time.perf_counter()
    try:
        compiled = compile_(schema, "draft2020-12", lambda _uri: None)
        answer: Any = getattr(compiled, call)(instance)
    except Refused as exc:
        answer = f"refused ({str(exc)[:60]})"
    except Exception as exc:
        answer = f"raised {type(exc).__name__}"
    print(json.dumps({"seconds": time.perf_counter() - started, "answer": repr(answer)}))


def run_hostile(name: str) -> dict[str, str]:
    results = {}
    for case in HOSTILE:
        try:
            done = subprocess.run(
                [sys.executable, __file__, "--hostile-child", name, case],
                capture_output=True,
                text=True,
                timeout=HOSTILE_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            results[case] = f"> {HOSTILE_TIMEOUT:.0f} s (killed)"
            continue
        if done.returncode < 0:
            results[case] = f"crashed (signal {-done.returncode})"
        elif done.returncode != 0:
            results[case] = f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"
        else:
            found = json.loads(done.stdout.strip().splitlines()[-1])
            results[case] = f"{found['seconds'] * 1e3:.1f} ms, {found['answer']}"
    return results


# ---------------------------------------------------------------------------------------
# 4. Weight


_IMPORT_PROBE = """
import sys, time
def rss():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096
before = rss()
started = time.perf_counter()
__import__(sys.argv[1])
elapsed = time.perf_counter() - started
print(elapsed, rss() - before)
"""


def run_import(name: str, runs: int = 7) -> tuple[float, float]:
    """Median import milliseconds and resident memory added (MiB), fresh interpreters.

    mcpl_host's own modules are imported with the package: for them, the cumulative time
    ``-X importtime`` reports for the module after ``import mcpl_host``, and no RSS.
    """
    module = CANDIDATES[name][0]
    times, rss = [], []
    for _ in range(runs):
        if CANDIDATES[name][1] == "mcpl_host":
            report = subprocess.run(
                [sys.executable, "-X", "importtime", "-c", f"import mcpl_host, {module}"],
                capture_output=True,
                text=True,
                check=True,
            ).stderr
            line = next(row for row in report.splitlines() if row.rstrip().endswith(" " + module))
            times.append(int(line.split("|")[1]) / 1e3)
            rss.append(float("nan"))
            continue
        out = subprocess.run(
            [sys.executable, "-c", _IMPORT_PROBE, module],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        times.append(float(out[0]) * 1e3)
        rss.append(int(out[1]) / 2**20)
    return statistics.median(times), statistics.median(rss)


def installed_size(dist_name: str) -> tuple[float, list[str]]:
    """MiB on disk of ``dist_name`` and its runtime requirements (recursively)."""
    from packaging.requirements import Requirement

    seen: dict[str, int] = {}
    todo = [dist_name]
    while todo:
        current = todo.pop()
        key = current.lower().replace("_", "-")
        if key in seen:
            continue
        try:
            dist = importlib.metadata.distribution(current)
        except importlib.metadata.PackageNotFoundError:
            continue
        seen[key] = sum((f.size or 0) for f in dist.files or ())
        for text in dist.requires or ():
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return sum(seen.values()) / 2**20, sorted(seen)


# ---------------------------------------------------------------------------------------


def _version(name: str) -> str:
    dist = CANDIDATES[name][1]
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def print_suite(names: list[str], suite: Path) -> None:
    print(f"## JSON-Schema-Test-Suite ({suite})\n")
    print("| candidate | version | suite | passed | failed | refused | pass rate |")
    print("|---|---|---|--:|--:|--:|--:|")
    for name in names:
        for draft in DRAFTS:
            for optional in (False, True):
                counts = run_suite(name, suite, draft, optional)
                total = sum(counts.values())
                if not total:  # the vendored copy has no optional/ directory
                    continue
                label = draft + (" optional" if optional else "")
                print(
                    f"| {name} | {_version(name)} | {label} | {counts['passed']} | "
                    f"{counts['failed']} | {counts['refused']} | "
                    f"{100 * counts['passed'] / total:.1f} % |",
                    flush=True,
                )


def print_speed(names: list[str]) -> None:
    print("\n## Real tool schemas: µs per compile / validate (valid) / errors (invalid)\n")
    speed = {name: run_speed(name) for name in names}
    labels = [row[0] for row in speed[names[0]]]
    print("| schema | " + " | ".join(names) + " |")
    print("|---|" + "--:|" * len(names))
    for index, label in enumerate(labels):
        cells = ["{:.1f} / {:.2f} / {:.2f}".format(*speed[name][index][1:]) for name in names]
        print(f"| {label} | " + " | ".join(cells) + " |")
    medians = [
        "{:.1f} / {:.2f} / {:.2f}".format(
            *(statistics.median(row[k] for row in speed[name]) for k in (1, 2, 3))
        )
        for name in names
    ]
    print("| **median** | " + " | ".join(medians) + " |")


def print_hostile(names: list[str]) -> None:
    print(f"\n## Hostile input (child process each, {HOSTILE_TIMEOUT:.0f} s limit)\n")
    for case, (what, _, _) in HOSTILE.items():
        print(f"- `{case}`: {what}")
    print("\n| candidate | " + " | ".join(HOSTILE) + " |")
    print("|---|" + "---|" * len(HOSTILE))
    for name in names:
        found = run_hostile(name)
        print(f"| {name} | " + " | ".join(found[c] for c in HOSTILE) + " |", flush=True)


def print_weight(names: list[str]) -> None:
    print("\n## Weight\n")
    print("| candidate | import ms | RSS added MiB | installed MiB (with requirements) |")
    print("|---|--:|--:|---|")
    for name in names:
        millis, rss = run_import(name)
        if CANDIDATES[name][1] == "mcpl_host":  # the module alone: the rest is there anyway
            module = importlib.import_module(CANDIDATES[name][0])
            files = [Path(module.__file__ or "")]
            if name == "mcpl_host":  # the adapter and its shape analysis
                files.append(files[0].with_name("_schema_shape.py"))
            kib = sum(f.stat().st_size for f in files) / 1024
            print(f"| {name} | {millis:.1f} (with mcpl_host) | – | {kib:.0f} KiB (source) |")
            continue
        size, dists = installed_size(CANDIDATES[name][1])
        print(f"| {name} | {millis:.1f} | {rss:.1f} | {size:.1f} ({', '.join(dists)}) |")
    print(f"\npython {sys.version.split()[0]}, {os.uname().machine}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suite", nargs="?", type=Path, default=DEFAULT_SUITE)
    parser.add_argument("--only", nargs="*", choices=list(CANDIDATES))
    parser.add_argument(
        "--sections",
        default="suite,speed,hostile,weight",
        help="comma-separated: suite, speed, hostile, weight (default: all)",
    )
    parser.add_argument("--hostile-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.hostile_child:
        _hostile_child(*args.hostile_child)
        return
    names = [n for n in (args.only or CANDIDATES) if _available(n)]
    missing = [n for n in (args.only or CANDIDATES) if n not in names]
    if missing:
        print(f"not installed (skipped): {', '.join(missing)}\n")

    sections = args.sections.split(",")
    if "suite" in sections:
        print_suite(names, args.suite)
    if "speed" in sections:
        print_speed(names)
    if "hostile" in sections:
        print_hostile(names)
    if "weight" in sections:
        print_weight(names)


if __name__ == "__main__":
    main()
