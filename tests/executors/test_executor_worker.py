"""The worker executor (JSON lines, one process per hook) and interlock.worker.run."""

from __future__ import annotations

import asyncio
import io
import json

import pytest

from fixtures.helpers import HERE, PY, invocation, wait_gone
from interlock import Engine, Hook, OnError, Verdict, block
from interlock.engine.errors import ContractError, HookCrash, HookTimeout
from interlock.executors import WorkerExecutor
from interlock.testing import RecordingSink, afire, fire
from interlock.worker import run

GUARD = [PY, str(HERE / "worker_guard.py")]


@pytest.fixture
async def workers():
    made: list[WorkerExecutor] = []

    def make(command=None, **kw) -> WorkerExecutor:
        kw.setdefault("timeout", 10.0)
        ex = WorkerExecutor(command or GUARD, hook_name="w", cwd=HERE, **kw)
        made.append(ex)
        return ex

    yield make
    for ex in made:
        await ex.aclose()


def call(ex, command: str, **kw):
    return ex(invocation(args={"command": command}, **kw))


async def test_answers_and_one_long_lived_process(workers):
    ex = workers()
    assert (await call(ex, "rm -rf /")).reason == "no rm -rf"
    assert await call(ex, "ls") is None
    asked = await call(ex, "dict")
    assert (asked.verdict, asked.reason) == (Verdict.ASK, "dict answers work")
    assert (await call(ex, "rewrite", modifies=True)).changes == {"args": {"command": "ls -la"}}
    first = (await call(ex, "pid")).context
    assert (await call(ex, "pid")).context == first == str(ex.pid)
    assert ex.starts == 1


async def test_a_dead_worker_fails_its_request_and_restarts(workers):
    ex = workers()
    old = (await call(ex, "pid")).context
    with pytest.raises(HookCrash, match="exited with code 3: dying on purpose"):
        await call(ex, "die")
    new = (await call(ex, "pid")).context
    assert new != old
    assert ex.starts == 2


@pytest.mark.slow
async def test_timeout_kills_and_restarts_the_worker(workers):
    ex = workers(timeout=0.5)
    old = int((await call(ex, "pid")).context)
    with pytest.raises(HookTimeout, match="its worker was killed"):
        await call(ex, "sleep 30")
    assert wait_gone(old)
    assert int((await call(ex, "pid")).context) != old


async def test_handler_errors_are_failures_and_the_worker_lives_on(workers):
    ex = workers()
    assert await call(ex, "ls") is None
    pid = ex.pid
    assert pid is not None
    with pytest.raises(HookCrash, match="RuntimeError: handler broke"):
        await call(ex, "raise")
    assert (await call(ex, "print")).context == "printed"  # print went to stderr
    assert ex.pid == pid
    assert ex.starts == 1


async def test_a_stray_line_breaks_the_protocol_and_the_worker_restarts(workers):
    ex = workers()
    with pytest.raises(ContractError, match="not an answer"):
        await call(ex, "garbage")
    assert (await call(ex, "rm -rf x")).verdict is Verdict.BLOCK
    assert ex.starts == 2


@pytest.mark.parametrize("cap", [100_000, 1_000])
async def test_an_answer_past_the_cap_is_a_failure(workers, cap):
    ex = workers(output_cap=cap)
    with pytest.raises(ContractError, match=f"longer than {cap} bytes"):
        await call(ex, "huge")
    assert await call(ex, "ls") is None


async def test_an_answer_whose_id_is_a_boolean_answers_no_request(workers):
    """``true == 1`` in Python, but a JSON ``true`` is no request id: the answer is
    refused, never applied to request 1 as its "no opinion"."""
    script = ("import sys, json\n"
              "for line in sys.stdin:\n"
              "    print(json.dumps({'id': True, 'decision': 'none'}), flush=True)\n")
    ex = workers([PY, "-c", script])
    with pytest.raises(ContractError, match="not an answer"):
        await call(ex, "rm -rf x")


async def test_concurrent_requests_are_matched_by_id(workers):
    ex = workers([PY, str(HERE / "worker_reorder.py")])
    a, b = await asyncio.gather(call(ex, "first"), call(ex, "second"))
    assert (a.context, b.context) == ("first", "second")


async def test_many_concurrent_requests(workers):
    ex = workers()
    commands = [f"rm -rf /{i}" if i % 3 == 0 else f"ls {i}" for i in range(60)]
    answers = await asyncio.gather(*(call(ex, c) for c in commands))
    for command, answer in zip(commands, answers, strict=True):
        assert (answer is not None) == command.startswith("rm")
    assert ex.starts == 1


async def test_a_missing_program_is_a_crash(workers):
    ex = workers(["/nonexistent/worker"])
    with pytest.raises(HookCrash, match="could not start"):
        await call(ex, "ls")


async def test_aclose_stops_the_process(workers):
    ex = workers()
    pid = int((await call(ex, "pid")).context)
    await ex.aclose()
    assert wait_gone(pid)
    assert ex.pid is None


@pytest.mark.slow
async def test_a_cancelled_request_that_never_answers_restarts_the_worker(workers):
    ex = workers(timeout=0.3)
    old = int((await call(ex, "pid")).context)
    task = asyncio.ensure_future(call(ex, "sleep 30"))
    await asyncio.sleep(0)  # let it send its request
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # past the request's own deadline the wedged worker is killed
    assert await asyncio.to_thread(wait_gone, old)


# -- through the engine -----------------------------------------------------------

def test_engine_with_a_worker_hook_sync_and_async():
    sink = RecordingSink()
    eng = Engine(sinks=[sink])
    ex = WorkerExecutor(GUARD, hook_name="guard", cwd=HERE, timeout=10)
    eng.register(Hook(name="guard", events=("before_tool_call",), executor=ex, kind="worker",
                      on_error=OnError.CLOSED))
    try:
        out = fire(eng, "before_tool_call", tool_name="terminal", args={"command": "rm -rf /"})
        assert out.blocked
        assert out.reason == "no rm -rf"
        crashed = fire(eng, "before_tool_call", tool_name="terminal", args={"command": "die"})
        assert crashed.blocked  # fail-closed
        assert "did not answer (crash)" in (crashed.reason or "")

        async def from_another_loop():
            return await afire(eng, "before_tool_call", tool_name="terminal",
                               args={"command": "rm -rf ~"})

        assert asyncio.run(from_another_loop()).blocked  # any loop, the same worker
        assert ex.starts == 2  # the first, and the restart after "die"
    finally:
        ex.close()
        eng.close()


@pytest.mark.parametrize("command", ["dict", "bad dict"])
def test_a_python_handler_and_a_worker_read_the_same_dict_alike(command):
    # One documented rule (docs/wire-contract.md): a dict answer is a wire answer,
    # whether a worker sends it or a Python handler returns it.
    same_as_worker_guard = {"dict": {"decision": "ask", "reason": "dict answers work"},
                            "bad dict": {"decision": "allow"}}

    def in_process(ev):
        return same_as_worker_guard[ev.args["command"]]

    outcomes = []
    for hook in (Hook(name="py", events=("before_tool_call",), fn=in_process),
                 Hook(name="py", events=("before_tool_call",), kind="worker",
                      executor=WorkerExecutor(GUARD, hook_name="py", cwd=HERE, timeout=10))):
        sink = RecordingSink()
        eng = Engine(sinks=[sink])
        eng.register(hook)
        try:
            out = fire(eng, "before_tool_call", tool_name="terminal", args={"command": command})
            outcomes.append((out.verdict, out.reason,
                             [(f.mode.value, "unknown decision 'allow'" in f.error)
                              for f in sink.failures]))
        finally:
            eng.close()
            if hook.executor is not None:
                hook.executor.close()
    assert outcomes[0] == outcomes[1]
    if command == "dict":
        assert outcomes[0] == (Verdict.ASK, "dict answers work", [])
    else:
        assert outcomes[0][2] == [("contract", True)]


# -- interlock.worker.run ---------------------------------------------------------

def test_run_answers_with_the_request_id_whatever_the_handler_returns():
    """A handler's dict holding its own "id" (say, copied from the payload) must not
    route its answer to another request."""
    stdin = io.BytesIO(b'{"id": 7, "payload": {}}\n')
    stdout = io.BytesIO()
    run(lambda request: {"id": 3, "decision": "block", "reason": "no"}, stdin=stdin,
        stdout=stdout)
    (answer,) = [json.loads(x) for x in stdout.getvalue().splitlines()]
    assert answer == {"id": 7, "decision": "block", "reason": "no"}


def test_run_answers_each_line_with_its_id():
    async def later(request):
        await asyncio.sleep(0)
        return {"context": "async works"}

    def handler(request):
        cmd = request["payload"]["cmd"]
        if cmd == "block":
            return block("nope")
        if cmd == "dict":
            return {"decision": "ask"}
        if cmd == "raise":
            raise ValueError("bad")
        if cmd == "async":
            return later(request)
        if cmd == "wrong":
            return 42
        return None

    lines = [json.dumps({"id": i, "payload": {"cmd": c}})
             for i, c in enumerate(["block", "dict", "none", "raise", "async", "wrong"], 1)]
    stdin = io.BytesIO(("\n".join([lines[0], "garbage", "", *lines[1:]]) + "\n").encode())
    stdout = io.BytesIO()
    run(handler, stdin=stdin, stdout=stdout)
    answers = [json.loads(x) for x in stdout.getvalue().splitlines()]
    assert answers == [
        {"id": 1, "decision": "block", "reason": "nope"},
        {"id": 2, "decision": "ask"},
        {"id": 3},
        {"id": 4, "error": "ValueError: bad"},
        {"id": 5, "context": "async works"},
        {"id": 6, "error": "TypeError: a worker handler returns None, a Decision or a dict, "
                           "not int"},
    ]
