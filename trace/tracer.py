# ndbg tracer: runs Python programs under sys.settrace and reports their
# events as JSON lines. Standard library only; embedded in the Go package trace
# and run inside the sandbox (trace/sandbox.go) as
# `python3 -S -s -B -c <this file> MODE MEMORY_BYTES CPU_SECONDS`.
#
# Wire protocol (ASCII JSON lines; see trace/wire.go):
#   fd 4 (in):  first the hex HMAC-SHA256 key that signs every output line,
#               then one request per line: {"id", "source", "entry", "call",
#               "timeout", "max_events", "max_bytes", "max_stdout", "no_exec"};
#               an empty "call" traces the whole module, run as __main__
#               (no_exec: run nothing of the program, report the entry's call
#               event built from its text; see literal_call)
#   fd 3 (out): "HEX-SIGNATURE JSON" lines (see make_signer):
#               {"t": "hello", "version": sys.version}, then one result line
#               per request (see run_one).
# MODE "single" reads one request and closes fd 4 before any program code
# runs; "batch" serves requests until fd 4 reaches end of file.
import ast
import base64
import builtins
import copy
import io
import json
import os
import re
import resource
import signal
import sys
import _thread
# Bound here so that a program rebinding builtins cannot break the tracer.
from builtins import (BaseException, MemoryError, RecursionError, SyntaxError, UnicodeEncodeError,
                      ValueError, bytes, callable, compile, dict, eval, exec, float, getattr,
                      hasattr, id, int, isinstance, len, locals, max, repr, setattr, str, tuple, type)

PROGFILE = "<program>"
MAX_REPR = 256  # dsl.MaxRepr
CUT_REPR = 240  # bytes kept of a longer repr (dsl.TruncateRepr)
GENERATOR_FLAGS = 0x20 | 0x80 | 0x200  # CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR
EV_CALL, EV_LINE, EV_RETURN, EV_EXCEPTION = 1, 2, 3, 4  # dsl.Event
INJECTED = frozenset(("__name__", "__builtins__"))  # a script's globals that the tracer set


class Control(BaseException):
    """Raised by the tracer itself; never turned into a placeholder."""


class Timeout(Control):
    pass


class Capped(Control):
    pass


class SandboxViolation(Control):
    pass


class ReprTimeout(BaseException):
    """Raised into a __repr__ that ran past REPR_SECONDS (see timed_repr)."""


class Unbuilt(Exception):
    """bounded_repr met a value it does not render itself."""


_settrace = sys.settrace
_getitimer = signal.getitimer
_setprofile = sys.setprofile
_gettrace = sys.gettrace
_setrecursionlimit = sys.setrecursionlimit
_setitimer = signal.setitimer


class State:
    """Per-program state shared by the trace function and the sandbox hooks."""

    def __init__(self):
        self.armed = False
        self.in_repr = False
        self.repr_left = 0.0  # the program's time left when a timed repr started
        self.stuck = {}  # id -> value whose repr timed out: not tried again
        self.timed_out = False
        self.capped = False
        self.violation = None
        self.done = False
        self.kill_frame = None
        self.killed = None  # the frame whose call failed with RecursionError
        self.vis_limit = 1000
        self.real_limit = 1000
        self.base = None  # recursion counter of the entry's call event, less 2


ST = [State()]  # the current program's state (a list so hooks can swap it)


def bound(s, limit=MAX_REPR, keep=CUT_REPR):
    """Bounds s to limit bytes of UTF-8: longer strings keep their first
    `keep` bytes (never splitting a character) plus "...[+N]", N = bytes cut.
    Unencodable characters (lone surrogates) are backslash-escaped first."""
    if len(s) <= limit and s.isascii():
        return s
    try:
        b = s.encode("utf-8")
    except UnicodeEncodeError:
        b = s.encode("utf-8", "backslashreplace")
        s = b.decode("utf-8")
    if len(b) <= limit:
        return s
    cut = keep
    while cut > 0 and (b[cut] & 0xC0) == 0x80:
        cut -= 1
    return b[:cut].decode("utf-8") + "...[+%d]" % (len(b) - cut)


ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
REPR_SECONDS = 1.0  # wall-clock budget of one value's repr
TIMER_INTERVAL = 0.05  # the program timer re-fires this often once expired
REPR_WORK = 1 << 16  # characters of a container's repr built before it is cut unmeasured
CONTAINERS = (list, tuple, dict, set, frozenset)


def timed_repr(v):
    """repr(v) within REPR_SECONDS of the program's timer: a __repr__ that
    runs longer gets ReprTimeout (see on_alarm), and the program's own time
    limit is restored after."""
    st = ST[0]
    if not st.armed:
        return repr(v)
    left = _getitimer(signal.ITIMER_REAL)[0]
    if left <= REPR_SECONDS:
        return repr(v)  # the program's own limit comes first
    st.repr_left = left
    st.in_repr = True
    _setitimer(signal.ITIMER_REAL, REPR_SECONDS, TIMER_INTERVAL)
    try:
        return repr(v)
    finally:
        if st.in_repr:
            st.in_repr = False
            spent = REPR_SECONDS - _getitimer(signal.ITIMER_REAL)[0]
            _setitimer(signal.ITIMER_REAL, max(left - spent, 0.001), TIMER_INTERVAL)


def saferepr(v):
    """repr(v), or a visible placeholder when repr raises. Memory addresses
    ("<list_iterator object at 0x7f...>") differ from run to run, so no model
    could predict them: they are masked as " at 0x..."."""
    stuck = ST[0].stuck
    try:
        if stuck:
            s = stuck.get(id(v))
            if s is not None and s is v:
                raise ReprTimeout()
        r = repr(v) if type(v) in ATOMS else timed_repr(v)
        if type(r) is not str:
            r = str.__str__(r)
        if " at 0x" in r:
            r = ADDRESS.sub(" at 0x...", r)
        return r
    except Control:
        raise
    except ReprTimeout:
        stuck[id(v)] = v  # kept alive, so the id is not reused
        try:
            name = type(v).__name__
        except BaseException:
            name = "?"
        return "<%s object: repr timed out>" % name
    except BaseException:
        try:
            name = type(v).__name__
        except BaseException:
            name = "?"
        return "<unprintable %s object>" % name


def build_repr(v, out, room, active):
    """Appends the pieces of repr(v) to out for a builtin container of atoms
    and builtin containers, stopping once it has built more than room
    characters; returns the room left (negative: stopped). Anything else in
    it raises Unbuilt: its repr runs code, which repr() itself must call."""
    t = type(v)
    if t in ATOMS:
        r = repr(v)
        out.append(r)
        return room - len(r)
    if t not in CONTAINERS:
        raise Unbuilt()
    k = id(v)
    if k in active:  # a container inside itself, as Py_ReprEnter renders it
        r = "[...]" if t is list else "{...}" if t is dict else "(...)" if t is tuple else t.__name__ + "(...)"
        out.append(r)
        return room - len(r)
    if not v:
        r = repr(v)
        out.append(r)
        return room - len(r)
    active.add(k)
    if t is list:
        out.append("[")
    elif t is tuple:
        out.append("(")
    elif t is frozenset:
        out.append("frozenset({")
    else:
        out.append("{")
    room -= len(out[-1])
    first = True
    if t is dict:
        for key, val in v.items():
            if not first:
                out.append(", ")
                room -= 2
            first = False
            room = build_repr(key, out, room, active)
            out.append(": ")
            room = build_repr(val, out, room - 2, active)
            if room < 0:
                return room
    else:
        for x in v:
            if not first:
                out.append(", ")
                room -= 2
            first = False
            room = build_repr(x, out, room, active)
            if room < 0:
                return room
    active.discard(k)
    end = "]" if t is list else ",)" if t is tuple and len(v) == 1 else ")" if t is tuple else "})" if t is frozenset else "}"
    out.append(end)
    return room - len(end)


def vrepr(v):
    """bound(saferepr(v)) with bounded work: a builtin container's repr is
    built piece by piece and stops after REPR_WORK characters. Below that it
    is exactly repr()'s text, bounded as usual; above, it keeps the same
    first bytes and its marker "...[+N+]" says at least N bytes were cut."""
    t = type(v)
    if t not in CONTAINERS:
        return bound(saferepr(v))
    if len(v) <= 32:  # the common small container of atoms: repr() itself, as fast and no riskier
        if t is dict:
            if all(type(k) in ATOMS and type(x) in ATOMS for k, x in v.items()):
                return bound(repr(v))
        elif all(type(x) in ATOMS for x in v):
            return bound(repr(v))
    out = []
    try:
        room = build_repr(v, out, REPR_WORK, set())
    except (Unbuilt, RecursionError):
        return bound(saferepr(v))
    text = "".join(out)
    if room >= 0:
        return bound(text)
    cut = bound(text)  # text is longer than MAX_REPR: "prefix...[+N]"
    return cut[:-1] + "+]"


def safestr(v):
    try:
        r = str(v)
        if type(r) is not str:
            r = str.__str__(r)
        return r
    except Control:
        raise
    except BaseException:
        return saferepr(v)


ATOMS = (str, int, float, bytes, complex, bool, type(None), range)


def immutable(v, depth=0):
    t = type(v)
    if t in ATOMS:
        return True
    if (t is tuple or t is frozenset) and depth < 8:
        for x in v:
            if not immutable(x, depth + 1):
                return False
        return True
    return False


class Sink(io.RawIOBase):
    """A write-only stream that keeps the first cap bytes written to it and
    counts all of them (n), so that each event can say how much the program
    had written before it."""

    def __init__(self, cap):
        self.buf = bytearray()
        self.cap = cap
        self.truncated = False
        self.n = 0

    def writable(self):
        return True

    def write(self, b):
        n = len(b)
        self.n += n
        room = self.cap - len(self.buf)
        if room > 0:
            self.buf += bytes(b[:room])
        if n > room:
            self.truncated = True
        return n


def forbid(name):
    def denied(*args, **kwargs):
        st = ST[0]
        if st.violation is None:
            st.violation = name
        raise SandboxViolation(name + " is disabled in the ndbg sandbox")

    denied.__name__ = name.rsplit(".", 1)[-1]
    return denied


def recursion_depth():
    """CPython's recursion counter (Python frames and C calls), read from the
    error of an impossible sys.setrecursionlimit; None if unreadable."""
    try:
        _setrecursionlimit(1)
    except RecursionError as e:
        msg = str(e)
        i = msg.find("depth ")
        if i >= 0:
            j = msg.find(":", i)
            try:
                return int(msg[i + 6:j])
            except ValueError:
                return None
    except BaseException:
        return None
    _setrecursionlimit(ST[0].real_limit)  # unreachable unless the depth was 0
    return None


def setrecursionlimit(n):
    """The program's sys.setrecursionlimit: sets the limit the program sees;
    while tracing, the interpreter's own limit stays above it."""
    st = ST[0]
    if st.real_limit > st.vis_limit:  # tracing
        real = max(n * 3, n + 500)
        _setrecursionlimit(real)
        st.real_limit = real
    else:
        _setrecursionlimit(n)
        st.real_limit = n
    st.vis_limit = n


def guarded(name, check, fn):
    """fn, refused (as a sandbox violation) when check(*args) is true."""
    def wrapper(*args, **kwargs):
        if check(*args, **kwargs):
            return forbid(name)()
        return fn(*args, **kwargs)

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def neuter():
    """Keeps the program's hands off the tracer's own machinery: tracing,
    the SIGALRM timer and the interpreter's exit. Everything else (process
    creation, files, sockets, rlimits) is the operating-system sandbox's to
    refuse (docs/security.md); a program that gets around these Python-level
    guards (say by re-importing posix) only loses its own trace."""
    for n in ("_exit", "abort"):
        setattr(os, n, forbid("os." + n))
    sys.settrace = forbid("sys.settrace")
    sys.setprofile = forbid("sys.setprofile")
    sys.setrecursionlimit = setrecursionlimit
    signal.signal = guarded("signal.signal(SIGALRM)", lambda sig, *a, **k: sig == signal.SIGALRM, signal.signal)
    signal.setitimer = guarded("signal.setitimer(ITIMER_REAL)", lambda which, *a, **k: which == signal.ITIMER_REAL,
                               signal.setitimer)
    signal.alarm = forbid("signal.alarm")


def on_alarm(signum, frame):
    st = ST[0]
    if st.armed:
        if st.in_repr:  # one value's repr ran out of time, not the program
            st.in_repr = False
            _setitimer(signal.ITIMER_REAL, max(st.repr_left - REPR_SECONDS, 0.001), TIMER_INTERVAL)
            raise ReprTimeout()
        st.timed_out = True
        raise Timeout()


def exc_line(tb):
    line = 0
    killed = ST[0].killed
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == PROGFILE and tb.tb_frame is not killed:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def exc_info(e):
    return {"type": type(e).__name__, "msg": bound(safestr(e)), "line": exc_line(e.__traceback__)}


def collect(*args, **kwargs):
    return args, kwargs


def parse_call(call, entry):
    """Parses "f(args)" and returns an expression evaluating to (args, kwargs)."""
    tree = ast.parse(call.strip(), "<call>", "eval")
    node = tree.body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError("call must be a call of a top-level function name, as in f(1, 2)")
    if node.func.id != entry:
        raise ValueError("call names %r, not the entry %r" % (node.func.id, entry))
    node.func = ast.Name(id="__ndbg_collect__", ctx=ast.Load())
    ast.fix_missing_locations(tree)
    return compile(tree, "<call>", "eval")


class NotLiteral(ValueError):
    """The no-exec mode cannot build the entry's call without running code."""


class Binders(ast.NodeVisitor):
    """Collects, in source order, the nodes that bind name in the module's
    scope (or change its attributes), without entering function and class
    bodies, which have scopes of their own."""

    def __init__(self, name):
        self.name = name
        self.found = []

    def visit_FunctionDef(self, node):
        if node.name == self.name:
            self.found.append(node)
        for d in node.decorator_list:
            self.visit(d)
        self.visit(node.args)  # defaults and annotations run in the module
        if node.returns is not None:
            self.visit(node.returns)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        if node.name == self.name:
            self.found.append(node)
        for x in node.decorator_list + node.bases + node.keywords:
            self.visit(x)

    def visit_Lambda(self, node):
        self.visit(node.args)

    def visit_comprehension(self, node):
        # The target binds in the comprehension's own scope.
        self.visit(node.iter)
        for x in node.ifs:
            self.visit(x)

    def visit_Name(self, node):
        if node.id == self.name and not isinstance(node.ctx, ast.Load):
            self.found.append(node)

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id == self.name and not isinstance(node.ctx, ast.Load):
            self.found.append(node)  # f.__defaults__ = ..., f.__code__ = ...
        self.generic_visit(node)

    def visit_alias(self, node):
        if node.name == "*" or (node.asname or node.name.split(".")[0]) == self.name:
            self.found.append(node)

    def visit_ExceptHandler(self, node):
        if node.name == self.name:
            self.found.append(node)
        self.generic_visit(node)

    def visit_MatchAs(self, node):
        if node.name == self.name:
            self.found.append(node)
        self.generic_visit(node)

    visit_MatchStar = visit_MatchAs

    def visit_MatchMapping(self, node):
        if node.rest == self.name:
            self.found.append(node)
        self.generic_visit(node)


def entry_def(tree, entry):
    """The top-level def that defines entry when the module has run, as far
    as its text says: the last statement binding the name must be a plain
    def at the top level (not decorated, not async), and no function may
    declare the name global."""
    b = Binders(entry)
    b.visit(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Global) and entry in node.names:
            raise NotLiteral("a function declares %r global (line %d) and may rebind it" % (entry, node.lineno))
    if not b.found:
        raise NotLiteral("the program defines no function %r" % entry)
    last = b.found[-1]
    if isinstance(last, ast.alias) and last.name == "*":
        raise NotLiteral("'from ... import *' (after the last def of %r) may rebind it" % entry)
    where = getattr(last, "lineno", 0)
    if isinstance(last, ast.AsyncFunctionDef):
        raise NotLiteral("%r (line %d) is a coroutine function: calling it runs none of its code" % (entry, where))
    if not isinstance(last, ast.FunctionDef) or last not in tree.body:
        raise NotLiteral("%r is last bound at line %d by something other than a top-level def, which only "
                         "running the module would resolve" % (entry, where))
    if last.decorator_list:
        raise NotLiteral("%r is decorated (line %d): the decorator would have to run" % (entry, last.decorator_list[0].lineno))
    return last


def literal(text, node, what):
    """ast.literal_eval of node, an expression of text; NotLiteral names it
    (what, and its source text) when it is no literal."""
    try:
        return ast.literal_eval(node)
    except RecursionError:
        raise NotLiteral("%s is %s" % (what, TOO_DEEP[3:]))
    except (ValueError, TypeError, SyntaxError, MemoryError) as e:
        seg = ast.get_source_segment(text, node) or "?"
        if len(seg) > 200:
            seg = seg[:200] + "..."
        why = "" if type(e) is ValueError else ": " + (safestr(e) or type(e).__name__)  # ValueError: "malformed node"
        raise NotLiteral("%s, %s, is not a literal (numbers, strings, bytes, tuples, lists, dicts, sets, "
                         "None, True, False)%s" % (what, seg, why))


def literal_call(source, code, entry, call):
    """The entry's call without running any program code: the module is
    parsed (entry_def) and compiled, never executed, and the call's
    arguments, and the defaults they leave to the entry, are evaluated by
    ast.literal_eval. Returns the call event's line and its locals as
    (name, value) pairs in f_locals' order, bound as CPython binds them;
    NotLiteral says what stands in the way."""
    fdef = entry_def(ast.parse(source, PROGFILE), entry)
    fcode = None
    for c in code.co_consts:
        if type(c) is type(code) and c.co_name == entry and c.co_firstlineno == fdef.lineno:
            fcode = c
    if fcode is None:
        raise NotLiteral("the def of %r at line %d is never reached (the compiler dropped it as dead code)" % (entry, fdef.lineno))
    if fcode.co_flags & GENERATOR_FLAGS:
        raise NotLiteral("%r is a generator function: calling it runs none of its code" % entry)
    node = ast.parse(call.strip(), "<call>", "eval").body
    text = call.strip()
    args, kwargs = [], {}
    for i, a in enumerate(node.args):
        if isinstance(a, ast.Starred):
            raise NotLiteral("argument %d, %s, unpacks a value: give its items" % (i + 1, ast.get_source_segment(text, a)))
        args.append(literal(text, a, "argument %d" % (i + 1)))
    for k in node.keywords:
        if k.arg is None:
            raise NotLiteral("%s unpacks a value: give its items as keyword arguments" % ast.get_source_segment(text, k))
        kwargs[k.arg] = literal(text, k.value, "argument %s" % k.arg)
    values = python_bind(fdef, entry, args, kwargs)
    a = fdef.args
    params = [p.arg for p in a.posonlyargs + a.args]
    defaults = dict(zip(params[len(params) - len(a.defaults):], a.defaults))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        if d is not None:
            defaults[p.arg] = d
    pairs = []
    for name, v in values.items():
        if v is UNSET:
            v = literal(source, defaults[name], "the default of %r" % name)
        pairs.append((name, v))
    return fcode.co_firstlineno, pairs


class CallMismatch(ValueError):
    """The call does not match the entry's parameters: CPython's TypeError."""


UNSET = object()  # a parameter the call left to its default


def python_bind(fdef, entry, args, kwargs):
    """Binds args and kwargs to the parameters of fdef (the entry's def) as
    CPython binds them, running nothing of the program: a stub with fdef's
    parameters (each default replaced by UNSET, annotations dropped) and no
    body but returning its locals is compiled and called, so that a call
    that does not match raises CPython's own TypeError (CallMismatch, in
    its words). Returns the parameters' values in f_locals' order."""
    stub = copy.copy(fdef)
    a = stub.args = copy.deepcopy(fdef.args)
    for p in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x is not None]:
        p.annotation = None
    a.defaults = [ast.Name(id="__ndbg_unset__", ctx=ast.Load()) for _ in a.defaults]
    a.kw_defaults = [None if d is None else ast.Name(id="__ndbg_unset__", ctx=ast.Load()) for d in a.kw_defaults]
    stub.decorator_list, stub.returns = [], None
    stub.body = [ast.Return(value=ast.Call(func=ast.Name(id="__ndbg_locals__", ctx=ast.Load()), args=[], keywords=[]))]
    mod = ast.fix_missing_locations(ast.Module(body=[stub], type_ignores=[]))
    ns = {"__builtins__": {}, "__ndbg_unset__": UNSET, "__ndbg_locals__": locals}
    exec(compile(mod, "<ndbg-binding>", "exec"), ns)
    try:
        return ns[fdef.name](*args, **kwargs)
    except TypeError as e:
        raise CallMismatch("calling %s would raise TypeError: %s" % (entry, safestr(e)))


TOO_DEEP = "an expression is too deeply nested to compile (CPython's compiler ran out of recursion depth)"
COMPILED = {}  # source -> code object: generated programs often repeat with new inputs


def compile_program(source):
    code = COMPILED.get(source)
    if code is None:
        code = compile(source, PROGFILE, "exec")
        if len(COMPILED) >= 512:
            COMPILED.clear()
        COMPILED[source] = code
    return code


def prepare(req, code, g, res):
    """Runs the module code (untraced) in g, finds the entry and evaluates
    the call's arguments: returns (fn, args, kwargs), or Nones with res
    saying why not."""
    entry = req["entry"]
    try:
        callcode = parse_call(req["call"], entry)
    except RecursionError:
        res["status"], res["msg"] = "setup", "bad call: " + TOO_DEEP
        return None, None, None
    except (SyntaxError, ValueError) as e:
        res["status"], res["msg"] = "setup", "bad call %r: %s" % (req["call"][:200], safestr(e))
        return None, None, None
    try:
        exec(code, g)
    except Control:
        raise
    except MemoryError:
        res["status"], res["msg"] = "memory", "MemoryError in module code"
        return None, None, None
    except BaseException as e:
        res["status"], res["msg"] = "setup", "module code raised %s" % bound(saferepr(e))
        res["exc"] = exc_info(e)
        return None, None, None
    fn = g.get(entry)
    if not callable(fn) or getattr(fn, "__code__", None) is None or fn.__code__.co_filename != PROGFILE:
        res["status"], res["msg"] = "setup", "entry %r is not a function of the program" % entry
        return None, None, None
    g["__ndbg_collect__"] = collect
    try:
        args, kwargs = eval(callcode, g)
    except Control:
        raise
    except MemoryError:
        res["status"], res["msg"] = "memory", "MemoryError evaluating the arguments"
        return None, None, None
    except BaseException as e:
        res["status"], res["msg"] = "setup", "arguments raised %s" % bound(saferepr(e))
        return None, None, None
    del g["__ndbg_collect__"]
    return fn, args, kwargs


def run_one(req):
    st = State()
    ST[0] = st
    res = {"t": "result", "id": req["id"], "status": "", "events": [], "ret": None,
           "exc": None, "stdout": "", "stdout_trunc": False, "stderr": "", "stderr_trunc": False,
           "msg": "", "line": 0}
    timeout = float(req["timeout"])
    max_events = int(req["max_events"])
    max_bytes = int(req["max_bytes"])
    entry = req["entry"]
    script = req["call"] == ""  # the whole module is traced, run as __main__

    # Written through to the sinks (no buffer between), so that the bytes
    # each event records as written before it are all there.
    sink = Sink(int(req["max_stdout"]))
    real = sys.__stdout__  # its encoding errors and line buffering, as a plain python3 on a pipe
    out = io.TextIOWrapper(sink, encoding="utf-8", errors=real.errors,
                           line_buffering=real.line_buffering, write_through=True)
    errsink = Sink(int(req["max_stdout"]))
    err = io.TextIOWrapper(errsink, encoding="utf-8", errors="backslashreplace", write_through=True)
    sys.stdout, sys.stderr = out, err
    sys.stdin = io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8")
    _setrecursionlimit(1000)

    events = []
    append = events.append
    frames = {}  # live program frame -> [invocation id, depth, stack depth, last reprs]
    cache = {}  # id(value) -> (value, bounded repr) for immutable values
    nbytes = [0]
    next_id = [0]
    written = [0, 0]  # stdout and stderr bytes as the last event recorded them
    top = 1 if script else 2  # the stack depth of the depth-0 frame
    modcode = [None]  # a script's module code object

    def brepr(v):
        t = type(v)
        if t in ATOMS or t is tuple or t is frozenset:
            k = id(v)
            c = cache.get(k)
            if c is not None and c[0] is v:
                return c[1]
            r = vrepr(v)
            if t in ATOMS or immutable(v):
                if len(cache) >= 65536:
                    cache.clear()
                cache[k] = (v, r)
            return r
        return vrepr(v)

    def emit(kind, frame, info, value):
        if len(events) >= max_events or nbytes[0] > max_bytes:
            st.capped = True
            raise Capped()
        flat = []
        code = frame.f_code
        size = 48 + len(code.co_name)  # the event's JSON, less its locals
        memo = None
        last = info[3]  # name -> repr last sent for this frame
        same = None
        i = 0
        loc = frame.f_locals
        if code is modcode[0]:  # a script's globals, less what the tracer put there
            loc = {k: v for k, v in loc.items() if k not in INJECTED}
        for name, v in loc.items():
            t = type(v)
            if t in ATOMS or t is tuple or t is frozenset:
                r = brepr(v)
            else:
                if memo is None:
                    memo = {}
                k = id(v)
                r = memo.get(k)
                if r is None:
                    r = memo[k] = vrepr(v)
            flat.append(name)
            if last.get(name) == r:
                # Unchanged since this frame's last event: sent as "" and
                # listed in "u", so big unchanged reprs cross the pipe once.
                flat.append("")
                if same is None:
                    same = []
                same.append(i)
                size += len(name) + 10
            else:
                last[name] = r
                flat.append(r)
                size += len(name) + len(r) + 6
            i += 1
        ev = {"e": kind, "l": frame.f_lineno or code.co_firstlineno, "d": info[1], "f": info[0],
              "n": code.co_name, "a": flat}
        if same is not None:
            ev["u"] = same
        if value is not None:
            ev["r"] = value
            size += len(value)
        if sink.n != written[0]:  # sent only when it changed
            written[0] = ev["o"] = sink.n
        if errsink.n != written[1]:
            written[1] = ev["x"] = errsink.n
        nbytes[0] += size
        append(ev)

    def killer(frame, event, arg):
        # Installed for one call event by tracefn: fails the frame's call with
        # the RecursionError the program would see, without disabling tracing.
        _setprofile(None)
        if frame is st.kill_frame and event == "call":
            st.kill_frame = None
            st.killed = frame
            raise RecursionError("maximum recursion depth exceeded")
        return None

    def localfn(frame, event, arg):
        if st.done:
            return None
        info = frames.get(frame)
        if info is None:
            return None
        if event == "line":
            emit(EV_LINE, frame, info, None)
        elif event == "return":
            emit(EV_RETURN, frame, info, brepr(arg))
            if not frame.f_code.co_flags & GENERATOR_FLAGS:
                del frames[frame]
                if info[1] == 0:
                    st.done = True
        elif event == "exception":
            emit(EV_EXCEPTION, frame, info, brepr(arg[1]))
        return localfn

    def tracefn(frame, event, arg):
        if event != "call" or st.done or frame.f_code.co_filename != PROGFILE:
            return None
        f = frame.f_back
        steps = 1
        while f is not None:
            parent = frames.get(f)
            if parent is not None:
                break
            f = f.f_back
            steps += 1
        if f is None:
            # The entry runs as if called from module level; a script's
            # module frame is the first on the stack.
            depth, sdepth = 0, top
            counter = recursion_depth()
            if counter is not None:
                st.base = counter - top
        else:
            depth, sdepth = parent[1] + 1, parent[2] + steps
        # The program's recursion depth as CPython counts it untraced: frames
        # plus C calls (read only when deep: each read costs an exception).
        rdepth = sdepth
        if sdepth > st.vis_limit >> 3 and st.base is not None:
            counter = recursion_depth()
            if counter is not None:
                rdepth = counter - st.base
        if rdepth > st.vis_limit:
            st.kill_frame = frame
            _setprofile(killer)
            return None
        info = frames.get(frame)
        if info is None:
            next_id[0] += 1
            info = frames[frame] = [next_id[0], depth, sdepth, {}]
        else:
            info[1], info[2] = depth, sdepth
        emit(EV_CALL, frame, info, None)
        return localfn

    try:
        st.armed = True
        _setitimer(signal.ITIMER_REAL, timeout, TIMER_INTERVAL)
        try:
            try:
                code = compile_program(req["source"])
            except SyntaxError as e:
                res["status"], res["msg"], res["line"] = "syntax", bound(safestr(e.msg)), e.lineno or 0
                return res
            except ValueError as e:  # null bytes
                res["status"], res["msg"] = "syntax", bound(safestr(e))
                return res
            except RecursionError:  # CPython's compiler recursing on a deep expression
                res["status"], res["msg"] = "syntax", TOO_DEEP
                return res
            if req.get("no_exec"):
                if script:
                    res["status"], res["msg"] = "setup", "no-exec needs an entry call"
                    return res
                try:
                    parse_call(req["call"], entry)  # the same errors as a run's
                except RecursionError:
                    res["status"], res["msg"] = "setup", "bad call: " + TOO_DEEP
                    return res
                except (SyntaxError, ValueError) as e:
                    res["status"], res["msg"] = "setup", "bad call %r: %s" % (req["call"][:200], safestr(e))
                    return res
                # Nothing of the program runs: its call event, from its text.
                try:
                    line, pairs = literal_call(req["source"], code, entry, req["call"])
                except RecursionError:
                    res["status"], res["msg"] = "setup", "no-exec: " + TOO_DEEP
                    return res
                except MemoryError:
                    res["status"], res["msg"] = "memory", "MemoryError parsing the program"
                    return res
                except CallMismatch as e:
                    res["status"], res["msg"] = "setup", bound(safestr(e), 1024, 1000)
                    return res
                except (SyntaxError, ValueError) as e:
                    res["status"], res["msg"] = "setup", "no-exec: " + bound(safestr(e), 1024, 1000)
                    return res
                flat = []
                for name, v in pairs:
                    flat += [name, vrepr(v)]
                append({"e": EV_CALL, "l": line, "d": 0, "f": 1, "n": entry, "a": flat})
                res["status"] = "truncated"  # stopped at the call, as a run with max_events 1
                return res
            g = {"__name__": "__main__", "__builtins__": builtins}
            if script:
                modcode[0] = code
                fn, args, kwargs = exec, (code, g), {}
            else:
                fn, args, kwargs = prepare(req, code, g, res)
                if fn is None:
                    return res

            st.real_limit = max(st.vis_limit * 3, st.vis_limit + 500)
            _setrecursionlimit(st.real_limit)
            ok = False
            _settrace(tracefn)
            try:
                value = fn(*args, **kwargs)
                ok = True
            except Control:
                raise
            except BaseException as e:
                value = e
            finally:
                tracer = _gettrace()
                _settrace(None)
                _setprofile(None)
                _setrecursionlimit(st.vis_limit)
                st.real_limit = st.vis_limit
            if st.violation is None and not st.timed_out and not st.capped and tracer is not tracefn:
                res["status"], res["msg"] = "tracer", "tracing was lost (the tracer hit a limit)"
                return res
            if ok:
                res["status"], res["ret"] = "returned", bound(saferepr(value), max_bytes, max(0, max_bytes - 32))
            elif isinstance(value, MemoryError):
                res["status"], res["msg"] = "memory", "MemoryError"
            elif not events and not script:
                # Raised before the entry's first event: binding the
                # arguments to its parameters failed (f(1, 2) for def
                # f(x)), in Python's own words.
                res["status"], res["exc"] = "setup", exc_info(value)
                res["msg"] = "calling %s raised %s: %s" % (entry, type(value).__name__, res["exc"]["msg"])
            else:
                res["status"], res["exc"] = "raised", exc_info(value)
        except Timeout:
            pass
        except Capped:
            pass
        except SandboxViolation:
            pass
        finally:
            st.armed = False
            _setitimer(signal.ITIMER_REAL, 0)
    except Control:  # a late alarm
        pass
    finally:
        _settrace(None)
        _setprofile(None)
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        for stream in (out, err):
            try:
                stream.flush()
            except BaseException:
                pass
        res["stdout"] = base64.b64encode(bytes(sink.buf)).decode("ascii")
        res["stdout_trunc"] = sink.truncated
        res["stderr"] = base64.b64encode(bytes(errsink.buf)).decode("ascii")
        res["stderr_trunc"] = errsink.truncated
        res["events"] = events
        # Flags set by hooks win over what the program made of them.
        if st.violation is not None:
            res["status"], res["msg"] = "forbidden", st.violation
            res["ret"] = res["exc"] = None
        elif st.capped:
            res["status"], res["ret"], res["exc"] = "truncated", None, None
        elif st.timed_out:
            res["status"], res["ret"], res["exc"] = "timeout", None, None
    return res


def make_signer(key):
    """Returns sign(data) -> b"HEX-HMAC-SHA256 data\\n" for the Go side to
    check. The key lives only inside OpenSSL's HMAC object, reachable from
    this closure: a program that digs through the interpreter (gc, frames,
    /proc/self/mem) can still find it; docs/security.md says so."""
    import hmac
    mac = hmac.new(key, digestmod="sha256")

    def sign(data):
        m = mac.copy()
        m.update(data)
        return m.hexdigest().encode("ascii") + b" " + data + b"\n"

    return sign


def main():
    mode = sys.argv[1]
    memory = int(sys.argv[2])
    cpu = int(sys.argv[3])
    # Descriptors ndbg's own caller leaked to it (not close-on-exec) are no
    # business of the program's: only 0-4 stay (fd 4 closes after the
    # request in mode single).
    os.closerange(5, 1 << 30)
    inp = os.fdopen(4, "rb")
    sign = make_signer(bytes.fromhex(inp.readline().decode("ascii")))
    # Hard limits: in the sandbox the program has no capability to raise them.
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    if cpu > 0:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))
    resource.setrlimit(resource.RLIMIT_NPROC, (256, 256))
    signal.signal(signal.SIGALRM, on_alarm)
    out = os.fdopen(3, "wb")
    out.write(sign(json.dumps({"t": "hello", "version": sys.version}).encode("ascii")))
    out.flush()
    _exit = os._exit
    neuter()
    pristine = dict(builtins.__dict__)
    home = os.getcwd()
    while True:
        line = inp.readline()
        if not line:
            break
        req = json.loads(line)
        if mode == "single":
            inp.close()
        res = run_one(req)
        # Threads the program left running would act inside the next one.
        retire = mode == "batch" and _thread._count() > 0
        if retire:
            res["retire"] = True
        try:
            data = json.dumps(res).encode("ascii")
        except MemoryError:
            data = json.dumps({"t": "result", "id": res["id"], "status": "memory", "events": [],
                               "ret": None, "exc": None, "stdout": "", "stdout_trunc": False,
                               "stderr": "", "stderr_trunc": False, "msg": "MemoryError encoding the result", "line": 0,
                               "retire": retire}).encode("ascii")
        out.write(sign(data))
        out.flush()
        del res, data
        if retire:
            _exit(0)
        try:
            if os.getcwd() != home:
                os.chdir(home)
        except OSError:
            pass
        if builtins.__dict__ != pristine:  # a program rebound a builtin
            builtins.__dict__.clear()
            builtins.__dict__.update(pristine)
        if mode == "single":
            break


if __name__ == "__main__":
    main()
