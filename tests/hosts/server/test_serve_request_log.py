"""`interlock serve --log-format text|json`: one line per request, with the decision."""

from __future__ import annotations

import asyncio
import io
import json

import pytest

from helpers.serve import Serve, wait_for
from interlock.hosts.server.request_log import RequestLog

pytestmark = pytest.mark.e2e

BLOCK = "#!/bin/sh\ncat >/dev/null\necho '{\"decision\": \"block\", \"reason\": \"no rm\"}'\n"
CONFIG = ('[[hooks]]\nname = "guard"\nevents = ["before_tool_call"]\n'
          'command = "./block.sh"\n')


@pytest.mark.e2e
def test_serve_logs_each_request_with_its_decision_as_json(tmp_path) -> None:
    serve = Serve(tmp_path, CONFIG, files={"block.sh": BLOCK},
                  extra=["--log-format", "json", "--no-console"]).start()
    try:
        out = serve.event({"tool_name": "terminal", "args": {"command": "rm -rf /"}})
        assert out["decision"] == "block"
        line = wait_for(lambda: next((x for x in serve.log if '"/v1/events/' in x), None),
                        what="a request log line")
        record = json.loads(line)
        assert record["method"] == "POST"
        assert record["path"] == "/v1/events/before_tool_call"
        assert record["status"] == 200
        assert record["decision"] == "block"
        assert record["hook"] == "project:guard"
        assert record["client"].startswith("127.0.0.1:")
        assert all(serve.token not in x for x in serve.log)
        assert all("rm -rf" not in x for x in serve.log)  # never a body
    finally:
        serve.stop()


async def _app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b'{"decision": "al', "more_body": True})
    await send({"type": "http.response.body", "body": b'low", "hook": null}'})


def test_the_text_format_is_one_line_per_request() -> None:
    stream = io.StringIO()
    log = RequestLog(_app, "text", stream)
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/bridge",
             "query_string": b"token=secret", "client": None}
    asyncio.run(log(scope, None, send))
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    assert " POST /v1/bridge 200 " in lines[0]
    assert lines[0].endswith(" unix allow")
    assert "secret" not in lines[0]
    assert len(sent) == 3  # the response goes through untouched


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown log format"):
        RequestLog(_app, "xml")
