"""One JSON request to a server on 127.0.0.1, for the tests that run `serve`."""

from __future__ import annotations

import http.client
import json
from typing import Any


def request(port: int, method: str, path: str, body: Any = None,
            token: str | None = None) -> tuple[int, Any]:
    """(status, decoded JSON body or None)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body).encode(),
                     headers=headers)
        resp = conn.getresponse()
        text = resp.read()
    finally:
        conn.close()
    return resp.status, json.loads(text) if text else None
