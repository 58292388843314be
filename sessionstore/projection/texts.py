"""The texts the projection adds around the events, and what each costs in our count.

The fold wraps a summary and a scratchpad; the renderer acknowledges a summary, answers an
unanswered call with a placeholder and puts a user message first; every message costs a few
tokens of framing. The fold counts these (`fold.count_view_tokens`), the renderer writes them
and the calibration's forward pass charges the framing again, so they live here, below all
three. The costs are constants (checked against tiktoken in the tests) so that no projection
ever tokenizes.
"""

from __future__ import annotations

from typing import Final

SUMMARY_PREFIX: Final = ("This session continues an earlier conversation that was compacted to fit the context "
                         "window. The summary below covers everything before the messages that follow.")
SUMMARY_WRAPPER_TOKENS: Final = 34
SCRATCHPAD_WRAPPER_TOKENS: Final = 9
# Role markers and separators cost a few tokens a message on every provider.
MESSAGE_OVERHEAD_TOKENS: Final = 4
# The assistant's reply to a summary followed by the user's words (roles must alternate).
ACK_TEXT: Final = "Understood. I have the summary of the earlier work and will continue from there."
ACK_TOKENS: Final = 17
# The result sent for a call whose result was never recorded.
SYNTHETIC_RESULT_TEXT: Final = "[No result was recorded for this tool call.]"
SYNTHETIC_RESULT_TOKENS: Final = 10
# The user message put before a view that would start with the assistant.
LEADING_USER_TEXT: Final = "[The recorded conversation continues below.]"


def summary_text(summary: str) -> str:
    return f"{SUMMARY_PREFIX}\n\n<summary>\n{summary}\n</summary>"


def scratchpad_text(text: str) -> str:
    return f"<scratchpad>\n{text}\n</scratchpad>"
