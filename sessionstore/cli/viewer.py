"""Looking at sessions: `html` (one self-contained page), `serve` (every page, read-only), `export`."""

from __future__ import annotations

import ipaddress
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import click

from ..exports import EXPORT_FORMATS, export_session
from .app import SID, State, err, main, out, styled_line, user_errors


def _write_file(path: str, write: Callable[[TextIO], object]) -> int:
    """Write through a temporary file renamed into place: an error or Ctrl-C never leaves half a file.

    Returns the size written; an unwritable path is one line and exit status 2.
    """
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    except OSError as exc:
        styled_line(err, "red", "error:", f"cannot write {path}: {exc.strerror or exc}")
        raise SystemExit(2) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            write(fh)
        os.replace(tmp, target)
    except OSError as exc:
        styled_line(err, "red", "error:", f"cannot write {path}: {exc.strerror or exc}")
        raise SystemExit(2) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target.stat().st_size


def _size(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB" if n >= 1_000_000 else f"{n / 1000:.0f} kB"


@main.command()
@click.argument("session_id", type=SID)
@click.option("-o", "--output", required=True, metavar="FILE", help="Where to write the page.")
@click.pass_obj
def html(state: State, session_id: str, output: str) -> None:
    """Write a session as one self-contained HTML page.

    Every event, tool calls and results folded, compactions and markers with what they did,
    the context view at any version, and a token chart; it loads nothing from the network.

    Exit status: 0 written, 2 usage or operational error (unknown session, unwritable file).
    """
    from ..viewer import session_html

    with user_errors():
        page = session_html(state.store(), session_id)
    size = _write_file(output, lambda fh: fh.write(page))
    err.print(f"wrote {output} ({_size(size)})")


@main.command()
@click.argument("session_id", type=SID)
@click.option("--format", "fmt", type=click.Choice(EXPORT_FORMATS), default="jsonl", show_default=True,
              help="jsonl: every event, re-importable with `sessionstore import`; markdown: a readable "
                   "transcript; html: the page of `sessionstore html`.")
@click.option("-o", "--output", default=None, metavar="FILE", help="Write to FILE (default: standard output).")
@click.pass_obj
def export(state: State, session_id: str, fmt: str, output: str | None) -> None:
    """Export a session as jsonl, markdown or html.

    jsonl keeps every event byte for byte (ids, versions, payloads, times) after a header
    line with the session: `sessionstore import FILE` restores it into any store.

    Exit status: 0 written, 2 usage or operational error.
    """
    with user_errors():
        store = state.store()
        store.session(session_id)  # an unknown session fails before any output
        if output is None:
            if fmt == "html" and sys.stdout.isatty():
                raise click.UsageError("an html page is not for a terminal: give -o FILE (or pipe the output)")
            stream = sys.stdout
            if (stream.encoding or "").lower().replace("-", "") != "utf8" and hasattr(stream, "reconfigure"):
                stream.reconfigure(encoding="utf-8")  # markdown holds any text; a C locale must not refuse it
            try:
                count = export_session(store, session_id, fmt, stream)
                stream.flush()
            except BrokenPipeError:  # `export … | head`: the reader has what it wanted
                sys.stdout = None  # type: ignore[assignment]  (no second error at interpreter exit)
                return
            err.print(f"exported {count:,} events")
            return
        counted: list[int] = []
        size = _write_file(output, lambda fh: counted.append(export_session(store, session_id, fmt, fh)))
    err.print(f"wrote {output}: {counted[0]:,} events as {fmt} ({_size(size)})")


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but loopback shows your transcripts to the network.")
@click.option("--port", type=int, default=8765, show_default=True, help="Port (0: any free port).")
@click.pass_obj
def serve(state: State, host: str, port: int) -> None:
    """Serve the session list and every session's page, read-only, until Ctrl-C.

    Exit status: 0 stopped, 2 operational error (port taken, unknown database).
    """
    from ..viewer.server import make_server

    with user_errors():
        store = state.store()
        store.sessions(limit=1)  # a missing schema fails here, not on the first request
        try:
            server = make_server(store, host, port)
        except OSError as exc:
            styled_line(err, "red", "error:", f"cannot listen on {host}:{port}: {exc.strerror or exc}")
            raise SystemExit(2) from None
    if not _loopback(host):
        styled_line(err, "yellow", "warning:",
                    f"listening on {host}: anyone who can reach it can read every transcript")
    out.print(f"serving {store!r} at {server.url} (read-only; Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        err.print("stopped")
    finally:
        server.server_close()


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
