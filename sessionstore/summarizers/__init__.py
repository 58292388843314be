"""Summarisers: the protocol, the offline extractive default, Anthropic's and OpenAI-compatible
models (`anthropic.py`, `openai.py`), the providers' own compaction as level 3
(`openai_compact.py`, `anthropic_compact.py`, sharing `compacting.py`), the drivers that answer compaction planning's requests
(blocking or asyncio), the reading of any agent's summary into our sections, and what the user
typed as opposed to what agents inject."""

from .base import (AsyncSummarizer, ContextOverflow, SummarizerError, Summarizer, SummaryBatch, SummaryRequest,
                   is_context_overflow)
from .drive import aanswer, adrive, answer, drive
from .parse import parse_sections
from .sections import SECTIONS, format_sections
from .typed import typed_messages, typed_text

__all__ = ["SECTIONS", "AsyncSummarizer", "ContextOverflow", "Summarizer", "SummarizerError", "SummaryBatch",
           "SummaryRequest", "aanswer", "adrive", "answer", "drive", "format_sections", "is_context_overflow",
           "parse_sections", "typed_messages", "typed_text"]
