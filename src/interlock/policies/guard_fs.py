"""The guard's rules on files, disks, processes and git (docs/guard.md).

Each rule takes one simple command as the shell parser resolved it and the
check's context, and returns a finding or None.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re

from interlock.policies.guard_model import (
    Context,
    Finding,
    critical_dir,
    critical_file,
    operands,
    recursive_flag,
    split_targets,
)
from interlock.shell.analyse import SHELLS, Command, find_roots
from interlock.shell.output import UNKNOWN_OUTPUT

DELETERS = frozenset({"rm", "unlink", "shred", "srm", "trash", "trash-put", "rmdir", "wipe",
                      "truncate"})
_SAFE_DEVICE = re.compile(
    r"^/dev/(?:null|zero|full|random|urandom|stdin|stdout|stderr|tty\w*|pts/.*|fd/.*|shm/.*|"
    r"console|ptmx|mqueue/.*|log|kmsg|cu\.\w+|ttys\w*)$")
_NARROW_NAME = re.compile(r"[^*?\[\]]+|\*\.(?:pyc|pyo|swp|swo|orig|rej|tmp)|\*~|\.#\*")


def is_device(path: str) -> bool:
    return path.startswith("/dev/") and not _SAFE_DEVICE.match(path)


# -- deleting --------------------------------------------------------------------

REMOVERS = frozenset({"rm", "unlink", "trash", "trash-put", "srm", "rmdir"})


def rm(cmd: Command, ctx: Context) -> Finding | None:
    if cmd.name not in REMOVERS:
        return None
    recursive = cmd.name in ("trash", "trash-put", "srm") or recursive_flag(cmd.args)
    no_preserve = "--no-preserve-root" in cmd.args
    for target in split_targets(operands(cmd.args)):
        if target == UNKNOWN_OUTPUT and recursive:
            return ctx.unsure("rm-critical", f"`{cmd.name} -r` of a path computed by a "
                              "command substitution", target)
        hit = critical_dir(target, ctx.home, cmd.cwd) if recursive else None
        if hit is not None or (no_preserve and target.startswith("/")):
            return ctx.finding("rm-critical", f"`{cmd.name} -r` would delete "
                               f"{hit or target!r} recursively", hit or target)
        hit = critical_file(target, ctx.home, cmd.cwd)
        if hit is not None:
            return ctx.finding("critical-file", f"`{cmd.name}` would delete {hit}", hit)
    return None


_ACTIONS = frozenset({"-delete", "-exec", "-execdir", "-ok", "-okdir"})


def _narrow(expr: list[str]) -> bool:
    """A ``-name``/``-iname`` filter on one literal name (or a junk pattern), with no
    ``-o``, before the action (``find ~ -delete -name x`` deletes everything first)."""
    if any(a in ("-o", "-or", ",", "-not", "!") for a in expr):
        return False
    first_action = next((i for i, a in enumerate(expr) if a in _ACTIONS), len(expr))
    expr = expr[:first_action]
    names = [expr[i + 1] for i, a in enumerate(expr[:-1]) if a in ("-name", "-iname")]
    return bool(names) and all(_NARROW_NAME.fullmatch(n) for n in names)


def _runs_delete(words: list[str]) -> bool:
    """Does a ``-exec`` command (or xargs' command) delete?"""
    if not words:
        return False
    name = posixpath.basename(words[0])
    if name in DELETERS:
        return True
    if name in SHELLS and "-c" in words:
        script = words[words.index("-c") + 1] if words.index("-c") + 1 < len(words) else ""
        return re.search(r"(?:^|[\s;&|(`])(?:rm|unlink|shred|srm)\s", script + " ") is not None
    return False


def _find_actions(args: list[str]) -> bool:
    if "-delete" in args:
        return True
    for i, a in enumerate(args):
        if a in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+")), len(args))
            if _runs_delete(args[i + 1:end]):
                return True
    return False


def _find_verdict(find: Command, ctx: Context, how: str) -> Finding | None:
    roots = find_roots(find.args) or ["."]
    expr = find.args[find.args.index(roots[-1]) + 1:] if roots[-1] in find.args else find.args
    for root in split_targets(roots):
        hit = critical_dir(root, ctx.home, find.cwd)
        if hit is None:
            continue
        home = posixpath.normpath(ctx.home)
        if ctx.options.find_name_filter and hit == home and _narrow(expr):
            continue
        return ctx.finding("find-delete", f"{how} would delete files throughout {hit} "
                           "(a narrow `-name` filter under home is allowed: option "
                           "find_name_filter)", hit)
    return None


def find(cmd: Command, ctx: Context) -> Finding | None:
    """``find ROOT -delete`` / ``-exec rm``, and ``find ROOT | xargs rm``."""
    if cmd.name == "find" and _find_actions(cmd.args):
        return _find_verdict(cmd, ctx, "`find`")
    if ("xargs" in cmd.wrappers or "parallel" in cmd.wrappers) and _runs_delete(cmd.argv):
        for up in cmd.upstream:
            if up.name == "find":
                found = _find_verdict(up, ctx, f"`find | xargs {cmd.name}`")
                if found is not None:
                    return found
    return None


def mv(cmd: Command, ctx: Context) -> Finding | None:
    if cmd.name != "mv":
        return None
    args = cmd.args
    ops = operands(args)
    target_dir = next((a.split("=", 1)[1] for a in args
                       if a.startswith("--target-directory=")), None)
    for i, a in enumerate(args):
        if a in ("-t", "--target-directory") and i + 1 < len(args):
            target_dir = args[i + 1]
            if target_dir in ops:
                ops.remove(target_dir)
        elif re.fullmatch(r"-[a-zA-Z]*t.+", a) and not a.startswith("--"):
            target_dir = a[a.index("t") + 1:]
    sources = ops if target_dir is not None else ops[:-1]
    for src in split_targets(sources):
        hit = critical_dir(src, ctx.home, cmd.cwd)
        if hit is not None:
            return ctx.finding("mv-critical", f"`mv` would move {hit} away", hit)
    if ops and ops[-1] == "/dev/null" and len(ops) > 1 and target_dir is None:
        return ctx.finding("mv-critical", "`mv` into /dev/null destroys the source", ops[0])
    return None


def chmod(cmd: Command, ctx: Context) -> Finding | None:
    if cmd.name not in ("chmod", "chown", "chgrp", "setfacl") or not recursive_flag(cmd.args):
        return None
    ops = operands(cmd.args)
    refs = any(a.startswith("--reference") for a in cmd.args)
    for target in split_targets(ops if refs else ops[1:]):
        hit = critical_dir(target, ctx.home, cmd.cwd)
        if hit is not None:
            return ctx.finding("chmod-critical",
                               f"`{cmd.name} -R` would change {hit} recursively", hit)
    return None


# -- disks ---------------------------------------------------------------------------

def _flags(args: list[str]) -> set[str]:
    out = set()
    for a in args:
        if a.startswith("--"):
            out.add(a.split("=", 1)[0])
        elif a.startswith("-"):
            out.update("-" + c for c in a[1:])
    return out


FORMATTERS = ("mkfs", "mke2fs", "mkswap", "mkdosfs", "mkntfs", "mkexfatfs", "mkfs.")
KILLERS = frozenset({"kill", "killall5", "pkill", "killall"})
DISK_TOOLS = frozenset({"wipefs", "blkdiscard", "cryptsetup", "sgdisk", "gdisk", "fdisk",
                        "sfdisk", "parted", "cfdisk", "hdparm", "nvme", "dd", "cp", "mv",
                        "install", "rsync", "tee", "shred", "pv"})
FILE_WRITERS = frozenset({"truncate", "cp", "mv", "install", "ln", "tee", "dd", "shred"})


def _wipes(name: str, ops: list[str], flags: set[str]) -> str | None:
    """What a disk tool would do to its device, when it writes."""
    if name.startswith(FORMATTERS):
        return "formats"
    if name == "wipefs" and flags & {"-a", "--all", "-o", "--offset"}:
        return "erases the filesystem signatures of"
    if name == "blkdiscard":
        return "discards every block of"
    if name == "cryptsetup" and {"luksFormat", "erase", "luksErase", "reencrypt"} & set(ops):
        return "formats or erases the LUKS header of"
    if name in ("sgdisk", "gdisk") and flags & {"-Z", "--zap-all", "-z", "--zap", "-o",
                                                   "--clear", "-g", "--mbrtogpt"}:
        return "wipes the partition table of"
    if name in ("fdisk", "sfdisk", "parted", "cfdisk") and \
            not {"-l", "--list", "print", "-s"} & set(ops) | flags:
        return "rewrites the partition table of"
    return None


def disk(cmd: Command, ctx: Context) -> Finding | None:
    name, args = cmd.name, cmd.args
    ops = operands(args)
    devices = [a for a in ops if is_device(a)]
    flags = _flags(args)
    what = _wipes(name, ops, flags)
    if what is not None:
        # An image file (`mkfs.ext4 -F disk.img`, `mkswap /swapfile`) is fair game.
        if devices:
            return ctx.finding("disk", f"`{name}` {what} {devices[0]}", devices[0])
        unknown = [a for a, o in zip(args, cmd.opaque[1:], strict=False) if o]
        if unknown:
            return ctx.unsure("disk", f"`{name}` {what} a device named at run time",
                              unknown[0] or "$(...)")
        return None
    if name == "hdparm" and any(a.startswith(("--security-erase", "--trim-sector",
                                             "--write-sector")) for a in args):
        return ctx.finding("disk", "`hdparm` would erase the disk", devices[0] if devices else "")
    if name == "nvme" and ops[:1] and ops[0] in ("format", "sanitize"):
        return ctx.finding("disk", f"`nvme {ops[0]}` erases the drive", ",".join(ops[1:]))
    if name == "dd":
        for a in args:
            if a.startswith("of=") and is_device(a[3:]):
                return ctx.finding("disk", f"`dd` would overwrite the device {a[3:]}", a[3:])
    written = ops[-1:] if name in ("cp", "mv", "install", "rsync") and len(ops) > 1 else \
        ops if name in ("tee", "shred", "pv") else []
    for target in written:
        if is_device(target):
            return ctx.finding("disk", f"`{name}` would overwrite the device {target}", target)
    for op, target in cmd.redirects:
        if op in (">", ">>", ">|", "&>", "&>>", "<>") and is_device(target):
            return ctx.finding("disk", f"a redirect would overwrite the device {target}",
                               target)
    return None


# -- critical files ----------------------------------------------------------------

def files(cmd: Command, ctx: Context) -> Finding | None:
    """Truncating or overwriting ``/etc/passwd``, ``~/.bashrc``, ``~/.ssh/*`` ..."""
    for op, target in cmd.redirects:
        if op in (">", ">|", "&>"):
            hit = critical_file(target, ctx.home, cmd.cwd)
            if hit is not None:
                return ctx.finding("critical-file", f"a `{op}` redirect would overwrite {hit}",
                                   hit)
    name, args = cmd.name, cmd.args
    ops = operands(args)
    if name == "truncate":
        values = {args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-s", "-r", "--size",
                                                                          "--reference")}
        targets = [o for o in ops if o not in values]
    elif name in ("cp", "mv", "install", "ln") and len(ops) > 1:
        if name == "ln" and not {"-f", "--force"} & _flags(args):
            return None
        targets = ops[-1:]
    elif name == "tee" and not {"-a", "--append"} & _flags(args):
        targets = ops
    elif name == "dd":
        targets = [a[3:] for a in args if a.startswith("of=")]
    elif name == "shred":
        targets = ops
    else:
        return None
    for target in targets:
        hit = critical_file(target, ctx.home, cmd.cwd)
        if hit is not None:
            return ctx.finding("critical-file", f"`{name}` would overwrite {hit}", hit)
    return None


def rsync(cmd: Command, ctx: Context) -> Finding | None:
    if cmd.name != "rsync" or not any(a.startswith(("--delete", "--del")) for a in cmd.args):
        return None
    ops = operands(cmd.args)
    if len(ops) < 2:
        return None
    dest = ops[-1]
    if re.match(r"^[^/.~][^/]*:", dest):
        return None  # host:path, not this machine
    hit = critical_dir(dest, ctx.home, cmd.cwd) or critical_dir(dest.rstrip("/") or "/",
                                                                 ctx.home, cmd.cwd)
    if hit is not None:
        return ctx.finding("rsync-delete", f"`rsync --delete` into {hit} deletes what the "
                           "source lacks", hit)
    return None


def kill(cmd: Command, ctx: Context) -> Finding | None:
    if cmd.name == "killall5":
        return ctx.finding("kill-all", "`killall5` signals every process", "all processes")
    if cmd.name in ("pkill", "killall"):
        # `pkill -u alice`, `killall -u alice`: every process of a user, the agent's too.
        args = cmd.args
        takes = {"-u", "-U", "--user", "--uid", "-s", "--signal", "-g", "-G", "-t", "-P",
                 "--parent", "-o", "-y", "--older-than", "--younger-than", "-n"}
        rest: list[str] = []
        i = 0
        while i < len(args):
            i, word = (i + 2, "") if args[i] in takes else (i + 1, args[i])
            if word and not word.startswith("-"):
                rest.append(word)
        user = any(a in ("-u", "-U", "--user", "--uid") for a in args)
        if user and (not rest or all(r in (".", ".*", "") for r in rest)):
            return ctx.finding("kill-all", f"`{cmd.name} -u` signals every process of a user",
                               "all of a user's processes")
        return None
    if cmd.name != "kill":
        return None
    args = cmd.args
    pids: list[str] = []
    signal_seen = False
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            pids.extend(args[i + 1:])
            break
        if a in ("-l", "-L"):
            return None
        if a in ("-s", "-n", "--signal"):
            signal_seen, i = True, i + 2
            continue
        if a.startswith("-") and not signal_seen:
            signal_seen = True  # -9, -KILL, -SIGKILL
        else:
            pids.append(a)
        i += 1
    for pid in pids:
        if pid in ("-1", "1"):
            what = "every process" if pid == "-1" else "init (PID 1)"
            return ctx.finding("kill-all", f"`kill {' '.join(args)}` signals {what}", pid)
    return None


# -- git --------------------------------------------------------------------------

def _protected(branch: str, patterns: tuple[str, ...]) -> bool:
    if any(fnmatch.fnmatchcase(branch, p) for p in patterns):
        return True
    if any(c in branch for c in "*?["):
        # A glob refspec (`refs/heads/*`) covers every branch it matches.
        samples = [p.replace("*", "x").replace("?", "x") for p in patterns]
        return any(fnmatch.fnmatchcase(s, branch) for s in samples)
    return False


def git_push(cmd: Command, ctx: Context) -> Finding | None:
    if cmd.name != "git":
        return None
    args, opaque = cmd.args, cmd.opaque[1:]
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    if i >= len(args) or args[i] != "push":
        return None
    opts: list[str] = []
    positional: list[tuple[str, bool]] = []
    skip = False
    for a, unknown in zip(args[i + 1:], opaque[i + 1:], strict=False):
        if skip:
            skip = False
        elif a in ("-o", "--push-option", "--repo", "--receive-pack", "--exec"):
            skip = True
        elif a.startswith("-") and a != UNKNOWN_OUTPUT:
            opts.append(a)
        else:
            positional.append((a, unknown))
    force = any(o in ("--force", "--force-with-lease", "--force-if-includes")
                or o.startswith("--force-with-lease=")
                or (not o.startswith("--") and "f" in o[1:]) for o in opts)
    deleting = "--delete" in opts or any(not o.startswith("--") and "d" in o[1:]
                                         for o in opts)
    branches = ctx.options.protected_branches
    if "--mirror" in opts:
        return ctx.finding("git-force-push", "`git push --mirror` overwrites every remote "
                           "branch", "--mirror")
    refspecs = positional[1:]
    head = ctx.options.current_branch(cmd.cwd) if ctx.options.current_branch else None
    if not refspecs:
        if force and "--all" in opts:
            return ctx.finding("git-force-push", "`git push --force --all` overwrites "
                               "protected branches", "--all")
        if force and "--tags" not in opts:
            if head is not None and not _protected(head, branches):
                return None
            return ctx.finding("git-force-push", "`git push --force` with no branch named "
                               f"pushes {head or 'the current branch'}; name the branch",
                               head or "HEAD")
        return None
    for spec, unknown in refspecs:
        plus = spec.startswith("+")
        src, colon, dst = spec.lstrip("+").partition(":")
        target = (dst if colon else src).removeprefix("refs/heads/")
        if colon and not src:
            if _protected(target, branches):
                return ctx.finding("git-force-push", f"`git push` would delete the "
                                   f"protected branch {target!r}", target)
            continue
        if not (force or plus or deleting):
            continue
        if (unknown and not target) or target == UNKNOWN_OUTPUT:
            return ctx.unsure("git-force-push", "a force-push to a branch named at run "
                              "time", spec or "$(...)")
        if target in ("HEAD", "@"):
            if head is None:
                return ctx.finding("git-force-push", "a force-push of the current branch, "
                                   "which may be protected; name the branch", "HEAD")
            target = head
        if _protected(target, branches):
            what = "delete" if deleting else "force-push to"
            return ctx.finding("git-force-push",
                               f"`git push` would {what} the protected branch {target!r}",
                               target)
    return None

