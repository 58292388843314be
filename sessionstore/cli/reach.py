"""Before a command asks a model server for summaries: is anything listening there?

A refused connection would otherwise cost the SDK's whole backoff (about 8 s) before it ends
in "Connection error."; a local server that is not running (a wrong port, vLLM not started)
is the usual cause, so for a server on this machine or at an IP address the command knocks
first and stops at once, naming the URL and the model. Anything but a refusal (a timeout, a
proxy in the way, a name to resolve) is left to the SDK and its retries.
"""

from __future__ import annotations

import ipaddress
import socket
import urllib.request
from typing import Any, Final
from urllib.parse import urlsplit

from .app import CliError

KNOCK_SECONDS: Final = 1.0


def check_reachable(summarizer: Any) -> None:
    """A `CliError` naming the server and the model when the summariser's server refuses connections."""
    model = getattr(summarizer, "sdk", summarizer)  # a provider's compaction speaks through its SDK summariser
    client = getattr(model, "client", None)
    url = str(getattr(client, "base_url", "") or "")
    if url and refused(url):
        where = model.where() if hasattr(model, "where") else url
        raise CliError(f"cannot reach the summariser: {where} refuses connections (nothing listens there): is the "
                       "server running, and are --base-url and its port right? Nothing was sent")


def refused(url: str) -> bool:
    """Whether `url`'s host, when it is this machine or an IP address (no name to resolve) and no
    proxy stands in between, refuses a TCP connection on its port."""
    parts = urlsplit(url)
    host = parts.hostname
    if host is None or not _literal(host):
        return False
    if urllib.request.getproxies_environment() and not urllib.request.proxy_bypass_environment(host):
        return False
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        socket.create_connection((host, port), timeout=KNOCK_SECONDS).close()
    except ConnectionRefusedError:
        return True
    except (OSError, ValueError):
        return False
    return False


def _literal(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
