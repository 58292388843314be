"""Self-calibrating token estimates (issue 7, item 4): to be filled in.

`calibration_details(view)` is what a compaction records about the view it replaces, so that
views after it — which no longer hold the usage-bearing events — can still be estimated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .view import ContextView


def calibration_details(view: ContextView) -> dict[str, Any]:
    """Entries for a compaction's `details`, learned from `view` (none yet)."""
    return {}
