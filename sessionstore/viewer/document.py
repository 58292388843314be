"""The HTML document around every page of the viewer: escaping, the stylesheet and script, the
Content-Security-Policy that allows exactly them.

Apart from the pages (page.py, listing.py) and what they render (transcript.py, content.py)
because all of them escape through `esc` and `body_text`, and the server (server.py) sends the
same policy as a header: one place decides what a page may load and run.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any


def esc(value: object) -> str:
    """For attributes and anything short: quotes escaped too."""
    return html.escape(str(value), quote=True)


def body_text(text: str) -> str:
    """For element content only (the bulk of a page: outputs, JSON): ``&``, ``<`` and ``>`` escaped,
    which is all element content needs; quotes stay as they are (JSON would double in size)."""
    return html.escape(text, quote=False)


@cache
def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def content_security_policy() -> str:
    """The page's own script and stylesheet, data: images; nothing else (no network, no other script)."""
    return (f"default-src 'none'; script-src '{_sha256(_asset('page.js'))}'; "
            f"style-src '{_sha256(_asset('page.css'))}'; img-src data:; base-uri 'none'; form-action 'none'")


def document(title: str, body: str, *, body_class: str = "", data: Mapping[str, Any] | None = None) -> str:
    """A complete HTML document with the stylesheet, the CSP and (with `data`) the script."""
    script = ""
    if data is not None:
        blob = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e")
        script = (f'<script type="application/json" id="timeline-data">{blob}</script>\n'
                  f"<script>{_asset('page.js')}</script>\n")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f'<meta http-equiv="Content-Security-Policy" content="{esc(content_security_policy())}">\n'
            '<meta name="referrer" content="no-referrer">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            '<meta name="color-scheme" content="light dark">\n'
            f"<title>{esc(title)}</title>\n<style>{_asset('page.css')}</style>\n</head>\n"
            f'<body class="{esc(body_class)}">\n{body}\n{script}</body>\n</html>\n')
