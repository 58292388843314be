"""The projection: a pure fold from a session's events to the context its model sees.

`fold` decides what is in the view (summary, scratchpad, kept events, markers applied);
`render` turns it into valid provider requests and reports every repair (`blocks`: an item as
provider blocks; `parts`: what a rendered part is; `responses`: OpenAI's Responses items);
`texts` holds what both add and its cost; `context` runs them (`project`) and holds the view
they return, whose token estimates `calibration` learns. Read it bottom up, in `context`'s order.
"""

from .context import ContextView, advance, project
from .usage import reported_tokens
from .render import render_anthropic, render_openai
from .responses import render_responses
from .view import Diagnostic, ProjectionInput, UsageAnchor, ViewItem, input_from_events, named_versions

__all__ = ["ContextView", "advance", "Diagnostic", "ProjectionInput", "UsageAnchor", "ViewItem", "input_from_events",
           "named_versions", "project", "render_anthropic", "render_openai", "render_responses", "reported_tokens"]
