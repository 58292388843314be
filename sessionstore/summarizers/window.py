"""What a summariser knows of its own model's context window, and how it learned it.

A summary request that does not fit the summariser's window fails (a 2,048-token llama.cpp
model answers 400 to an 8,000-token merge), and the session's window says nothing about the
summariser's: compaction must plan every request to fit the model that reads it. The window
comes from, in this order of trust:

- ``declared``: the user says it (``context_window=`` on the summariser, ``--summarizer-window``);
- ``server``: the server says it — vLLM's ``GET /v1/models`` (``max_model_len``), llama.cpp's
  ``GET /props`` (``n_ctx``), Ollama's ``POST /api/show`` (``num_ctx``) and ``GET /api/ps``
  (``context_length`` of a loaded model), Anthropic's Models API (``max_input_tokens``);
- ``error``: a context-length error that states the maximum ("maximum context length is 2048
  tokens", llama.cpp's ``n_ctx``, Anthropic's "… > 200000 maximum"); the summariser remembers it.

The model counts in its own tokens and the store in its counter's: a window the server states
is planned at `MARGIN` of its size; an error that also states how many tokens the request was
gives the ratio between the two counts, and planning uses it from then on.

Pure functions over parsed JSON and message text; the summarisers do the HTTP.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

Source = Literal["declared", "server", "error"]

# The share of a window stated in the model's tokens that planning fills while the ratio of the
# model's count to the store's is unknown (tokenizers differ by 10–20% on code and prose).
MARGIN: Final = 0.85
# The share of a window measured in the store's own units (the ratio learned) that planning fills.
MEASURED_MARGIN: Final = 0.95
# Ollama cuts a prompt longer than its window silently (no error to learn from): without a
# `num_ctx` or a loaded model's context length, plan for its smallest default.
OLLAMA_DEFAULT_WINDOW: Final = 2048


@dataclass(frozen=True, slots=True)
class ModelWindow:
    """A model's context window (`tokens`, in the model's own tokens) and where it came from.

    `ratio`: the model's tokens per token of the store's estimate of a request, when an error
    stated both (None until then)."""

    tokens: int
    source: Source
    detail: str = ""
    ratio: float | None = None

    def planning_tokens(self) -> int:
        """The window in the store's own units, with a margin: what compaction plans requests in."""
        if self.ratio:
            return max(1, int(self.tokens / self.ratio * MEASURED_MARGIN))
        return max(1, int(self.tokens * MARGIN))

    def as_details(self) -> dict[str, Any]:
        """As recorded with a compaction (`details.summarizer_window`), so a replay knows it."""
        return {"tokens": self.tokens, "source": self.source, "detail": self.detail,
                **({"ratio": round(self.ratio, 3)} if self.ratio else {}),
                "planned_tokens": self.planning_tokens()}


# --------------------------------------------------------------------------- from an error

_NUMBER = r"(\d[\d,]*)"
# OpenAI, vLLM, llama-cpp-python: "This model's maximum context length is 2048 tokens. However, you
# requested 2581 tokens (2531 in the messages, 50 in the completion)" / "your messages resulted in N
# tokens" / vLLM ≥ 0.6: "… is 2048 tokens and your request has 1500 input tokens".
_OPENAI_WINDOW: Final = re.compile(r"maximum context length is " + _NUMBER + r" tokens", re.IGNORECASE)
# The request's input, the most precise wording first ("requested N" counts the completion too).
_OPENAI_INPUTS: Final = tuple(re.compile(pattern, re.IGNORECASE) for pattern in (
    _NUMBER + r" in the messages", r"resulted in " + _NUMBER + r" tokens", r"request has " + _NUMBER + r" input tokens",
    r"requested " + _NUMBER + r" tokens"))
_OPENAI_OUTPUT: Final = re.compile(_NUMBER + r" in the completion", re.IGNORECASE)
# Anthropic: "prompt is too long: 212000 tokens > 200000 maximum"; "input length and `max_tokens`
# exceed context limit: 188240 + 21333 > 200000".
_TOO_LONG: Final = re.compile(_NUMBER + r"\s*tokens?\s*>\s*" + _NUMBER)
_EXCEEDS: Final = re.compile(_NUMBER + r"\s*\+\s*" + _NUMBER + r"\s*>\s*" + _NUMBER)


@dataclass(frozen=True, slots=True)
class StatedLimits:
    """What a context-length error says: the model's window, the request's input tokens and the
    output it reserved, each when it says it."""

    window: int | None = None
    tokens: int | None = None
    output: int | None = None

    @property
    def input_limit(self) -> int | None:
        """The input that would have fitted beside the same output reservation."""
        if self.window is None:
            return None
        return self.window - (self.output or 0)


def _int(text: str | None) -> int | None:
    return int(text.replace(",", "")) if text else None


def stated_limits(message: str, body: Any = None) -> StatedLimits:
    """The figures a provider's context-length error states (llama.cpp's JSON fields, else the
    message's words)."""
    if isinstance(body, Mapping):
        error = body.get("error") if isinstance(body.get("error"), Mapping) else body
        if isinstance(error.get("n_ctx"), int):  # llama.cpp's exceed_context_size_error
            tokens = error.get("n_prompt_tokens")
            return StatedLimits(error["n_ctx"], tokens if isinstance(tokens, int) else None)
    if match := _EXCEEDS.search(message):
        return StatedLimits(_int(match.group(3)), _int(match.group(1)), _int(match.group(2)))
    if match := _TOO_LONG.search(message):
        return StatedLimits(_int(match.group(2)), _int(match.group(1)))
    if match := _OPENAI_WINDOW.search(message):
        tokens = next((_int(m.group(1)) for pattern in _OPENAI_INPUTS if (m := pattern.search(message))), None)
        output = _OPENAI_OUTPUT.search(message)
        return StatedLimits(_int(match.group(1)), tokens, _int(output.group(1)) if output else None)
    return StatedLimits()


def learned_from_error(window: int | None, tokens: int | None, estimated: int | None,
                       detail: str) -> ModelWindow | None:
    """The window an overflow teaches: its size (`window`, the model's tokens), and the ratio of
    the model's count of the request (`tokens`) to the store's estimate of it (`estimated`), when
    both are known. A model that counts fewer tokens than the store leaves the store's estimates
    as they are (ratio ≥ 1): they are then a bound."""
    if not window:
        return None
    ratio = max(1.0, tokens / estimated) if tokens and estimated else None
    return ModelWindow(window, "error", detail, ratio)


# --------------------------------------------------------------------------- from the server

_MODEL_WINDOW_KEYS: Final = ("max_model_len", "context_length", "max_context_length", "context_window")


def served_models(payload: Any) -> list[Mapping[str, Any]]:
    """The model entries of a ``GET /v1/models`` answer (``{"data": [...]}``)."""
    data = payload.get("data") if isinstance(payload, Mapping) else None
    return [m for m in data if isinstance(m, Mapping) and isinstance(m.get("id"), str)] if isinstance(data, list) \
        else []


def window_from_models(payload: Any, model: str) -> int | None:
    """vLLM (``max_model_len``), LM Studio and routers (``context_length``…) in ``/v1/models``."""
    for entry in served_models(payload):
        if entry["id"] == model:
            for key in _MODEL_WINDOW_KEYS:
                if isinstance(entry.get(key), int) and entry[key] > 0:
                    return int(entry[key])
    return None


def window_from_llamacpp_props(payload: Any) -> int | None:
    """llama.cpp's ``GET /props``: the slot's ``n_ctx`` (in ``default_generation_settings``)."""
    if not isinstance(payload, Mapping):
        return None
    settings = payload.get("default_generation_settings")
    for place in (settings, payload):
        if isinstance(place, Mapping) and isinstance(place.get("n_ctx"), int) and place["n_ctx"] > 0:
            return int(place["n_ctx"])
    return None


def window_from_ollama(show: Any, running: Any, model: str) -> int | None:
    """Ollama: a loaded model's ``context_length`` (``GET /api/ps``), else the ``num_ctx`` its
    Modelfile sets (``POST /api/show``), else `OLLAMA_DEFAULT_WINDOW` — never the model's trained
    length, which Ollama does not serve unless told to."""
    for entry in (running.get("models") or []) if isinstance(running, Mapping) else []:
        if isinstance(entry, Mapping) and model in (entry.get("name"), entry.get("model")) and \
                isinstance(entry.get("context_length"), int):
            return int(entry["context_length"])
    if not isinstance(show, Mapping):
        return None
    match = re.search(r"^num_ctx\s+(\d+)", str(show.get("parameters") or ""), re.MULTILINE)
    return int(match.group(1)) if match else OLLAMA_DEFAULT_WINDOW
