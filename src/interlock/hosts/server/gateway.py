"""The chat gateway: people talk to the reference agent through the server.

``POST /v1/chat`` and the WebSocket ``/v1/chat/ws`` carry the same messages
(``{"channel", "text", "message_id"?}``); each (sender, channel) pair has one
agent session, run with the server's engine. One message goes through:

1. ``message_received`` (gate): ``skip`` means no reply, ``modify`` rewrites
   the text the agent sees, ``block`` sends the reason back to the sender;
2. the agent's run (a text starting with ``/`` is a slash command);
3. ``before_message_send`` (gate): ``modify`` rewrites the reply, ``block``
   withholds it (the sender is told it was withheld, and why);
4. the reply is sent, then ``message_sent`` (observe).

``gateway_start`` and ``gateway_stop`` fire with the server's life (the
Starlette lifespan calls :meth:`Gateway.start` and :meth:`Gateway.stop`).

The sender is the one bound to the bearer token (``TokenInfo.sender_id``),
never a field of the message: a body naming a sender is refused.

A tool call that needs a person's permission becomes a ``question`` sent to
the sender, answered over the WebSocket (``{"type": "answer", "id",
"allow"}``) or by ``POST /v1/chat/answer``; no answer within ``ask_timeout``
is a denial. Reply text is streamed (WebSocket ``delta`` frames) only while
no hook is on ``after_llm_call`` or ``before_message_send``: otherwise the
sender sees the text once those hooks have passed it.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from interlock.agent.commands import CommandContext, CommandRegistry
from interlock.agent.loop import BUFFERING_EVENTS, Agent, RunStopped
from interlock.agent.options import AgentOptions, PermissionPrompt
from interlock.agent.permissions import PermissionRule
from interlock.agent.scope import ReadScope
from interlock.engine.decisions import Verdict
from interlock.engine.dispatch import Engine
from interlock.engine.logs import logger
from interlock.engine.redact import redact, redact_data
from interlock.models.tooling import CommandSpec, ModelProvider

if TYPE_CHECKING:
    pass

log = logger(__name__)

ModelFactory = Callable[[str, str], ModelProvider]
"""``factory(sender_id, channel)`` -> the model of a new chat session."""

MESSAGE_FIELDS = frozenset({"channel", "text", "message_id"})
MAX_CHANNEL = 200
MAX_TEXT = 100_000
TERMINAL = frozenset({"reply", "skipped", "blocked", "withheld", "stopped", "error"})
"""Frame types that end one message's exchange."""


class BadMessage(ValueError):
    """A chat message the gateway refuses; ``field`` names what is wrong."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def parse_message(data: dict[str, Any]) -> tuple[str, str, str]:
    """``(channel, text, message_id)`` of a chat body, or BadMessage."""
    for key in data:
        if key in ("sender", "sender_id", "recipient_id", "from", "user"):
            raise BadMessage(f"{key!r}: the sender comes from your token, never the message; "
                             "remove the field", key)
        if key not in MESSAGE_FIELDS and key != "type":
            raise BadMessage(f"unknown field {key!r}; a message has channel, text and "
                             "message_id", key)
    channel, text, message_id = data.get("channel"), data.get("text"), data.get("message_id")
    if not isinstance(channel, str) or not channel.strip() or len(channel) > MAX_CHANNEL:
        raise BadMessage(f"channel must be a non-empty string of at most {MAX_CHANNEL} "
                         "characters", "channel")
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise BadMessage(f"text must be a string of at most {MAX_TEXT} characters", "text")
    if message_id is None:
        message_id = secrets.token_hex(8)
    if not isinstance(message_id, str) or len(message_id) > MAX_CHANNEL:
        raise BadMessage(f"message_id must be a string of at most {MAX_CHANNEL} characters",
                         "message_id")
    return channel, text, message_id


@dataclass(slots=True)
class Question:
    """A permission prompt waiting for the sender's answer."""

    id: str
    sender: str
    prompt: PermissionPrompt
    answer: asyncio.Future[bool]
    exchange: Exchange

    def frame(self, timeout: float) -> dict[str, Any]:
        return {"type": "question", "id": self.id, "tool_name": self.prompt.tool_name,
                "args": redact_data(self.prompt.args),
                "reason": redact(self.prompt.reason or ""), "timeout_s": timeout}


@dataclass(slots=True)
class Exchange:
    """One message's way through the gateway, and where its frames go.

    Frames are queued synchronously, so they reach the sender in the order they
    were made (a WebSocket's writer drains the queue; a POST reads it itself).
    """

    frames: asyncio.Queue[dict[str, Any]]
    stream: bool = False
    """Whether ``delta`` frames are wanted (the WebSocket); a POST gets whole replies."""

    def send(self, frame: dict[str, Any]) -> None:
        self.frames.put_nowait(frame)


@dataclass(slots=True)
class ChatSession:
    sender: str
    channel: str
    agent: Agent
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    exchange: Exchange | None = None


class Gateway:
    """Chat sessions over one engine; mount it with ``create_app(..., gateway=)``."""

    def _policy(self) -> list[PermissionRule]:
        """The operator's rules, read live."""
        return list(self.rules()) if self.rules is not None else []

    def _unmatched(self, tool: str) -> str | None:
        """``unlisted_tools`` for a call of a tool that can change things when no
        rule matches that call. A rule allowing ``terminal: git status`` allows
        that command only; every other terminal call stays denied (and a deny
        rule can only add refusals)."""
        if self.unlisted_tools == "allow" or tool not in self._changing_tools:
            return None
        return self.unlisted_tools

    def __init__(self, engine: Engine, model_factory: ModelFactory, *, project_root: Path,
                 model_name: str = "scripted", ask_timeout: float = 120.0,
                 rules: Callable[[], list[PermissionRule]] | None = None,
                 store: Any = None, address: str = "",
                 agent_options: dict[str, Any] | None = None,
                 extra_tools: list[Any] | None = None, commands: Any = None,
                 max_sessions: int = 1000, close_store: bool = False,
                 unlisted_tools: str = "deny", max_inflight: int = 16) -> None:
        if unlisted_tools not in ("allow", "ask", "deny"):
            raise ValueError("unlisted_tools must be allow, ask or deny")
        self.engine = engine
        self.model_factory = model_factory
        self.root = project_root.resolve()
        self.model_name = model_name
        self.ask_timeout = ask_timeout
        self.rules = rules
        self.unlisted_tools = unlisted_tools
        """What a chat sender gets for a tool that can change things (terminal, file
        writes, subagents, extension tools not marked read-only) when no
        ``[[permissions]]`` rule names it. Chat senders are strangers: deny by default."""
        from interlock.agent.builtin_tools import builtin_tools

        self._changing_tools = sorted(
            {t.name for t in [*builtin_tools(), *(extra_tools or [])]
             if not t.read_only and t.name != "todo"} | {"delegate"})
        self.store = store
        self.address = address
        """Where the server listens, for gateway_start (set it once the port is known)."""
        self.agent_options = dict(agent_options or {})
        self.extra_tools = extra_tools
        self.commands = commands
        self.max_sessions = max_sessions
        self.close_store = close_store
        """Open sessions kept; past it the least recently used idle one is closed."""
        self.max_inflight = max_inflight
        """Messages of one sender being answered at once; more are refused with an
        ``error`` frame (a busy session is never evicted, so this bounds them too)."""
        self.inflight: Counter[str] = Counter()
        self.sessions: dict[tuple[str, str], ChatSession] = {}
        self.questions: dict[str, Question] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.started = False
        self.starts = 0
        self.stops = 0

    # -- life -----------------------------------------------------------------
    async def start(self) -> None:
        if self.started:
            return
        self.started = True
        self.starts += 1
        await self.engine.emit(self._event("gateway_start", address=self.address))

    async def stop(self, reason: str = "shutdown") -> None:
        if not self.started:
            return
        self.started = False
        self.stops += 1
        await self.engine.emit(self._event("gateway_stop", reason=reason))
        for question in list(self.questions.values()):
            if not question.answer.done():
                question.answer.set_result(False)
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)
        for session in list(self.sessions.values()):
            try:
                await session.agent.close("gateway_stop")
            except Exception:
                log.exception("closing chat session %s failed", session.agent.session.id)
        self.sessions.clear()
        if self.close_store and self.store is not None:
            self.store.close()

    def _event(self, name: str, **fields: Any) -> Any:
        from interlock.events import EVENT_TYPES

        return EVENT_TYPES[name](platform="gateway", cwd=str(self.root), **fields)

    # -- sessions -------------------------------------------------------------
    async def session(self, sender: str, channel: str) -> ChatSession:
        key = (sender, channel)
        found = self.sessions.pop(key, None)
        if found is not None:
            self.sessions[key] = found  # most recently used last
            return found
        await self._evict()
        raced = self.sessions.get(key)  # made by another message while evicting
        if raced is not None:
            return raced
        holder: list[ChatSession] = []

        def on_text(text: str) -> None:
            chat = holder[0]
            exchange = chat.exchange
            # Deltas only while no hook must see the text first; the agent buffers then,
            # and this callback gets text that before_message_send has not passed yet.
            if exchange is None or not exchange.stream or chat.agent.hooks_on(BUFFERING_EVENTS):
                return
            exchange.send({"type": "delta", "text": text})

        async def ask(prompt: PermissionPrompt) -> bool:
            return await self._ask(holder[0], prompt)

        options = AgentOptions(**{
            "model": self.model_name, "cwd": self.root, "project_root": self.root,
            "live_permissions": self._policy, "unmatched_permission": self._unmatched,
            # Senders are strangers: their read tools stay in the project (docs/agent.md,
            # Confined readers).
            "read_scope": ReadScope.of([self.root]),
            **self.agent_options,
            "platform": "gateway", "ask_person": ask, "permission_timeout": self.ask_timeout,
            "on_text": on_text})
        agent = Agent(self.engine, self.model_factory(sender, channel), options=options,
                      store=self.store, extra_tools=self.extra_tools,
                      commands=self.commands or chat_commands())
        chat = ChatSession(sender, channel, agent)
        holder.append(chat)
        self.sessions[key] = chat
        return chat

    async def _evict(self) -> None:
        while len(self.sessions) >= self.max_sessions:
            idle = next((k for k, c in self.sessions.items() if not c.lock.locked()), None)
            if idle is None:
                return  # every session is busy: let the new one in rather than refuse
            chat = self.sessions.pop(idle)
            await chat.agent.close("evicted")

    def spawn(self, sender: str, channel: str, text: str, message_id: str,
              exchange: Exchange) -> asyncio.Task[None] | None:
        """Handle a message on its own task (kept until done, cancelled by stop()); None,
        and an ``error`` frame, when ``max_inflight`` of the sender's are being answered."""
        if self.inflight[sender] >= self.max_inflight:
            exchange.send({"type": "error", "message_id": message_id, "channel": channel,
                           "error": f"{self.max_inflight} of your messages are still being "
                                    "answered; wait for their replies"})
            return None
        self.inflight[sender] += 1
        task = asyncio.ensure_future(self.handle(sender, channel, text, message_id, exchange))
        self.tasks.add(task)

        def done(task: asyncio.Task[None]) -> None:
            self.tasks.discard(task)
            self.inflight[sender] -= 1
            if self.inflight[sender] <= 0:
                del self.inflight[sender]

        task.add_done_callback(done)
        return task

    # -- questions ------------------------------------------------------------
    async def _ask(self, chat: ChatSession, prompt: PermissionPrompt) -> bool:
        exchange = chat.exchange
        if exchange is None:
            return False
        question = Question(secrets.token_urlsafe(12), chat.sender, prompt,
                            asyncio.get_running_loop().create_future(), exchange)
        self.questions[question.id] = question
        try:
            exchange.send(question.frame(self.ask_timeout))
            # The agent waits at most permission_timeout (= ask_timeout) and denies then.
            return await question.answer
        finally:
            self.questions.pop(question.id, None)

    def answer(self, sender: str, question_id: str, allow: bool) -> Question | None:
        """Answer a pending question of ``sender``; None when there is no such question
        (or it is someone else's: the two look the same to the caller)."""
        question = self.questions.get(question_id)
        if question is None or question.sender != sender or question.answer.done():
            return None
        question.answer.set_result(bool(allow))
        return question

    def deny_pending(self, exchanges: set[int]) -> None:
        """Deny the questions of exchanges whose connection went away."""
        for question in list(self.questions.values()):
            if id(question.exchange) in exchanges and not question.answer.done():
                question.answer.set_result(False)

    # -- one message ----------------------------------------------------------
    async def handle(self, sender: str, channel: str, text: str, message_id: str,
                     exchange: Exchange) -> None:
        """Take one message through the gateway; ends with a terminal frame."""
        try:
            frame = await self._handle(sender, channel, text, message_id, exchange)
        except Exception as exc:
            log.exception("chat message %s from %s failed", message_id, sender)
            frame = {"type": "error", "error": redact(f"the message failed: {exc}")}
        except asyncio.CancelledError:
            exchange.send({"type": "error", "error": "the gateway is stopping",
                           "message_id": message_id, "channel": channel})
            raise
        if frame is not None:
            frame.setdefault("message_id", message_id)
            frame.setdefault("channel", channel)
            exchange.send(frame)

    async def _handle(self, sender: str, channel: str, text: str, message_id: str,
                      exchange: Exchange) -> dict[str, Any] | None:
        chat = await self.session(sender, channel)
        async with chat.lock:
            chat.exchange = exchange
            try:
                return await self._exchange(chat, exchange, text, message_id)
            except RunStopped as stopped:
                return {"type": "stopped", "reason": redact(str(stopped))}
            finally:
                chat.exchange = None
                chat.agent.save()

    async def _exchange(self, chat: ChatSession, exchange: Exchange, text: str,
                        message_id: str) -> dict[str, Any] | None:
        """The terminal frame, or None once the reply itself was sent."""
        agent = chat.agent
        received = await agent.gate("message_received", sender_id=chat.sender,
                                    channel=chat.channel, message_id=message_id, text=text)
        if received.verdict is Verdict.SKIP:
            return {"type": "skipped"}
        if received.blocked:
            return {"type": "blocked", "stage": "message_received",
                    "reason": agent.reason_for_model(received)}
        text = received.payload.text
        if text.startswith("/"):
            reply = await agent.command(text) or ""
            status = "command"
        else:
            result = await agent.run(text)
            reply, status = result.text, result.status.value
        sending = await agent.gate("before_message_send", recipient_id=chat.sender,
                                   channel=chat.channel, content=reply)
        if sending.blocked:
            return {"type": "withheld", "stage": "before_message_send",
                    "reason": agent.reason_for_model(sending)}
        content = sending.payload.content
        exchange.send({"type": "reply", "text": content, "status": status,
                       "session_id": agent.session.id, "message_id": message_id,
                       "channel": chat.channel})
        await agent.observe("message_sent", recipient_id=chat.sender, channel=chat.channel,
                            content=content)
        return None


def chat_commands() -> CommandRegistry:
    """A chat sender's slash commands: the built-in ones, but ``/model`` only shows the
    model (the operator chose it, and pays for it)."""
    def model(arguments: str, ctx: CommandContext) -> str:
        note = " (chosen by the server's operator)" if arguments.strip() else ""
        return f"model: {ctx.agent.session.model}{note}"

    return CommandRegistry([CommandSpec("model", "Show the model.", model)])


def build_gateway(engine: Engine, *, project_root: Path, model: str | None,
                  registry: Any = None, state_dir: Path | None = None,
                  base_url: str | None = None, api_key: str | None = None,
                  ask_timeout: float = 120.0, providers: Any = None,
                  extra_tools: list[Any] | None = None) -> Gateway:
    """The gateway `interlock serve` runs: ``model`` as for ``--model`` (``openai:NAME``,
    ``scripted:FILE``, or ``PREFIX:NAME`` of one of ``providers``), the registry's
    ``[[permissions]]`` read live, ``extra_tools`` (extensions') offered beside the
    built-in ones, and transcripts in ``<state_dir>/chat-sessions.db`` when a state
    directory is given."""
    from interlock.agent.sessions import SessionStore

    factory, name = model_factory(model, providers=providers, base_url=base_url,
                                  api_key=api_key)
    rules = None
    if registry is not None and hasattr(registry, "permissions"):
        def rules() -> list[PermissionRule]:
            return list(registry.permissions)
    store = SessionStore(state_dir / "chat-sessions.db") if state_dir is not None else None
    options: dict[str, Any] = {}
    if registry is not None and hasattr(registry, "sandbox"):
        from interlock.agent.sandbox import Sandbox

        mode, network = registry.sandbox
        Sandbox(tuple, mode=mode)  # sandbox = "required" and none: the server does not start
        options = {"pinned": lambda: registry.pinned_files, "sandbox": mode,
                   "sandbox_network": network}
    if rules is not None and hasattr(registry, "dispatch"):
        # A call's hooks and the operator's rules, of one revision (AgentOptions.dispatch).
        options["dispatch"] = registry.dispatch
    return Gateway(engine, factory, project_root=project_root, model_name=name,
                   ask_timeout=ask_timeout, rules=rules, store=store, close_store=True,
                   extra_tools=extra_tools, agent_options=options)


def model_factory(spec: str | None, *, providers: Any = None, base_url: str | None = None,
                  api_key: str | None = None) -> tuple[ModelFactory, str]:
    """A factory for ``--model`` (``openai:NAME``, ``scripted:FILE``, ``PREFIX:NAME``) and
    the model name shown in events. Each chat session gets its own provider."""
    from interlock.models import resolve_model

    # Resolve once now, so a bad spec is refused when the server starts.
    first, name = resolve_model(spec, providers=providers or {}, base_url=base_url,
                                api_key=api_key)
    spare: list[ModelProvider] = [first]

    def factory(sender: str, channel: str) -> ModelProvider:
        if spare:
            return spare.pop()
        return resolve_model(spec, providers=providers or {}, base_url=base_url,
                             api_key=api_key)[0]

    return factory, name


# -- HTTP and WebSocket ---------------------------------------------------------

NO_GATEWAY = ("this server has no chat gateway; start `interlock serve` with a chat model "
              "(--chat-model openai:NAME)")


async def next_frame(exchange: Exchange) -> dict[str, Any]:
    """The frame a POST answers with: the exchange's end, or a question to answer."""
    while True:
        frame = await exchange.frames.get()
        if frame["type"] in TERMINAL or frame["type"] == "question":
            return frame


def parse_answer(data: dict[str, Any]) -> tuple[str, bool]:
    for key in data:
        if key not in ("id", "allow", "type"):
            raise BadMessage(f"unknown field {key!r}; an answer has id and allow", key)
    question_id, allow = data.get("id"), data.get("allow")
    if not isinstance(question_id, str) or not question_id:
        raise BadMessage("id must be the question's id (a string)", "id")
    if not isinstance(allow, bool):
        raise BadMessage("allow must be true or false", "allow")
    return question_id, allow
