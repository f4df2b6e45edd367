"""Every example of the documentation runs as written, or is marked with why it cannot
(docs/testing.md, "The docs test").

The pages are README.md and docs/*.md; the Python examples of mcpl_host's docstrings
count too. All runnable blocks are started at once by one fixture, a few at a time (each
waits mostly for a Python process and a demo server to start), and each block's test
waits for its own result.
"""

from __future__ import annotations

import doctest
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pytest

from mcpl_host.config import load_config

from .docblocks import (
    CONSOLE_INFOS,
    JSON_INFOS,
    ROOT,
    SCRIPT_INFOS,
    SHELL_INFOS,
    Block,
    all_blocks,
    console_steps,
    docstring_blocks,
    markdown_blocks,
    shell_commands,
)

# Generous: a block runs in a second or two; this only stops a hung one.
TIMEOUT = 60
# Blocks run at once (the machine may have two cores; most of a run is process start).
WORKERS = 4
# What a page's script writes on stderr: a fragment it must hold, or None for nothing.
# Scripts not listed must not print a traceback.
STDERR = {
    "connection.md": "connected",  # the info line went to stderr, as configured
    "manager.md": "server state",  # the manager's log lines went to stderr
    "client.md": "server log",  # the server's notifications/message, logged
    # structlog unconfigured, nothing worth a warning: stderr stays empty (the timed-out
    # countdown's cancellation included)
    "embedding.md": None,
}

Failures = list[str]


def plan(block: Block) -> str:
    """What the docs test does with a block: skip, output, fragment, script, pytest,
    shell, console, config, file; or unmarked (a failure)."""
    if block.is_output:
        return "output"
    if block.marker is not None and block.marker.kind != "config":
        return block.marker.kind
    if block.in_docstring:
        return "script" if _compiles(block.text, flags=0) else "fragment"
    if block.marker is not None or block.info in JSON_INFOS:
        return "config"
    if block.info in SCRIPT_INFOS:
        return "script"
    if block.info in SHELL_INFOS:
        return "shell"
    if block.info in CONSOLE_INFOS:
        return "console"
    return "unmarked"


def problems(blocks: list[Block]) -> list[str]:
    """Why blocks escape the test: unmarked, badly marked, an output nothing is compared
    with, a Python block marked skip that does not even compile."""
    found: list[str] = []
    for block in blocks:
        kind = plan(block)
        if block.marker_error is not None:
            found.append(f"{block.id}: {block.marker_error}")
        elif kind == "unmarked":
            found.append(
                f"{block.id}: a ```{block.info} block the docs test neither runs nor skips: "
                "give it a language it runs (python, sh, console, json) or a marker "
                "('<!-- docs-test: skip: WHY -->' on the line before the fence)"
            )
        if block.output is not None and not (
            kind in ("script", "skip") or (kind == "shell" and len(shell_commands(block.text)) == 1)
        ):
            found.append(f"{block.id}: its 'It prints:' block is compared with nothing")
        if kind in ("skip", "fragment") and block.info in SCRIPT_INFOS:
            error = _compile_error(block.text)
            if error is not None:
                found.append(f"{block.id}: does not compile: {error}")
    return found


def _compiles(text: str, *, flags: int) -> bool:
    try:
        compile(text, "<example>", "exec", flags=flags, dont_inherit=True)
    except SyntaxError:
        return False
    return True


def _compile_error(text: str) -> str | None:
    import ast  # noqa: PLC0415

    try:
        compile(text, "<example>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError as error:
        return f"{error.msg} (line {error.lineno})"
    return None


def matches(shown: str, got: str) -> bool:
    """The output a page shows against what ran: exact, but for ``...``, which stands
    for any text (doctest's ELLIPSIS), timings and versions for instance."""
    flags = doctest.ELLIPSIS | doctest.DONT_ACCEPT_TRUE_FOR_1 | doctest.DONT_ACCEPT_BLANKLINE
    return doctest.OutputChecker().check_output(shown, got, flags)


def _environment() -> dict[str, str]:
    """As in a shell where .venv is active: its bin first on PATH (``mcpl-host``,
    ``python``), colour and width settings of the caller's terminal cleared."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NO_COLOR", "COLUMNS") and not k.startswith("PYTEST_")
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


ENV = _environment()


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        env=ENV,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def _said(process: subprocess.CompletedProcess[str]) -> str:
    return f"exit {process.returncode}\n--- stdout\n{process.stdout}--- stderr\n{process.stderr}"


def run_script(block: Block, cwd: Path) -> Failures:
    script = cwd / f"example_{block.line}.py"
    script.write_text(block.text)
    done = _run([sys.executable, str(script)], cwd)
    if done.returncode != 0:
        return [f"the script failed: {_said(done)}"]
    failures: Failures = []
    if block.output is not None and not matches(block.output.text, done.stdout):
        failures.append(f"it printed\n{done.stdout}\nnot what the page shows\n{block.output.text}")
    if block.in_docstring or (block.page in STDERR and STDERR[block.page] is None):
        if done.stderr:
            failures.append(f"stderr is not empty:\n{done.stderr}")
    elif block.page in STDERR and (wanted := STDERR[block.page]) not in done.stderr:
        failures.append(f"stderr lacks {wanted!r}:\n{done.stderr}")
    elif "Traceback" in done.stderr:
        failures.append(f"a traceback on stderr:\n{done.stderr}")
    return failures


def run_pytest(blocks: list[Block], cwd: Path) -> dict[str, Failures]:
    """A page's test modules, in one pytest run (starting pytest with pytest-trio costs
    more than the examples' tests), each judged by the lines that name its file."""
    files = {block.id: f"test_example_{block.line}.py" for block in blocks}
    for block in blocks:
        (cwd / files[block.id]).write_text(block.text)
    done = _run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-rA",
            "-p",
            "no:cacheprovider",
            "-W",
            "error",
            *files.values(),
        ],
        cwd,
    )
    summary = done.stdout.splitlines()
    verdicts: dict[str, Failures] = {}
    for block_id, name in files.items():
        passed = any(line.startswith(f"PASSED {name}::") for line in summary)
        failed = any(line.startswith((f"FAILED {name}", f"ERROR {name}")) for line in summary)
        # 0: all passed, 1: some failed; anything else stopped the run itself.
        ok = passed and not failed and done.returncode in (0, 1)
        verdicts[block_id] = [] if ok else [f"pytest failed: {_said(done)}"]
    return verdicts


def run_shell(block: Block, cwd: Path) -> Failures:
    commands = shell_commands(block.text)
    if not commands:
        return ["a shell block without a command"]
    # All at once: each waits mostly for a server to start; all waited for before any
    # verdict, so none is left running.
    running = [
        subprocess.Popen(
            ["bash", "-c", command],
            cwd=cwd,
            env=ENV,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in commands
    ]
    results = []
    for process in running:
        try:
            results.append(process.communicate(timeout=TIMEOUT))
        except subprocess.TimeoutExpired:
            process.kill()
            results.append(process.communicate())
    failures: Failures = []
    for command, process, (out, err) in zip(commands, running, results, strict=True):
        if process.returncode != 0:
            failures.append(f"$ {command}\nexit {process.returncode}\n{out}{err}")
        elif block.output is not None and not matches(block.output.text, out):
            failures.append(f"$ {command}\nprinted\n{out}\nnot\n{block.output.text}")
    return failures


def run_console(block: Block, cwd: Path) -> Failures:
    try:
        steps = console_steps(block.text)
    except ValueError as error:
        return [str(error)]
    if not steps:
        return ["a console block without a '$ ' command"]
    for command, shown in steps:  # in order: a command may need what one before did
        done = _run(["bash", "-c", command], cwd)
        if done.returncode != 0:
            return [f"$ {command}\n{_said(done)}"]
        if not matches(shown, done.stdout):
            return [f"$ {command}\nprinted\n{done.stdout}\nnot what the page shows\n{shown}"]
    return []


def check_config(block: Block, cwd: Path) -> Failures:
    name = block.marker.detail if block.marker and block.marker.kind == "file" else None
    path = cwd / (name or f"config_{block.line}.json")
    if name is None:
        path.write_text(block.text)
    try:
        load_config(path)
    except Exception as error:  # any failure is the finding
        return [f"load_config refused it: {type(error).__name__}: {error}"]
    return []


def check_tested_by(block: Block, cwd: Path) -> Failures:
    """A block another test runs with checks of its own: that test must exist and read
    the page."""
    test = ROOT / block.marker.detail  # type: ignore[union-attr]
    if not test.is_file():
        return [f"no test {block.marker.detail}"]  # type: ignore[union-attr]
    if block.source.name not in test.read_text():
        return [f"{block.marker.detail} never reads {block.source.name}"]  # type: ignore[union-attr]
    return []


def check_fragment(block: Block, cwd: Path) -> Failures:
    error = _compile_error(block.text)
    return [] if error is None else [f"does not compile: {error}"]


RUNNERS: dict[str, Callable[[Block, Path], Failures]] = {
    "script": run_script,
    "shell": run_shell,
    "console": run_console,
    "config": check_config,
    "fragment": check_fragment,
    "tested-by": check_tested_by,
}


def _is_config_file(block: Block) -> bool:
    return plan(block) == "file" and block.info in JSON_INFOS


BLOCKS = all_blocks()
RUNNABLE = [
    block for block in BLOCKS if plan(block) in (*RUNNERS, "pytest") or _is_config_file(block)
]


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Future[Failures]]]:
    # One working directory per page (per module for docstrings): the files its
    # `file:` blocks name are written there before anything runs.
    directories: dict[Path, Path] = {}
    for block in BLOCKS:
        if block.source not in directories:
            directories[block.source] = tmp_path_factory.mktemp(block.source.stem)
        if plan(block) == "file":
            (directories[block.source] / block.marker.detail).write_text(block.text)  # type: ignore[union-attr]
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures: dict[str, Future[Failures]] = {}
        test_modules: dict[Path, list[Block]] = {}
        for block in RUNNABLE:
            if plan(block) == "pytest":
                test_modules.setdefault(block.source, []).append(block)
                continue
            runner = RUNNERS["config" if _is_config_file(block) else plan(block)]
            futures[block.id] = pool.submit(runner, block, directories[block.source])
        for source, blocks in test_modules.items():
            for block in blocks:
                futures[block.id] = Future()
            run = pool.submit(run_pytest, blocks, directories[source])
            run.add_done_callback(partial(_hand_out, futures, [block.id for block in blocks]))
        yield futures


def _hand_out(
    futures: dict[str, Future[Failures]], ids: list[str], run: Future[dict[str, Failures]]
) -> None:
    """Each block's verdict from its page's pytest run."""
    for block_id in ids:
        error = run.exception()
        if error is not None:
            futures[block_id].set_exception(error)
        else:
            futures[block_id].set_result(run.result()[block_id])


def test_every_example_is_run_or_marked() -> None:
    assert problems(BLOCKS) == []
    kinds = {block.id: plan(block) for block in BLOCKS}
    # The examples users copy first run as scripts.
    assert kinds["mcpl_host/sync.py:3"] == "script"
    assert kinds["mcpl_host/aio.py:3"] == "script"
    assert sum(kind == "script" for kind in kinds.values()) >= 8


@pytest.mark.timeout(TIMEOUT * 2)
@pytest.mark.parametrize("block", RUNNABLE, ids=[block.id for block in RUNNABLE])
def test_example_runs_as_written(started: dict[str, Future[Failures]], block: Block) -> None:
    failures = started[block.id].result(timeout=TIMEOUT * 2)
    assert not failures, "\n\n".join(failures)


def test_an_unmarked_block_fails_the_check(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Run:\n\n```\nmcpl-host connect https://mcp.example.com/mcp\n```\n\n"
        "<!-- docs-test: skip -->\n```python\nprint(1)\n```\n\n"
        "<!-- docs-test: later: someday -->\n```sh\ntrue\n```\n\n"
        "<!-- docs-test: skip: a fragment -->\n```python\nawait x(\n```\n\n"
        "```sh\ntrue\ntrue\n```\n\nIt prints:\n\n```\nx\n```\n"
    )
    found = [line.split(": ", 1)[1] for line in problems(markdown_blocks(page))]
    assert len(found) == 5
    assert found[0].startswith("a ``` block the docs test neither runs nor skips")
    assert found[1] == "the docs-test marker 'skip' needs a detail: 'skip: ...'"
    assert found[2].startswith("unknown docs-test marker 'later'")
    assert found[3].startswith("does not compile")
    assert found[4] == "its 'It prints:' block is compared with nothing"


def test_docstring_blocks_are_scripts_or_fragments(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        '"""A module.\n\nFor example::\n\n    import sys\n    print(sys.argv)\n\n'
        "or, inside a task::\n\n    async with f() as g:\n        await g()\n\n"
        ".. docs-test: skip: needs a hosted server\n\nRemote::\n\n    print(1)\n\n"
        'A config::\n\n    {"mcpServers": {}}\n\n'
        "Synchronously::\n\n    conn = sync.Connection(target)\n\n"
        "Options::\n\n    timeout   seconds, 30 by default\n"
        '"""\n'
    )
    blocks = docstring_blocks(module)
    assert [(block.line, plan(block)) for block in blocks] == [
        (5, "script"),
        (10, "fragment"),
        (17, "skip"),
        # Python that starts with an assignment is found too (a JSON sketch, a table of
        # options are not Python).
        (25, "script"),
    ]


def test_shown_output_and_console_steps() -> None:
    assert matches("42\n", "42\n")
    assert not matches("42\n", "42.0\n")
    assert matches("timings  spawn ... ms\n42\n", "timings  spawn 2.4 ms\n42\n")
    assert console_steps("$ a\nout 1\nout 2\n$ b\n") == [("a", "out 1\nout 2\n"), ("b", "")]
    assert shell_commands("a \\\n  --b  # c\n\n# d\ne\n") == ["a --b  # c", "e"]


def test_tested_by_names_a_test_that_reads_the_page(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- docs-test: tested-by: tests/no_such_test.py -->\n```sh\ntrue\n```\n\n"
        "<!-- docs-test: tested-by: tests/test_architecture.py -->\n```sh\ntrue\n```\n"
    )
    first, second = markdown_blocks(page)
    assert check_tested_by(first, tmp_path) == ["no test tests/no_such_test.py"]
    assert check_tested_by(second, tmp_path) == ["tests/test_architecture.py never reads page.md"]
