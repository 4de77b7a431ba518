"""bosun's runner guard, loaded as ``sitecustomize`` by every Python process a verify command starts.

Not part of bosun's import graph: bosun copies it, as ``sitecustomize.py``, into a directory of its
own that goes first on the verify command's ``PYTHONPATH``, outside the tree under test and (under the
sandbox) read-only to it. Python imports it at start-up, before any code of the tree runs, and it
installs an audit hook (``sys.addaudithook``; a hook cannot be removed).

Invariant: **what the code under test does to the test runner is written, at the moment it happens,
to a channel bosun reads outside the verify process.** The hook records what no honest code under
test does: reach frames, the garbage collector or trace hooks; reassign ``__code__`` or ``__class__``
of the runner's objects; rewrite the runner's environment; attack the channel, the guard or its own
process. Records go through a FIFO opened once (bytes written to a pipe cannot be taken back), each
before the event it reports takes effect, each with a keyed hash whose key this process replaces, in
its environment, by one derived from it before any code of the tree runs: a process can only forge
the records of the processes it starts.

The pytest plugin beside it (``bosun_runner_guard``) reports what only pytest knows through custom
audit events this hook accepts from the plugin's own code only. Everything here is in closures:
nothing the tree can reach by name holds the channel or the key. Syntax stays within Python 3.8; an
interpreter without audit hooks runs unguarded, which bosun sees as the absence of records.
"""

import os
import sys


def _install():  # noqa: C901 - one closure on purpose: its state must not be reachable by name
    spec = os.environ.get("BOSUN_RUNNER_GUARD", "")
    if not spec or not hasattr(sys, "addaudithook"):
        return
    try:
        from _blake2 import blake2b
        from _json import encode_basestring_ascii as quote
    except ImportError:
        return
    try:
        fifo, depth_s, key_hex, roots_s, plugin_path = spec.split("|", 4)
        depth = int(depth_s)
        key = bytes.fromhex(key_hex)
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (ValueError, OSError):
        return  # no channel: this process runs unguarded, and bosun sees no record of it
    os.set_blocking(fd, True)
    ident = os.fstat(fd)[1:3]  # (inode, device): dup2 over the fd is seen at the next write
    child_key = blake2b(key, digest_size=32, person=b"bosun-child").hexdigest()
    os.environ["BOSUN_RUNNER_GUARD"] = "|".join((fifo, str(depth + 1), child_key, roots_s, plugin_path))

    import _thread
    import atexit

    roots = tuple(r for r in roots_s.split(":") if r)
    env_dirs = tuple(
        p.rstrip("/") + "/" for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path}
        if p and (p.endswith(("site-packages", "dist-packages")) or p in (sys.prefix, sys.exec_prefix))
    )
    guard_dir = os.path.dirname(plugin_path) + "/"
    pid = os.getpid()
    getframe = sys._getframe
    write, fstat, kill, getpid = os.write, os.fstat, os.kill, os.getpid
    busy = set()
    runner_tops = ("_pytest", "pytest", "pluggy", "unittest", "py", "iniconfig")
    state = {"tree_ran": False, "snap": None, "hot": None, "plugin_code": None, "allowed": (), "keep": [],
             "extra": set(), "sent": 0, "noted": set(), "runner_ids": set(), "importing": None, "loaded": 0}

    def dumps(value):
        """JSON without importing ``json`` (bosun reads records in threads, where ``ast`` is not safe)."""
        if isinstance(value, str):
            return quote(value)
        if value is True or value is False or value is None:
            return {True: "true", False: "false", None: "null"}[value]
        if isinstance(value, int):
            return str(int(value))
        if isinstance(value, dict):
            return "{" + ",".join(quote(str(k)) + ":" + dumps(v) for k, v in value.items()) + "}"
        if isinstance(value, (list, tuple)):
            return "[" + ",".join(dumps(v) for v in value) + "]"
        return quote(repr(value))

    def emit(record):
        record["pid"] = getpid()
        record["d"] = depth
        body = dumps(record)
        if len(body) > 3800:  # one write stays below PIPE_BUF: records of two processes never interleave
            body = dumps({"kind": "truncated", "of": record.get("kind"), "pid": record["pid"], "d": depth})
        data = body.encode("ascii")
        line = blake2b(data, key=key, digest_size=16).hexdigest().encode() + b" %d " % depth + data + b"\n"
        try:
            if fstat(fd)[1:3] != ident:
                raise OSError("channel replaced")
            write(fd, line)
        except OSError:
            # Someone closed or replaced the channel: nothing this process reports can be trusted
            # any more, so it does not get to report anything at all.
            kill(getpid(), 9)
        state["sent"] += 1

    files = {}

    def in_tree(filename):
        if not filename or filename[0] == "<":
            return None
        if not filename.startswith("/"):
            filename = os.path.join(os.getcwd(), filename)
        for root in roots:
            if filename.startswith(root + "/"):
                if filename.startswith(env_dirs) or filename.startswith(guard_dir):
                    return None
                return filename[len(root) + 1:]
        return None

    def where(frame, limit=6):
        """Tree frames from ``frame`` outwards: ``["calc.py:3", ...]``. A frame's module is read from its
        globals (reading ``f_code`` is itself an audit event, and stacks are deep)."""
        out = []
        while frame is not None and len(out) < limit:
            rel = tree_file(frame)
            if rel is not None:
                out.append(rel + ":" + str(frame.f_lineno))
            frame = frame.f_back
        return out

    def caller(skip_inspect=False, depth=3):
        """The frame whose code raised the event (``getframe(0)`` is this, 1 ``handle``, 2 the hook)."""
        frame = getframe(depth)
        while skip_inspect and frame is not None and str(frame.f_globals.get("__file__")).endswith("/inspect.py"):
            frame = frame.f_back
        return frame

    def tree_file(frame):
        """The tree-relative file of ``frame``'s module, or None (from its globals: ``f_code`` is audited)."""
        path = frame.f_globals.get("__file__")
        if path not in files:
            files[path] = in_tree(path) if isinstance(path, str) else None
        return files[path]

    def note(kind, what, frame, hard=True, once=None):
        at = where(frame)
        if not at and kind not in ("guard_attacked", "guard_copy", "forged_guard"):
            return  # nothing of the tree on the stack: the environment's own doing
        if once is not None:
            if once in state["noted"]:
                return
            state["noted"].add(once)
        emit({"kind": "event", "event": kind, "what": what[:300], "hard": hard, "at": at})

    def is_runner(name):
        return bool(name) and (name.split(".", 1)[0] in runner_tops or name in state["extra"])

    def runner_object(obj):
        mod = getattr(obj, "__module__", None) if not isinstance(obj, type(sys)) else obj.__name__
        if not isinstance(mod, str):
            mod = getattr(type(obj), "__module__", "")
        return is_runner(mod)

    # The runner's objects as they were before any code of the tree ran, and the checkpoints that
    # compare them (a module of its own, imported now and forgotten by name: only closures hold it).
    from bosun_runner_guard_integrity import integrity

    sys.modules.pop("bosun_runner_guard_integrity", None)
    snapshot, watch, report_change, checkpoint = integrity(state, emit, in_tree, is_runner)
    del integrity

    module_type = type(sys)

    class Watched(module_type):
        """A test module, as pytest imports it: writes into it from other code are reported."""

        def __setattr__(self, name, value):
            written(self, name)
            module_type.__setattr__(self, name, value)

        def __delattr__(self, name):
            written(self, name)
            module_type.__delattr__(self, name)

    def written(module, name):
        me = _thread.get_ident()
        if me in busy:
            return
        busy.add(me)
        try:
            at = where(getframe(2))
            own = in_tree(getattr(module, "__file__", "") or "")
            if at and at[0].rsplit(":", 1)[0] != own:
                emit({"kind": "event", "event": "test_module_written", "hard": True, "at": at,
                      "what": "writes " + name + " into the test module " + str(own)})
        except Exception:  # noqa: BLE001 - the guard must never break the program it watches
            pass
        finally:
            busy.discard(me)

    def watch_module(frame):
        """pytest's assertion rewriter executes test modules and conftests itself: its frame holds the
        module, whose class becomes :class:`Watched` before the module's first line runs."""
        if frame is None or not frame.f_code.co_filename.endswith("assertion/rewrite.py"):
            return
        module = frame.f_locals.get("module")
        if type(module) is module_type:
            module.__class__ = Watched

    # -- the hook --------------------------------------------------------------------------------------

    frame_attrs = frozenset(("tb_frame", "gi_frame", "cr_frame", "ag_frame"))
    watched_env = frozenset((b"BOSUN_RUNNER_GUARD", b"PYTHONPATH", b"PYTEST_ADDOPTS", b"PYTEST_PLUGINS",
                             b"PYTEST_DISABLE_PLUGIN_AUTOLOAD", b"PYTHONSTARTUP"))
    direct_notes = {"sys.settrace": ("tracing", "installs a trace hook"), "sys.setprofile": ("tracing", "installs a "
                    "profile hook"), "sys._getframe": ("frames", "reads the call stack"), "sys._current_frames": (
                    "frames", "reads every thread's stack"), "gc": ("gc", "walks the garbage collector"),
                    "ctypes": ("ctypes", "reaches raw memory through ctypes")}
    direct = frozenset(("object.__getattr__", "sys.settrace", "sys.setprofile", "sys._getframe", "sys._current_frames",
                        "gc.get_objects", "gc.get_referrers", "gc.get_referents", "ctypes.dlopen", "ctypes.dlsym",
                        "ctypes.cdata", "ctypes.string_at", "ctypes.wstring_at", "ctypes.addressof"))
    two_paths = frozenset(("os.rename", "os.replace", "os.link", "os.symlink"))
    watched = frozenset((
        "import", "exec", "object.__setattr__", "object.__delattr__", "object.__getattr__", "sys._getframe",
        "sys._current_frames", "sys.settrace", "sys.setprofile", "gc.get_objects", "gc.get_referrers",
        "gc.get_referents", "os.kill", "os.killpg", "os.putenv", "os.unsetenv", "open", "os.remove", "os.rename",
        "os.truncate", "os.chmod", "os.listdir", "os.scandir", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata",
        "ctypes.string_at", "ctypes.wstring_at", "ctypes.addressof", "bosun.runner_guard", "signal.pthread_kill",
        "os.replace", "os.link", "os.symlink", "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
    ))
    reports = tuple(os.path.abspath(w.split("=", 1)[1]) for w in os.environ.get("PYTEST_ADDOPTS", "").split()
                    if w.startswith("--junitxml=") or w.startswith("--junit-xml="))
    protected = tuple(p for p in (fifo, guard_dir) if p)

    def handle(event, args):
        if event == "import":
            state["importing"] = args[0] if isinstance(args[0], str) else None
            return
        if event == "exec":
            code = args[0]
            filename = getattr(code, "co_filename", "")
            name, state["importing"] = state["importing"], None
            if filename[:1] == "<":  # code built from a string (dataclasses and namedtuple do it all the time)
                frame = caller()
                if frame is not None and tree_file(frame) is not None:
                    note("dynamic_code", "runs code built from a string", frame, hard=False,
                         once="dyn" + str(frame.f_lineno))
                return
            if filename == plugin_path:
                if state["plugin_code"] is None:
                    state["plugin_code"] = code
                    allowed = [code]
                    for c in allowed:
                        allowed.extend(k for k in c.co_consts if isinstance(k, type(code)))
                    state["keep"] = allowed
                    state["allowed"] = frozenset(id(c) for c in allowed)
                else:
                    note("guard_copy", "a second copy of bosun's runner guard ran", caller())
                return
            rel = in_tree(filename)
            if rel is None:
                return
            if name and "." not in name and state["loaded"] < 300:
                state["loaded"] += 1  # reported now: a process that ends abruptly still said where it loaded it from
                emit({"kind": "modules", "modules": {name: rel}})
            if not state["tree_ran"]:
                state["tree_ran"] = True
                snapshot()  # before the first line of the tree's code runs
            watch_module(caller())
            return
        if event == "bosun.runner_guard":
            frame = caller()
            if frame is None or id(frame.f_code) not in state["allowed"]:
                note("forged_guard", "called bosun's runner guard itself", frame)
                return
            kind, data = args[0], args[1]
            if kind == "configure":
                if "configured" in state["noted"]:
                    note("forged_guard", "configured bosun's runner guard a second time", frame)
                state["noted"].add("configured")
            elif kind == "runner_modules":
                state["extra"].update(data)
            elif kind == "checkpoint":
                checkpoint(data, full=data == "sessionfinish")
            elif kind == "watch":
                watch(data)
            elif kind == "replaced":
                for label, value in data["items"]:
                    report_change(label, value, data["when"])
            else:
                if kind == "session":
                    state["noted"].add("pytest")  # pytest undoes its own patches at exit: its end is the session's
                rec = dict(data)
                rec["kind"] = kind
                emit(rec)
            return
        if event in direct:
            frame = caller(skip_inspect=event == "sys._getframe")
            if frame is not None:
                direct_event(event, args, frame)
        else:
            effect_event(event, args)

    def direct_event(event, args, frame):
        """Events honest libraries cause all the time (logging reads frames): only the tree's own line
        calling them counts, as a reason for review."""
        rel = tree_file(frame)
        if event == "object.__getattr__":
            if rel is not None and args[1] in frame_attrs:
                note("frames", "reads another frame (" + args[1] + ")", frame, hard=False, once="fr" + rel)
            return
        kind, what = direct_notes.get(event) or direct_notes[event.split(".")[0]]
        if rel is not None:
            note(kind, what + " (" + event + ")", frame, hard=False, once=kind + rel)

    def effect_event(event, args):
        """Events that matter whatever library the tree's code went through (``Path.write_text``,
        ``os.environ[...] = ``): a cheap test first says whether the event is one of those; then it is
        attributed to the innermost frame of the tree on the stack."""
        found = None
        if event in ("object.__setattr__", "object.__delattr__"):
            found = rewritten(args)
        elif event in ("os.kill", "os.killpg", "signal.pthread_kill"):
            if args and args[0] in (0, pid, getpid(), os.getppid(), os.getpgid(0)):
                found = ("self_kill", "signals its own test process (" + event + ")", True)
        elif event in ("os.putenv", "os.unsetenv"):
            key = args[0] if args else b""
            if key in watched_env:
                found = ("runner_env", "rewrites " + key.decode() + " for the processes it starts",
                         key == b"BOSUN_RUNNER_GUARD")
        elif event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn"):
            words = " ".join(str(a) for a in (args[1] if len(args) > 1 and isinstance(args[1], (list, tuple))
                                              else args[:1]))
            if any(p in words for p in (*protected, *reports)):
                found = ("guard_attacked", "runs a program on bosun's guard or the test report: " + words[:200], True)
        else:
            for target in args[:2] if event in two_paths else args[:1]:
                if isinstance(target, bytes):
                    target = target.decode("utf-8", "replace")
                if isinstance(target, str):
                    found = found or path_event(event, args, target)
        if found is not None:
            kind, what, hard = found
            note(kind, what, caller(depth=4), hard=hard, once=kind + what if kind == "process_internals" else None)

    def path_event(event, args, target):
        if target.startswith("/proc/"):
            if target.endswith(("/environ", "/mem")):
                return ("process_internals", "reads " + target, True)
            if "/fd" in target:
                return ("process_internals", "lists " + target, False)
            return None
        if event in ("os.listdir", "os.scandir"):
            return None
        flags = args[2] if event == "open" and len(args) > 2 and isinstance(args[2], int) else 0
        if event == "open" and not flags & (os.O_WRONLY | os.O_RDWR):
            return None
        path = target if target.startswith("/") else os.path.join(os.getcwd(), target)
        if path.startswith(protected):
            return ("guard_attacked", event + " " + path, True)
        if path in reports:
            return ("report_written", "writes the test report pytest writes (" + event + ")", True)
        return None

    def rewritten(args):
        obj, name = args[0], args[1]
        if name not in ("__code__", "__class__", "__defaults__", "__kwdefaults__", "__dict__"):
            return None
        code = getattr(obj, "__code__", None) if name != "__class__" else None
        if runner_object(obj):
            return ("runner_rewritten", "reassigns " + name + " of the test runner's " +
                    repr(getattr(obj, "__qualname__", type(obj).__name__))[:80], True)
        if code is not None and code.co_filename.startswith(guard_dir):
            return ("guard_attacked", "reassigns " + name + " of bosun's runner guard", True)
        owner = in_tree(code.co_filename) if code is not None else None  # namedtuple's eval'd __new__ has none
        places = where(caller(depth=5), 1) if owner is not None else []
        if owner is not None and places and owner != places[0].rsplit(":", 1)[0]:
            return ("code_rewritten", "reassigns " + name + " of " + repr(getattr(obj, "__qualname__", "?"))[:80] +
                    ", a function of " + owner, True)
        return None

    def hook(event, args):
        if event not in watched or (event == "object.__getattr__" and args[1] not in frame_attrs):
            return  # (f_code, __code__ and __defaults__ are read thousands of times by honest code)
        me = _thread.get_ident()
        if me in busy:
            return
        busy.add(me)
        try:
            handle(event, args)
        except Exception:  # noqa: BLE001 - the guard must never break the program it watches
            pass
        finally:
            busy.discard(me)

    def at_exit():
        me = _thread.get_ident()
        busy.add(me)
        try:
            if "pytest" not in state["noted"]:
                checkpoint("exit", full=True)
            main = sys.modules.get("__main__")
            path = getattr(main, "__file__", None)
            name = getattr(getattr(main, "__spec__", None), "name", None)  # `python -m NAME` ran the tree's NAME.py
            rel = in_tree(path) if isinstance(path, str) else None
            if rel is not None and name and "." not in name:
                emit({"kind": "modules", "modules": {name: rel}})
            emit({"kind": "exit", "sent": state["sent"]})
        except Exception:  # noqa: BLE001 - at exit, a broken report is seen as a missing one
            pass
        finally:
            busy.discard(me)

    orig_argv = list(getattr(sys, "orig_argv", sys.argv))[:12]
    emit({"kind": "start", "ppid": os.getppid(), "argv": [a[:200] for a in orig_argv],
          "executable": sys.executable, "version": list(sys.version_info[:2])})
    path = list(sys.path)
    for start in range(0, len(path), 12):
        emit({"kind": "path", "entries": [p[:300] for p in path[start:start + 12]]})
    atexit.register(at_exit)  # registered first, so it runs last
    sys.addaudithook(hook)
    if not os.environ.get("PYTEST_ADDOPTS", "").count("-p bosun_runner_guard"):
        os.environ["PYTEST_ADDOPTS"] = (os.environ.get("PYTEST_ADDOPTS", "") + " -p bosun_runner_guard").strip()


_install()
del _install


def _chain():
    """The environment's own ``sitecustomize`` (Debian's, a venv's) still runs: this one only shadows
    it by being first on the path. One from the tree under test never does."""
    here = os.path.dirname(os.path.abspath(__file__))
    roots = tuple(r + "/" for r in (os.environ.get("BOSUN_RUNNER_GUARD") or "||||").split("|")[3].split(":") if r)
    for entry in sys.path:
        base = os.path.abspath(entry or ".")
        if base == here or (base + "/").startswith(roots):
            continue
        candidate = os.path.join(base, "sitecustomize.py")
        if os.path.isfile(candidate):
            with open(candidate, "rb") as fh:
                source = fh.read()
            exec(compile(source, candidate, "exec"), {"__name__": "sitecustomize", "__file__": candidate})
            return


try:
    _chain()
except Exception as exc:  # noqa: BLE001 - the environment's own start-up hook failing is reported like Python does
    sys.stderr.write(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{type(exc).__name__}: {exc}\n")
del _chain
