"""Summarisers: the protocol, the offline extractive default, and Anthropic's models."""

from .base import ContextOverflow, SummarizerError, Summarizer, SummaryRequest, is_context_overflow
from .sections import SECTIONS, format_sections, parse_sections

__all__ = ["SECTIONS", "ContextOverflow", "Summarizer", "SummarizerError", "SummaryRequest", "format_sections",
           "is_context_overflow", "parse_sections"]
