#!/usr/bin/env python3
"""Mutation testing with mutmut, one target at a time (docs/testing.md, "Mutation testing").

A target is a table [tool.mutation.<name>] in pyproject.toml: the source files to mutate
and the test directories whose tests may kill them. Each target runs in its own work
directory .mutation/<name>/ (untracked) that holds a link to mcpl_host/, a tests/ with
links to the target's test directories only, and a pyproject.toml that is the project's
with mutmut's per-target settings filled in; mutmut keeps its mutants and verdicts there,
so a rerun tests only what changed. Runs niced, one mutant at a time unless --jobs says
otherwise. It is slow, so neither scripts/test nor CI runs it.

    python3 scripts/mutation.py [--target core|driver] [--jobs N] [run [PATTERN ...]]
    python3 scripts/mutation.py [--target ...] retest
    python3 scripts/mutation.py [--target ...] summary
    python3 scripts/mutation.py [--target ...] results|show NAME|browse|...  (mutmut's own)

`run` without patterns runs every mutant not yet tested (and those of functions whose
source changed); with patterns (mutant names, `*` allowed: 'mcpl_host.protocol.redact.*')
it reruns just those. `retest` reruns every mutant that was not killed, after tests
changed. `summary` prints the verdicts per package and lists the survivors.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
MUTMUT = ROOT / ".venv" / "bin" / "mutmut"
WORK = ROOT / ".mutation"


def load_pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def ensure_installed(pyproject: dict[str, object]) -> None:
    """Install the package with its test and mutation extras into .venv unless the pinned
    versions of the mutation extra are already there."""
    extras = pyproject["project"]["optional-dependencies"]  # type: ignore[index]
    pins = dict(re.fullmatch(r"([\w.-]+)==(\S+)", pin).groups() for pin in extras["mutation"])  # type: ignore[union-attr]
    if not VENV_PYTHON.exists():
        subprocess.run([sys.executable, "-m", "venv", str(ROOT / ".venv")], check=True)
    probe = (
        "import importlib.metadata as m, json, sys\n"
        "found = {}\n"
        "for name in json.loads(sys.argv[1]):\n"
        "    try: found[name] = m.version(name)\n"
        "    except m.PackageNotFoundError: found[name] = None\n"
        "print(json.dumps(found))\n"
    )
    found = json.loads(
        subprocess.run(
            [str(VENV_PYTHON), "-c", probe, json.dumps(list(pins))],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    if found != pins:
        print(f"== installing .[test,mutation] into .venv (have {found}, want {pins})")
        pip = [str(VENV_PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, "-e", f"{ROOT}[test,mutation]"], check=True)


def toml_value(value: object) -> str:
    """A TOML literal for the plain values mutmut's settings use."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    raise TypeError(f"no TOML literal for {value!r}")


def mutmut_settings(
    pyproject: dict[str, object], target: dict[str, list[str]]
) -> dict[str, object]:
    settings = dict(pyproject["tool"]["mutmut"])  # type: ignore[index]
    settings["only_mutate"] = target["mutate"]
    settings["do_not_mutate"] = target["do_not_mutate"]
    settings["pytest_add_cli_args_test_selection"] = target["tests"] + [
        f"--ignore={path}" for path in target["ignore"]
    ]
    return settings


def without_table(text: str, header: str) -> str:
    """The TOML text without the table that starts at the line `header` (up to the next
    table header)."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        if line.startswith("["):
            skipping = line.strip() == header
        if not skipping:
            out.append(line)
    return "".join(out)


def link(source: Path, link_path: Path) -> None:
    """A relative symlink at link_path to source, made once."""
    if link_path.is_symlink() or link_path.exists():
        return
    link_path.parent.mkdir(parents=True, exist_ok=True)
    link_path.symlink_to(os.path.relpath(source, link_path.parent))


def prepare(name: str, pyproject: dict[str, object]) -> Path:
    """Lay out .mutation/<name>/ and return it."""
    targets = pyproject["tool"]["mutation"]  # type: ignore[index]
    target = targets[name]  # type: ignore[index]
    work = WORK / name
    work.mkdir(parents=True, exist_ok=True)
    for source_path in pyproject["tool"]["mutmut"]["source_paths"]:  # type: ignore[index]
        link(ROOT / source_path, work / Path(source_path))
    # Only the target's test directories (and those they import from), each with the
    # package __init__.py files above it, so that the relative imports still resolve.
    # Laid anew every time (links only), so a directory dropped from the target goes.
    shutil.rmtree(work / "tests", ignore_errors=True)
    for test_path in target["tests"] + target["support"]:
        link(ROOT / test_path, work / test_path)
        for parent in Path(test_path).parents:
            if parent != Path(".") and (ROOT / parent / "__init__.py").exists():
                link(ROOT / parent / "__init__.py", work / parent / "__init__.py")
    config = without_table((ROOT / "pyproject.toml").read_text(), "[tool.mutmut]")
    settings = mutmut_settings(pyproject, target)
    config += "\n# Written by scripts/mutation.py for this target.\n[tool.mutmut]\n"
    config += "".join(f"{key} = {toml_value(value)}\n" for key, value in settings.items())
    config_path = work / "pyproject.toml"
    if not config_path.exists() or config_path.read_text() != config:
        config_path.write_text(config)
    return work


def verdicts(work: Path) -> dict[str, str]:
    """Every mutant's verdict so far, by name."""
    listing = subprocess.run(
        [str(MUTMUT), "results", "--all", "true"],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found: dict[str, str] = {}
    for line in listing.splitlines():
        mutant, _, status = line.strip().rpartition(": ")
        if mutant:
            found[mutant] = status
    return found


def summary(work: Path) -> int:
    """Verdicts per module and per package, then the survivors."""
    counts: dict[str, Counter[str]] = {}
    survivors: list[str] = []
    for mutant, status in verdicts(work).items():
        module = mutant.split(".x", 1)[0]
        package = module.rsplit(".", 1)[0] + " (all)"
        for key in (module, package):
            counts.setdefault(key, Counter())[status] += 1
        if status != "killed":
            survivors.append(f"{status}: {mutant}")
    statuses = sorted({status for per_key in counts.values() for status in per_key})
    width = max(map(len, counts), default=0) + 2
    print("".ljust(width) + "".join(s.rjust(13) for s in ["total", *statuses]))
    for key, per_key in sorted(counts.items()):
        cells = [sum(per_key.values())] + [per_key[s] for s in statuses]
        print(key.ljust(width) + "".join(str(c).rjust(13) for c in cells))
    print()
    print("\n".join(sorted(survivors)) or "no survivors")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="core", help="a [tool.mutation.*] table (core)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants tested at once (1)")
    parser.add_argument(
        "command", nargs="?", default="run", help="run, retest, summary, or mutmut's"
    )
    parser.add_argument("args", nargs=argparse.REMAINDER, help="for the command")
    options = parser.parse_args()

    pyproject = load_pyproject()
    targets = pyproject["tool"]["mutation"]  # type: ignore[index]
    if options.target not in targets:
        parser.error(f"unknown target {options.target!r}; known: {', '.join(targets)}")
    ensure_installed(pyproject)
    work = prepare(options.target, pyproject)
    if options.command == "summary":
        return summary(work)
    command = [str(MUTMUT), options.command]
    if options.command == "retest":
        command[1] = "run"
        names = sorted(name for name, status in verdicts(work).items() if status != "killed")
        if not names:
            print("every mutant was killed")
            return 0
        command += names
    if command[1] == "run":
        command += ["--max-children", str(options.jobs)]
        # mutmut copies the tests over its old copy: a deleted test file would stay.
        shutil.rmtree(work / "mutants" / "tests", ignore_errors=True)
    command += options.args
    # Low priority: the machine is shared, and mutation testing can wait.
    return subprocess.run(["nice", "-n", "10", *command], cwd=work, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
