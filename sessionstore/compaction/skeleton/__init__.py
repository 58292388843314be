"""Code skeletons: the outline of a source file with every body elided (compaction level 2).

A file that an agent read many turns ago still costs its full size on every request. What the
model usually still needs from it is its shape: imports, types, classes and signatures. The
skeleton keeps that, at a fraction of the tokens, and keeps the original line numbers so that
the model can ask for a precise range again when it needs a body.

Outline format, one line per declaration (a real TypeScript example)::

    1│ /** AgentSession - Core abstraction for agent lifecycle and session management. … */
    16│ import type { Agent, AgentEvent } from "@mariozechner/pi-agent-core"; import { getModelsPath } from "../config.js"
    29│ export type AgentEventListener = (event: AgentEvent) => void;  // Listener function for agent events
    90│ export class AgentSession
    91│   readonly agent: Agent; readonly sessionManager: SessionManager
    100│   private _eventListeners: AgentEventListener[] = []
    111│   constructor(config: AgentSessionConfig) { … }
    128│   subscribe(listener: AgentEventListener): () => void { … }  // Subscribe to agent events.

and in Python::

    112│ class Event(Base):  # One immutable event.
    117│   kind: str; payload: dict = field(default_factory=dict)
    120│   @property
    121│   async def size(self, *, deep: bool = False) -> int: …  # Bytes on disk.

- `N│ ` starts every line: N is the number of the line the item starts on in the original file
  (no padding). A read that started mid-file passes `first_line`, and numbers count from it.
- Two spaces per level after the bar show nesting: members under their class, interface,
  struct, impl block, namespace or module. A container prints its header only; nothing
  closes it.
- Bodies become `{ … }` (brace languages), ` …` after the colon (Python) or `do … end`
  (Elixir). Initialisers longer than SHORT_VALUE_CHARS, or on several lines, become `…`.
- A signature over several lines is collapsed onto one; comments inside it are dropped.
- Decorators, annotations, attributes and `template <…>` on lines of their own keep a line.
- A doc comment or docstring is reduced to its first sentence, appended to its declaration's
  line as a comment (`// …`, `# …`); a file's or module's own doc keeps a line of its own.
  Other comments are dropped.
- Consecutive one-line fields, variables, imports or enum constants at one level are joined
  on one line (`; ` between them), numbered by the first: a line number costs ~3 tokens.

A read cut out of the middle of a file is parsed inside made-up context (see Fragment) so
that its declarations are found; its leading half-body is dropped. Everything here is a pure
function of its input: no I/O. Parsers are created once per grammar and cached.

Layout, arrows pointing one way: `api` (the entry points) → `braces`, `scripting` (the handlers
of the brace and the script languages, one outliner per family) → `outliner` (the walk every
language shares) → `nodes` (what a syntax node says), `text` (one-line signatures, doc
summaries); `api` → `repair` (parsing, fragment repair); `api`, `scripting` → `languages` (the
tables, plain data); all → `model` (the types).
"""

from .api import detect_language, skeleton
from .languages import SUPPORTED_LANGUAGES, TEXT_EXTENSIONS
from .model import Skeleton, Symbol

__all__ = [
    "SUPPORTED_LANGUAGES",
    "TEXT_EXTENSIONS",
    "Skeleton",
    "Symbol",
    "detect_language",
    "skeleton",
]
