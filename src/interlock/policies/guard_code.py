"""The guard's rules on code: what reaches a shell or an interpreter as a
program, inline code (``python -c``, ``node -e``, ``awk``), fork bombs and
database clients (docs/guard.md).

A program the guard can read is analysed: shell text is checked like any
command, inline code is searched for the calls that delete, overwrite or run
a shell command. A program it cannot read (``cat x | sh``, ``base64 -d |
python3``) is "could not tell", and the guard's stance decides; one that was
just downloaded is always blocked.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from interlock.policies.guard_model import Context, Finding, critical_dir, critical_file
from interlock.shell import words
from interlock.shell.analyse import Command, is_shell
from interlock.shell.output import UNKNOWN_OUTPUT, literal_output

DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "lwp-request",
                         "GET"})
CheckText = Callable[[str, str, Context], Finding | None]
"""Check shell text (``os.system("...")``) like a command: (text, cwd, context)."""

_LANGS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"python[\d.]*|pypy[\d.]*"), "python"),
    (re.compile(r"node|nodejs|bun"), "node"),
    (re.compile(r"deno"), "deno"),
    (re.compile(r"perl[\d.]*"), "perl"),
    (re.compile(r"ruby[\d.]*"), "ruby"),
    (re.compile(r"php[\d.]*"), "php"),
    (re.compile(r"lua(?:jit)?[\d.]*"), "lua"),
    (re.compile(r"[gmn]?awk|busybox-awk"), "awk"),
)
_ARG_OPTS = {
    "python": frozenset({"-W", "-X", "-Q"}),
    "node": frozenset({"-r", "--require", "--import", "--loader", "--input-type"}),
    "perl": frozenset({"-I", "-M", "-m", "-x"}),
    "ruby": frozenset({"-I", "-r", "-C", "-E"}),
    "php": frozenset({"-c", "-d", "-z"}),
    "lua": frozenset({"-l"}),
    "awk": frozenset({"-v", "-F", "--assign", "--field-separator"}),
    "shell": frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"}),
}
_CODE_OPTS = {
    "python": ("-c",), "node": ("-e", "--eval", "-p", "--print"), "deno": ("eval",),
    "ruby": ("-e",), "php": ("-r",), "lua": ("-e",), "perl": (),
}


@dataclass(frozen=True, slots=True)
class Program:
    """Where a shell or interpreter gets its program from."""

    lang: str
    """python, node, perl ... or shell."""
    source: str
    """arg (inline code), stdin, file, module, or none (nothing runs)."""
    code: str | None = None
    """The code, when inline or literal on stdin."""
    path: str = ""
    """The script file, for source == file."""
    opaque: bool = False
    """The code or the file name came from an expansion the guard cannot see."""


@functools.lru_cache(maxsize=512)
def language(name: str) -> str | None:
    """The language a command named ``name`` runs code in, if it is an interpreter."""
    if is_shell(name):
        return "shell"
    if name in ("source", "."):
        return "source"
    for pattern, lang in _LANGS:
        if pattern.fullmatch(name):
            return lang
    return None


def program_of(cmd: Command) -> Program | None:
    """The program ``cmd`` runs, when it is a shell or an interpreter."""
    lang = language(cmd.name)
    if lang is None:
        return None
    args, opaque = cmd.args, cmd.opaque[1:]
    if lang == "source":
        if not args:
            return None
        if args[0] in ("/dev/stdin", "-", "/proc/self/fd/0"):
            return Program("shell", "stdin", cmd.stdin_text)
        return Program("shell", "file", path=args[0], opaque=opaque[0])
    takes = _ARG_OPTS.get(lang, frozenset())
    code_opts = _CODE_OPTS.get(lang, ())
    i = 0
    while i < len(args):
        a = args[i]
        unknown = opaque[i] if i < len(opaque) else False
        nxt = args[i + 1] if i + 1 < len(args) else None
        nxt_unknown = opaque[i + 1] if i + 1 < len(opaque) else False
        if lang == "shell" and a.startswith("-") and not a.startswith("--") and "c" in a[1:]:
            return Program("shell", "arg", nxt, opaque=nxt_unknown)
        if lang == "shell" and a.startswith("-") and "s" in a[1:] and not a.startswith("--"):
            return Program("shell", "stdin", cmd.stdin_text)
        if a in code_opts or (lang in ("perl", "ruby", "node") and
                              re.fullmatch(r"-[a-zA-Z0-9]*[eE]", a)):
            return Program(lang, "arg", nxt, opaque=nxt_unknown)
        if lang == "python" and re.fullmatch(r"-[a-zA-Z]*c", a):  # -c, -Ic, -uc
            return Program(lang, "arg", nxt, opaque=nxt_unknown)
        if lang == "python" and a.startswith("-c") and len(a) > 2:
            return Program(lang, "arg", a[2:], opaque=unknown)
        if lang == "python" and (a == "-m" or a.startswith("-m")):
            return Program(lang, "module", path=nxt or a[2:])
        if lang == "awk" and a in ("-f", "--file"):
            return Program(lang, "file", path=nxt or "", opaque=nxt_unknown)
        if a == "-" or (a == "--" and lang != "awk"):
            if a == "-":
                return Program(lang, "stdin", cmd.stdin_text)
            i += 1
            break
        if a.startswith("-") and len(a) > 1 and a != UNKNOWN_OUTPUT:
            i += 2 if a in takes else 1
            continue
        break
    if i < len(args):
        if lang == "awk":
            return Program(lang, "arg", args[i], opaque=opaque[i] if i < len(opaque) else False)
        if lang == "deno":
            return Program(lang, "file", path=args[i + 1] if i + 1 < len(args) else "")
        return Program(lang, "file", path=args[i], opaque=opaque[i] if i < len(opaque) else False)
    if lang in ("awk", "deno"):
        return Program(lang, "none")
    return Program(lang, "stdin", cmd.stdin_text)


def _feeders(cmd: Command) -> list[Command]:
    """Every command whose output reaches ``cmd``: the pipeline before it and what fed them."""
    out: list[Command] = []
    for up in cmd.upstream:
        out.append(up)
        out.extend(up.substitutions)
    out.extend(cmd.substitutions)
    return out


def _downloads(cmds: list[Command]) -> Command | None:
    return next((c for c in cmds if c.name in DOWNLOADERS), None)


def pipe_exec(cmd: Command, ctx: Context, check_text: CheckText) -> Finding | None:
    """Programs fed to a shell or interpreter: downloaded, unreadable, written earlier,
    or inline code to analyse."""
    prog = program_of(cmd)
    if prog is None:
        if cmd.argv and "/" in cmd.argv[0] and not cmd.opaque[0]:
            return _written(cmd, Program("shell", "file", path=cmd.argv[0]), ctx, check_text)
        if cmd.name == "eval" and any(cmd.opaque[1:]):
            return _opaque_source(cmd, ctx, "eval")
        return None
    where = f"`{cmd.name}`"
    if prog.source == "stdin":
        if prog.code is not None:
            if prog.lang == "shell":
                return None  # parsed as a nested script already
            return analyse(prog.lang, prog.code, cmd, ctx, check_text)
        feeders = _feeders(cmd)
        if not feeders:
            return None
        got = _downloads(feeders)
        if got is not None:
            return ctx.finding("download-exec", f"{where} would run what `{got.name}` "
                               "downloads", _url(got))
        source = cmd.upstream[-1].name if cmd.upstream else "a substitution"
        return ctx.unsure("pipe-to-interpreter", f"{where} would run, as code, text from "
                          f"`{source}` that the guard cannot read", source)
    if prog.opaque:
        return _opaque_source(cmd, ctx, cmd.name)
    if prog.source == "arg" and prog.code is not None and prog.lang != "shell":
        return analyse(prog.lang, prog.code, cmd, ctx, check_text)
    if prog.source == "file":
        return _written(cmd, prog, ctx, check_text)
    return None


def _opaque_source(cmd: Command, ctx: Context, where: str) -> Finding | None:
    """``bash <(curl ...)``, ``python3 -c "$(curl ...)"``, ``eval "$(base64 -d ...)"``."""
    subs = cmd.substitutions
    got = _downloads([*subs, *(u for s in subs for u in s.upstream)])
    if got is not None:
        return ctx.finding("download-exec", f"`{where}` would run what `{got.name}` "
                           "downloads", _url(got))
    producer = next((s for s in reversed(subs) if _reads_data(s)), None)
    if producer is not None:
        return ctx.unsure("pipe-to-interpreter", f"`{where}` would run code produced by "
                          f"`{producer.name}` at run time", producer.name)
    # `eval "$(ssh-agent -s)"`, `source <(kubectl completion bash)`: a program's own
    # shell setup, which developers run every day.
    return None


DATA_READERS = frozenset({
    "cat", "head", "tail", "tac", "less", "more", "base64", "base32", "basenc", "xxd", "od",
    "openssl", "gunzip", "zcat", "bzcat", "xzcat", "zstdcat", "unzip", "gzip", "bzip2", "xz",
    "zstd", "rev", "tr", "sed", "cut", "dd", "echo", "printf", "git", "jq", "yq", "uudecode",
    "iconv", "perl", "find", "ls", "xargs", "envsubst", "tee", "strings", "sort",
})


def _reads_data(cmd: Command) -> bool:
    """Does ``cmd`` print data (a file, decoded text, inline code's output) rather than a
    tool's own generated setup code?"""
    if not cmd.argv or (cmd.opaque and cmd.opaque[0]):
        return True
    if cmd.name in DATA_READERS or cmd.name in DOWNLOADERS:
        return True
    prog = program_of(cmd)
    return prog is not None and prog.source in ("arg", "stdin")


def _written(cmd: Command, prog: Program, ctx: Context, check_text: CheckText) -> Finding | None:
    """A script run after this same command line wrote or downloaded it."""
    path = _norm(prog.path, cmd.cwd)
    if not path or path not in ctx.written:
        return None
    text = ctx.written[path]
    if text is None:
        return ctx.finding("download-exec", f"`{cmd.name}` would run {path}, downloaded "
                           "earlier in the command", path)
    if prog.lang == "shell":
        inner = check_text(text, cmd.cwd, ctx)
        if inner is not None:
            return Finding(inner.category, f"{inner.detail} (in {path}, written earlier in "
                           "the command)", inner.target, inner.unsure)
        return None
    return analyse(prog.lang, text, cmd, ctx, check_text)


def _url(cmd: Command) -> str:
    return next((a for a in cmd.args if "://" in a or re.match(r"[\w.-]+\.\w+/", a)), "")


def _norm(path: str, cwd: str) -> str:
    if not path:
        return ""
    return posixpath.normpath(posixpath.join(cwd or "/", path))


def record_writes(cmd: Command, ctx: Context) -> None:
    """Remember the files ``cmd`` writes (their text when literal, None when downloaded)."""
    feeders = _feeders(cmd)
    downloaded = cmd.name in DOWNLOADERS or _downloads(feeders) is not None
    text = None if downloaded else literal_output(cmd) if cmd.name != "tee" else cmd.stdin_text
    targets = [t for op, t in cmd.redirects if op in (">", ">>", ">|", "&>")]
    if cmd.name == "tee":
        targets += [a for a in cmd.args if not a.startswith("-")]
    if cmd.name in DOWNLOADERS:
        targets += _download_targets(cmd)
    for target in targets:
        path = _norm(target, cmd.cwd)
        if downloaded:
            ctx.written[path] = None
        elif text is not None:
            ctx.written[path] = text
        else:
            ctx.written.pop(path, None)


def _download_targets(cmd: Command) -> list[str]:
    args = cmd.args
    out: list[str] = []
    urls = [a for a in args if "://" in a]
    remote_name = False
    for i, a in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else ""
        if (a in ("-o", "--output", "-O", "--output-document") and cmd.name != "curl") or \
                (a in ("-o", "--output") and cmd.name == "curl"):
            if nxt and nxt != "-":
                out.append(nxt)
        elif a.startswith(("--output=", "--output-document=")):
            out.append(a.split("=", 1)[1])
        elif cmd.name == "curl" and (a == "--remote-name" or a == "--remote-name-all" or
                                     re.fullmatch(r"-[a-zA-Z]*O[a-zA-Z]*", a)):
            remote_name = True
    if cmd.name == "wget" and not any(a in ("-O", "--output-document") or
                                      a.startswith(("-O", "--output-document=", "-qO"))
                                      for a in args):
        remote_name = True
    if remote_name:
        for url in urls:
            name = posixpath.basename(url.split("?", 1)[0].rstrip("/")) or "index.html"
            prefix = next((args[i + 1] for i, a in enumerate(args[:-1]) if a == "-P"), "")
            out.append(posixpath.join(prefix, name) if prefix else name)
    return out


# -- inline code ------------------------------------------------------------------

_FORK_BOMB = re.compile(
    r"\bfork\b\s*(?:\(\s*\))?\s*while\s+(?:fork|1|true)\b"
    r"|while\s*\(?\s*(?:1|true|True)\s*\)?\s*[:{]?\s*(?:do\b)?[^;\n]{0,40}?\b(?:fork|pcntl_fork)\b"
    r"|while\s+(?:True|1)\s*:\s*\n\s+[^\n]{0,40}\bfork\("
    r"|for\s*\(\s*;\s*;\s*\)[^;]{0,80}?\b(?:fork|spawn|exec)\w*\s*\("
    r"|\bloop\s*(?:\{|do)\s*(?:Process\.)?fork\b",
    re.S)
_SHELL_CALL = re.compile(
    r"\b(?:os\.system|os\.popen|(?:\w+\.)?(?:run|call|check_call|check_output|Popen|"
    r"getoutput|getstatusoutput)|execSync|execFileSync|spawnSync|exec|spawn|execFile|system|"
    r"shell_exec|passthru|popen|proc_open|os\.execute|io\.popen|IO\.popen|Open3\.\w+|"
    r"Deno\.run|Bun\.spawnSync|Bun\.spawn)\s*\(")
_EVAL = re.compile(r"\b(?:exec|eval|compile|runInThisContext|Function)\b\s*[(),]|\.then\(\s*eval")
_FETCH = re.compile(r"\b(?:urlopen|urlretrieve|requests\.get|httpx\.get|fetch\s*\(|https?\.get|"
                    r"Net::HTTP|open-uri|URI\.open|LWP::|file_get_contents\(\s*['\"]https?:)")
_BARE_SYSTEM = re.compile(r"\b(?:system|exec|qx)\s*[\"'({]|\bsystem\s*\(")
_BACKTICKS = re.compile(r"`([^`]*)`|%x\{([^}]*)\}|qx\{([^}]*)\}|qx\(([^)]*)\)")
_RECURSIVE_DELETE = re.compile(
    r"\b(?:rmtree|remove_tree|rm_rf|rm_r|remove_dir|remove_entry_secure|remove_entry|rmSync|"
    r"rmdirSync|removeSync|Deno\.remove|fs\.rm|promises\.rm|rimraf(?:\.sync)?|emptyDirSync|"
    r"fse\.remove|FileUtils\.rm_rf|delete_tree)\s*\(")
_FILE_WRITE = re.compile(
    r"\b(?:os\.remove|os\.unlink|unlinkSync|unlink|os\.truncate|truncateSync|truncate|"
    r"File\.delete|FileUtils\.rm|File\.write|writeFileSync|file_put_contents|"
    r"Deno\.writeTextFileSync|open)\s*\(")
_HOME_EXPR = re.compile(
    r"\s*(?:(?:pathlib\.)?Path\.home\(\)|(?:require\(\s*['\"]os['\"]\s*\)|os)\.homedir\(\)|"
    r"Dir\.home|\$ENV\{\s*['\"]?HOME['\"]?\s*\}|ENV\[\s*['\"]HOME['\"]\s*\]|"
    r"process\.env\.HOME|process\.env\[\s*['\"]HOME['\"]\s*\]|"
    r"os\.environ\[\s*['\"]HOME['\"]\s*\]|os\.(?:environ\.get|getenv)\(\s*['\"]HOME['\"]\s*\)|"
    r"getenv\(\s*['\"]HOME['\"]\s*\)|Deno\.env\.get\(\s*['\"]HOME['\"]\s*\)|"
    r"os\.path\.expanduser\(\s*['\"]~['\"]\s*\)|File\.expand_path\(\s*['\"]~['\"]\s*\))\s*")
_EXPANDUSER = re.compile(r"(?:os\.path\.)?expanduser\(\s*(['\"])(.*?)\1\s*\)"
                         r"|File\.expand_path\(\s*(['\"])(.*?)\3\s*\)")
_LITERAL = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"")


def _args_at(code: str, start: int) -> str:
    """The text from ``start`` (just past an opening parenthesis) to its match."""
    depth, i, quote = 1, start, ""
    while i < len(code):
        c = code[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"`":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return code[start:i]
        i += 1
    return code[start:]


def _first_arg(args: str) -> str:
    depth, quote = 0, ""
    for i, c in enumerate(args):
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            return args[:i]
    return args


def _literals(text: str) -> list[str]:
    return [words.unescape(m.group(1) if m.group(1) is not None else m.group(2))
            for m in _LITERAL.finditer(text)]


def _target(arg: str, home: str) -> str | None:
    """The path a deletion call's first argument names, when the guard can read it."""
    arg = arg.strip()
    if _HOME_EXPR.fullmatch(arg):
        return home
    m = _EXPANDUSER.search(arg)
    if m is not None:
        return words.tilde(m.group(2) if m.group(2) is not None else m.group(4), home)
    m = re.fullmatch(r"(?:(?:pathlib\.)?Path|new\s+File|File)?\(?\s*"
                     r"('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")\s*\)?", arg)
    if m is not None:
        return _literals(m.group(1))[0]
    return None


def analyse(lang: str, code: str, cmd: Command, ctx: Context,
            check_text: CheckText) -> Finding | None:
    """Inline code: fork bombs, shell commands it runs, deletions of protected targets."""
    if _FORK_BOMB.search(code):
        return ctx.finding("fork-bomb", f"`{cmd.name}` code forks without end", cmd.name)
    if _EVAL.search(code) and _FETCH.search(code):
        return ctx.finding("download-exec", f"`{cmd.name}` code runs what it downloads",
                           next((lit for lit in _literals(code) if "://" in lit), ""))
    shell_texts: list[str] = []
    for m in _SHELL_CALL.finditer(code):
        args = _args_at(code, m.end())
        lits = _literals(args)
        if lits:
            shell_texts.append(shlex.join(lits) if args.lstrip().startswith("[") or
                               (len(lits) > 1 and "," in args) else " ".join(lits))
    if lang in ("ruby", "perl", "php", "node"):
        for m in _BACKTICKS.finditer(code):
            shell_texts.append(next(g for g in m.groups() if g is not None))
    if shell_texts or _BARE_SYSTEM.search(code):
        # The command may be built in a variable first (`cmd="rm -rf /"; system(cmd)`):
        # every string in code that runs commands is read as one.
        shell_texts.extend(_literals(code))
    for text in shell_texts:
        if ctx.depth >= 4:
            break
        inner = check_text(text, cmd.cwd, ctx)
        if inner is not None:
            return ctx.finding("interpreter", f"`{cmd.name}` code runs `{text[:60]}`: "
                               f"{inner}", inner.target)
    for m in _RECURSIVE_DELETE.finditer(code):
        target = _target(_first_arg(_args_at(code, m.end())), ctx.home)
        if target is None:
            continue
        hit = critical_dir(target, ctx.home, cmd.cwd)
        if hit is not None:
            return ctx.finding("interpreter", f"`{cmd.name}` code deletes {hit} recursively",
                               hit)
        hit = critical_file(target, ctx.home, cmd.cwd)
        if hit is not None:
            return ctx.finding("critical-file", f"`{cmd.name}` code deletes {hit}", hit)
    for m in _FILE_WRITE.finditer(code):
        args = _args_at(code, m.end())
        if m.group(0).startswith("open") and not re.search(r",\s*['\"][wa]?[w+]", args):
            continue
        target = _target(_first_arg(args), ctx.home)
        hit = critical_file(target, ctx.home, cmd.cwd) if target is not None else None
        if hit is not None:
            return ctx.finding("critical-file", f"`{cmd.name}` code deletes or overwrites "
                               f"{hit}", hit)
    return None


def fork_bomb(cmd: Command, ctx: Context) -> Finding | None:
    if cmd.fork_bomb:
        return ctx.finding("fork-bomb", f"function {cmd.argv[0]} spawns copies of itself",
                           cmd.argv[0])
    return None


# -- databases ----------------------------------------------------------------------

SQL_CLIENTS: dict[str, tuple[str, ...]] = {
    # client -> options whose value is SQL text
    "psql": ("-c", "--command"),
    "mysql": ("-e", "--execute"),
    "mariadb": ("-e", "--execute"),
    "clickhouse-client": ("-q", "--query"),
    "cockroach": ("-e", "--execute"),
    "sqlite3": (),
    "duckdb": ("-c",),
    "sqlcmd": ("-Q", "-q"),
}
DB_CLIENTS = frozenset({*SQL_CLIENTS, "mongosh", "mongo", "redis-cli", "dropdb", "mysqladmin"})
_SQL_FILES = {"psql": ("-f", "--file"), "sqlcmd": ("-i",)}
_SQL_DANGER = re.compile(
    r"\b(?:DROP\s+(?:TABLE|DATABASE|SCHEMA|VIEW|INDEX|USER|ROLE|OWNED|TABLESPACE|"
    r"MATERIALIZED\s+VIEW|SEQUENCE|FUNCTION|TRIGGER|EXTENSION)|TRUNCATE)\b", re.I)
_SQL_STRINGS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/", re.S)
_DELETE_ALL = re.compile(r"\s*DELETE\s+FROM\s+[\w.\"`\[\]]+\s*", re.I)
_MONGO_DANGER = re.compile(r"\.dropDatabase\s*\(|\.drop\s*\(\s*\)|\.(?:deleteMany|remove)\s*\("
                           r"\s*\{\s*\}\s*\)|\.dropAllUsers\s*\(")
_MAX_SQL_FILE = 1 << 20


def _sql_text(cmd: Command) -> list[str]:
    texts: list[str] = []
    args = cmd.args
    for i, a in enumerate(args):
        for f in SQL_CLIENTS[cmd.name]:
            if a == f and i + 1 < len(args):
                texts.append(args[i + 1])
            elif a.startswith(f + "="):
                texts.append(a.split("=", 1)[1])
            elif len(f) == 2 and a.startswith(f) and len(a) > 2 and not a.startswith("--"):
                texts.append(a[2:])
        for f in _SQL_FILES.get(cmd.name, ()):
            if a == f and i + 1 < len(args):
                texts.extend(_read(args[i + 1], cmd.cwd))
    if cmd.name in ("sqlite3", "duckdb"):
        texts.extend(a for a in [x for x in args if not x.startswith("-")][1:])
    if cmd.stdin_text is not None:
        texts.append(cmd.stdin_text)
    texts.extend(t for op, target in cmd.redirects if op == "<" for t in _read(target, cmd.cwd))
    return texts


def _read(path: str, cwd: str) -> list[str]:
    full = _norm(path, cwd)
    try:
        if os.path.getsize(full) > _MAX_SQL_FILE:
            return []
        with open(full, encoding="utf-8", errors="replace") as fh:
            return [fh.read()]
    except OSError:
        return []


def database(cmd: Command, ctx: Context) -> Finding | None:
    name = cmd.name
    ops = [a for a in cmd.args if not a.startswith("-")]
    if name in SQL_CLIENTS:
        ctx.volatile[0] = True  # `psql -f FILE`, `mysql < FILE`: the file may change
        for text in _sql_text(cmd):
            bare = _SQL_STRINGS.sub(" ", text)
            m = _SQL_DANGER.search(bare)
            if m is not None:
                return ctx.finding("database", f"`{name}` would run {m.group(0).upper()}",
                                   m.group(0))
            if ctx.options.sql_delete_without_where and any(
                    _DELETE_ALL.fullmatch(stmt) for stmt in bare.split(";")):
                return ctx.finding("database", f"`{name}` would DELETE every row of a table "
                                   "(no WHERE; option sql_delete_without_where)", "DELETE")
    elif name in ("mongosh", "mongo"):
        texts = [cmd.args[i + 1] for i, a in enumerate(cmd.args[:-1]) if a == "--eval"]
        texts += [cmd.stdin_text] if cmd.stdin_text is not None else []
        for text in texts:
            m = _MONGO_DANGER.search(text)
            if m is not None:
                return ctx.finding("database", f"`{name}` would run {m.group(0).strip()}...",
                                   m.group(0))
    elif name == "redis-cli":
        commands = [_redis_command(cmd.args)]
        if cmd.stdin_text is not None:
            commands += [line.split()[0] for line in cmd.stdin_text.splitlines() if line.split()]
        for word in commands:
            if word.upper() in ("FLUSHALL", "FLUSHDB"):
                return ctx.finding("database", f"`redis-cli {word.upper()}` deletes every key",
                                   word.upper())
    elif name == "dropdb" and ops and "--help" not in cmd.args:
        return ctx.finding("database", f"`dropdb` would drop the database {ops[-1]}", ops[-1])
    elif name == "mysqladmin" and "drop" in ops:
        return ctx.finding("database", "`mysqladmin drop` drops a database", ops[-1])
    return None


def _redis_command(args: list[str]) -> str:
    takes = {"-h", "-p", "-a", "-n", "-u", "-s", "--user", "--pass", "-r", "-i", "-d"}
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in takes else 1
    return args[i] if i < len(args) else ""
