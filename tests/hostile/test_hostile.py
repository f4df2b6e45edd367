"""Issue 17's table, row by row: a hostile server (``servers/``, written as an attacker
would, standard library only) against a measuring host (``host.py``), each in a
subprocess of its own, at a size small enough for a test and large enough that a host
without the bound clearly breaks it. Each test asserts the row's bounds (``rows.py``):
live tasks, RSS growth, file descriptors, log lines, and that the host's own call was
answered or failed with a typed error within its timeout. scripts/hostile.py runs the
same rows at the issue's sizes and prints the figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .rows import ROWS, run

pytestmark = pytest.mark.hostile


def check(name: str, **params: Any) -> None:
    # Within the suite's 30 s deadline per test, so a hung host fails with its stderr.
    figures = run(ROWS[name], "small", params=params, timeout=25)
    failures = ROWS[name].judge(figures)
    for record in figures["calls"].values():
        record.pop("traceback", None)  # shown below only as the failures say
    assert not failures, "\n".join([*failures, json.dumps(figures, indent=1)[:3000]])


def test_a_deaf_server_flooding_roots_requests_is_bounded() -> None:
    check("deaf-flood-roots")


def test_a_deaf_server_flooding_pings_is_bounded() -> None:
    check("deaf-flood-ping")


def test_a_deaf_server_flooding_requests_with_a_null_id_is_bounded() -> None:
    check("deaf-flood-null")


def test_a_deaf_websocket_server_flooding_roots_requests_is_bounded() -> None:
    check("deaf-flood-ws")


def test_pings_before_the_initialize_answer_are_bounded() -> None:
    check("preinit-pings")


def test_a_batch_of_invalid_entries_costs_bounded_memory_and_logs() -> None:
    check("batch-invalid")


def test_a_batch_of_pings_costs_bounded_memory_tasks_and_logs() -> None:
    check("batch-pings")


def test_an_array_under_a_revision_without_batches_is_refused_cheaply() -> None:
    check("array-refused")


def test_the_cli_decodes_a_huge_page_within_a_multiple_of_its_size() -> None:
    check("big-page-cli")


def test_huge_pages_through_the_manager_cost_a_multiple_of_their_size() -> None:
    check("big-pages-manager")


def test_http_requests_that_time_out_leave_no_descriptor_open() -> None:
    check("http-timeouts")


def test_http_target_timeout_bounds_the_wait_for_response_headers() -> None:
    check("http-headers")


def test_http_get_stream_reopening_is_paced_despite_retry_0() -> None:
    check("http-retry0")


def test_notify_and_set_roots_to_a_server_that_stopped_reading_time_out() -> None:
    check("deaf-notify")


def test_huge_integer_ids_and_deep_nesting_are_handled_quietly() -> None:
    check("bad-numbers")


def test_invalid_utf8_in_a_2024_11_05_batch_entry_spares_the_others() -> None:
    check("bad-utf8-2024")


def test_invalid_utf8_in_a_2025_03_26_batch_entry_spares_the_others() -> None:
    check("bad-utf8-2025")


def test_a_lone_surrogate_in_a_result_settles_the_call_at_once() -> None:
    check("surrogate")


def test_an_sse_event_past_the_bound_fails_its_request_at_once() -> None:
    check("http-big-event")


def test_a_non_ascii_session_id_is_a_typed_error() -> None:
    check("http-session-id")


def test_unmatched_responses_cost_a_bounded_number_of_log_lines() -> None:
    check("unmatched-responses")


def test_host_busy_refusals_cost_a_bounded_number_of_log_lines() -> None:
    check("unmatched-busy")


def test_the_cli_renders_results_of_the_wrong_shape() -> None:
    check("wrong-shapes")


# The same servers, not pushed: a host that keeps up stays within every bound the
# judges apply, so a failure above is the host's, not the harness's.
HARMLESS = {
    "deaf-flood-roots": {"count": 10},
    "batch-invalid": {"entries": 10},
    "unmatched-responses": {"count": 10},
    "http-timeouts": {"count": 2},
}


@pytest.mark.parametrize("name", sorted(HARMLESS))
def test_the_bounds_hold_for_the_same_servers_at_a_harmless_size(name: str) -> None:
    check(name, **HARMLESS[name])


def test_every_row_has_a_test() -> None:
    tested = {
        name.removeprefix("check(").strip('")')
        for name in Path(__file__).read_text().split()
        if name.startswith('check("')
    }
    assert tested == set(ROWS)
