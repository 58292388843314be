"""Retention as a policy (`store.retain`, `sessionstore retain`): the sessions past an age, in a
metadata selection, beyond the newest N, are erased whole with their parts as `erase` erases
them; forks keep their own events; every chain still verifies; a dry run lists exactly what a
run erases; a session written to during the run is kept; nothing goes that no policy names."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import sessionstore as ss
from sessionstore import InvalidPolicy, RetentionPolicy, SessionErased, SessionStore
from sessionstore.cli import main
from sessionstore.repository import BEGIN, Program
from sessionstore.retention import Candidate, choose

from .test_audit import door  # noqa: F401 (both doors)

NOW = datetime.now(timezone.utc)
DAY = timedelta(days=1)


def test_a_policy_must_name_what_goes_and_chooses_by_last_event() -> None:
    for bad in ({}, {"keep_last": 0}, {"where": {"user": "ann"}}, {"older_than": timedelta(0)},
                {"older_than": -DAY}, {"older_than": 90}, {"keep_last": -1}, {"keep_last": True},
                {"older_than": DAY, "where": ["user", "ann"]}, {"older_than": DAY, "reason": " "}):
        with pytest.raises(InvalidPolicy):
            RetentionPolicy(**bad)
    old = [Candidate(f"s{i}", 1, NOW - (200 + i) * DAY, {}) for i in range(3)]  # s0 newest of the old
    fresh = Candidate("new", 1, NOW - DAY, {})
    by_age = RetentionPolicy(older_than=90 * DAY)
    assert [c.session_id for c in choose([fresh, *old], by_age, NOW)] == ["s2", "s1", "s0"]  # oldest first
    assert [c.session_id for c in choose([*old, fresh], RetentionPolicy(older_than=90 * DAY, keep_last=2), NOW)] \
        == ["s2", "s1"]  # the newest two (new, s0) stay however old
    assert [c.session_id for c in choose([*old, fresh], RetentionPolicy(keep_last=3), NOW)] == ["s2"]
    assert choose([fresh], by_age, NOW) == []
    assert by_age.describe() == "retention: older than 90d"
