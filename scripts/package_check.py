"""The package check: what a user of PyPI would get, built, checked and installed.

1. Builds the sdist and the wheel with the PEP 517 front end ``build``, the wheel from
   the unpacked sdist (so the sdist must hold everything a build needs), with the
   setuptools pinned in the test extras (``--no-isolation``: nothing downloaded per run).
2. ``twine check --strict`` (the README renders as PyPI would show it), then the
   metadata validated by ``packaging`` and the fields a user sees on PyPI checked one by
   one: name, version (mcpl_host.__version__), summary, readme and its content type,
   license, requires-python, classifiers (each one PyPI knows), the dependencies (no
   extra's leaking into them) and the ``mcpl-host`` command.
3. The file lists: the sdist has pyproject.toml, README.md and every file of the
   package, and nothing of .git, .venv, node_modules, caches, tests or bench; the wheel
   has the package's files exactly (py.typed and the demo server included) and its
   dist-info, nothing else.
4. Installs the wheel into a fresh venv in a temporary directory and, from there (the
   checkout not importable), runs ``mcpl-host --version`` and ``mcpl-host connect
   --demo --json``.

Prints what it checked and how long each step took; exits 0 when everything holds, 1
otherwise. Run by scripts/test; by hand: ``.venv/bin/python scripts/package_check.py``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import zipfile
from collections.abc import Iterable
from email.parser import HeaderParser
from pathlib import Path, PurePosixPath
from typing import Any

from packaging.metadata import Metadata
from packaging.requirements import Requirement
from trove_classifiers import classifiers as known_classifiers

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "mcpl_host"
DISTRIBUTION = "mcpl-host"
COMMAND = "mcpl-host"
# Nothing of these may be in either archive: a checkout's tools, caches and tests.
FORBIDDEN_PARTS = {
    ".git",
    ".venv",
    "node_modules",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    ".mutation",
    "mutants",
    "tests",
    "bench",
}
STEP_TIMEOUT = 600  # seconds: an install resolves every dependency from the index


class Check:
    """The failures found so far, and the report of each step."""

    def __init__(self) -> None:
        self.failures: list[str] = []
        self.started = time.perf_counter()

    def expect(self, condition: bool, failure: str) -> None:
        if not condition:
            self.failures.append(failure)

    def say(self, text: str, since: float | None = None) -> None:
        took = "" if since is None else f" ({time.perf_counter() - since:.1f} s)"
        print(f"package-check: {text}{took}", flush=True)


def main() -> int:
    check = Check()
    version = _source_version()
    with tempfile.TemporaryDirectory(prefix="mcpl-host-package-") as temp:
        work = Path(temp)
        sdist, wheel = _build(check, work / "dist")
        if sdist is None or wheel is None:
            return _verdict(check)
        _twine(check, sdist, wheel)
        _metadata(check, sdist, wheel, version)
        _sdist_files(check, sdist, version)
        _wheel_files(check, wheel, version)
        _installed(check, wheel, work, version)
    return _verdict(check)


def _verdict(check: Check) -> int:
    total = time.perf_counter() - check.started
    if check.failures:
        for failure in check.failures:
            print(f"package-check: FAILED: {failure}", file=sys.stderr)
        print(f"package-check: {len(check.failures)} failed ({total:.1f} s)", file=sys.stderr)
        return 1
    check.say(f"all checks passed ({total:.1f} s)")
    return 0


def _source_version() -> str:
    """mcpl_host.__version__ as the checkout writes it (read, not imported)."""
    tree = ast.parse((ROOT / PACKAGE / "__init__.py").read_text())
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == "__version__" for t in targets):
            value = getattr(node, "value", None)
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return value.value
    raise SystemExit(f"package-check: no __version__ in {PACKAGE}/__init__.py")


def _run(args: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, check=False, capture_output=True, text=True, timeout=STEP_TIMEOUT, **options
    )


def _build(check: Check, out: Path) -> tuple[Path | None, Path | None]:
    since = time.perf_counter()
    done = _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)])
    if done.returncode != 0:
        check.expect(False, f"the build failed:\n{done.stdout}\n{done.stderr}")
        return None, None
    sdists, wheels = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        check.expect(False, f"expected one sdist and one wheel, got {sorted(out.iterdir())}")
        return None, None
    sdist, wheel = sdists[0], wheels[0]
    sizes = ", ".join(f"{path.name} ({path.stat().st_size // 1024} KiB)" for path in (sdist, wheel))
    check.say(f"built {sizes}, the wheel from the sdist", since)
    return sdist, wheel


def _twine(check: Check, sdist: Path, wheel: Path) -> None:
    since = time.perf_counter()
    done = _run([sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)])
    check.expect(done.returncode == 0, f"twine check --strict:\n{done.stdout}\n{done.stderr}")
    if done.returncode == 0:
        check.say("twine check --strict: both pass", since)


def _metadata(check: Check, sdist: Path, wheel: Path, version: str) -> None:
    since = time.perf_counter()
    with zipfile.ZipFile(wheel) as archive:
        wheel_text = archive.read(f"{PACKAGE}-{version}.dist-info/METADATA").decode()
        entry_points = archive.read(f"{PACKAGE}-{version}.dist-info/entry_points.txt").decode()
    with tarfile.open(sdist) as archive:
        member = archive.extractfile(f"{PACKAGE}-{version}/PKG-INFO")
        assert member is not None
        sdist_text = member.read().decode()
    try:
        meta = Metadata.from_email(wheel_text, validate=True)
        Metadata.from_email(sdist_text, validate=True)
    except Exception as exc:  # packaging raises an ExceptionGroup of InvalidMetadata
        check.expect(False, f"the metadata does not validate: {exc!r}")
        return
    headers = HeaderParser().parsestr(wheel_text)
    check.expect(
        _fields(HeaderParser().parsestr(sdist_text)) == _fields(headers),
        "the sdist's PKG-INFO and the wheel's METADATA differ",
    )
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    readme = (ROOT / "README.md").read_text()
    check.expect(meta.name == DISTRIBUTION, f"name is {meta.name!r}")
    check.expect(str(meta.version) == version, f"version {meta.version} is not {version}")
    summary = meta.summary or ""
    check.expect(0 < len(summary) <= 200 and "\n" not in summary, f"summary {summary!r}")
    check.expect(meta.description_content_type == "text/markdown", "readme is not text/markdown")
    check.expect((meta.description or "").strip() == readme.strip(), "readme is not README.md")
    check.expect(meta.license_expression == "MIT", f"license is {meta.license_expression!r}")
    check.expect(str(meta.requires_python) == ">=3.11", f"requires-python {meta.requires_python}")
    classifiers = meta.classifiers or []
    unknown = [c for c in classifiers if c not in known_classifiers]
    check.expect(not unknown, f"classifiers PyPI does not know: {unknown}")
    for wanted in ("Typing :: Typed", "Programming Language :: Python :: 3.11"):
        check.expect(wanted in classifiers, f"classifier {wanted!r} missing")
    plain = sorted(str(r) for r in meta.requires_dist or [] if r.marker is None)
    declared = sorted(str(Requirement(text)) for text in project["dependencies"])
    check.expect(plain == declared, f"the dependencies are {plain}, not pyproject's {declared}")
    script = re.search(rf"^{re.escape(COMMAND)}\s*=\s*(\S+)", entry_points, re.MULTILINE)
    check.expect(
        script is not None and script.group(1) == f"{PACKAGE}.cli:main",
        f"no console script {COMMAND} = {PACKAGE}.cli:main",
    )
    urls = headers.get_all("Project-URL") or []
    check.say(
        f"metadata: {meta.name} {meta.version}, {meta.license_expression}, requires-python "
        f"{meta.requires_python}, readme {meta.description_content_type} ({len(readme)} chars), "
        f"{len(classifiers)} known classifiers, {len(plain)} dependencies, "
        f"{len(urls)} project URLs, the {COMMAND} command",
        since,
    )


def _fields(headers: Any) -> list[tuple[str, str]]:
    # The generator's name differs between PKG-INFO and METADATA; the rest must not.
    return sorted((k, v) for k, v in headers.items() if k not in ("Generator",))


def _package_files() -> set[str]:
    """The package's files as the checkout has them (git's list where there is one)."""
    done = _run(["git", "-C", str(ROOT), "ls-files", PACKAGE])
    if done.returncode == 0 and done.stdout.strip():
        names = done.stdout.split()
    else:
        names = [
            str(path.relative_to(ROOT))
            for path in (ROOT / PACKAGE).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts
        ]
    return {name for name in names if (ROOT / name).exists()}


def _forbidden(names: Iterable[str]) -> list[str]:
    return [
        name
        for name in names
        if FORBIDDEN_PARTS & set(PurePosixPath(name).parts) or name.endswith((".pyc", ".pyo"))
    ]


def _sdist_files(check: Check, sdist: Path, version: str) -> None:
    since = time.perf_counter()
    prefix = f"{PACKAGE}-{version}/"
    with tarfile.open(sdist) as archive:
        names = [m.name.removeprefix(prefix) for m in archive.getmembers() if m.isfile()]
    present = set(names)
    needed = {"pyproject.toml", "README.md", "PKG-INFO", *_package_files()}
    needed |= {path.name for path in ROOT.glob("LICEN[CS]E*")}
    missing = sorted(needed - present)
    check.expect(not missing, f"the sdist lacks {missing[:10]}")
    bad = _forbidden(names)
    check.expect(not bad, f"the sdist has what it must not: {bad[:10]}")
    check.say(f"sdist: {len(names)} files, the package's {len(_package_files())} among them", since)


def _wheel_files(check: Check, wheel: Path, version: str) -> None:
    since = time.perf_counter()
    info = f"{PACKAGE}-{version}.dist-info/"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    package = {name for name in names if name.startswith(f"{PACKAGE}/")}
    others = [name for name in names if not name.startswith((f"{PACKAGE}/", info))]
    check.expect(not others, f"the wheel has files outside the package: {others[:10]}")
    expected = _package_files()
    check.expect(
        package == expected,
        f"the wheel's package files differ from the checkout's: missing "
        f"{sorted(expected - package)[:10]}, extra {sorted(package - expected)[:10]}",
    )
    for needed in (
        f"{PACKAGE}/py.typed",
        f"{PACKAGE}/demo/__main__.py",
        f"{PACKAGE}/cli/__main__.py",
    ):
        check.expect(needed in package, f"the wheel lacks {needed}")
    licenses = [path.name for path in ROOT.glob("LICEN[CS]E*")]
    for name in licenses:
        check.expect(f"{info}licenses/{name}" in names, f"the wheel lacks {name}")
    bad = _forbidden(names)
    check.expect(not bad, f"the wheel has what it must not: {bad[:10]}")
    check.say(f"wheel: {len(names)} files, the package's {len(package)} and its dist-info", since)


def _installed(check: Check, wheel: Path, work: Path, version: str) -> None:
    """The wheel in a fresh venv, run from a directory where the checkout is not
    importable."""
    since = time.perf_counter()
    venv = work / "venv"
    elsewhere = work / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    # No pip of its own (ensurepip costs seconds): this venv's pip installs into it.
    done = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], env=env)
    check.expect(done.returncode == 0, f"venv failed: {done.stderr}")
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check"]
    done = _run([*pip, "install", "--quiet", str(wheel)], env=env, cwd=elsewhere)
    if done.returncode != 0:
        check.expect(False, f"installing the wheel failed:\n{done.stdout}\n{done.stderr}")
        return
    check.say("installed the wheel and its dependencies into a fresh venv", since)

    since = time.perf_counter()
    where = _run(
        [str(python), "-c", f"import {PACKAGE}; print({PACKAGE}.__file__)"], env=env, cwd=elsewhere
    )
    imported = Path(where.stdout.strip())
    check.expect(
        where.returncode == 0 and venv in imported.parents,
        f"{PACKAGE} imported from {where.stdout.strip() or where.stderr}, not the venv",
    )
    command = str(venv / "bin" / COMMAND)
    shown = _run([command, "--version"], env=env, cwd=elsewhere)
    check.expect(
        shown.returncode == 0 and shown.stdout.strip() == f"{COMMAND} {version}",
        f"{COMMAND} --version said {shown.stdout.strip() or shown.stderr}",
    )
    demo = _run([command, "connect", "--demo", "--json"], env=env, cwd=elsewhere)
    try:
        report = json.loads(demo.stdout)
    except json.JSONDecodeError:
        report = {}
    tools = report.get("tools") or []
    check.expect(
        demo.returncode == 0
        and report.get("ok") is True
        and report.get("serverInfo", {}).get("name") == "mcpl-host-demo"
        and len(tools) > 0,
        f"{COMMAND} connect --demo failed ({demo.returncode}):\n{demo.stdout}\n{demo.stderr}",
    )
    check.say(
        f"from the venv: {shown.stdout.strip()}; connect --demo: ok {report.get('ok')}, "
        f"{len(tools)} tools, {PACKAGE} from the venv",
        since,
    )


if __name__ == "__main__":
    sys.exit(main())
