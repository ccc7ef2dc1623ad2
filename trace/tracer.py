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
INJECTED = frozenset(("__name__", "__file__", "__builtins__"))  # a script's globals that the tracer set
# The module's __name__ when a call is traced: the module is imported, as a
# test harness imports the module it tests, so an `if __name__ ==
# "__main__":` block does not run at setup (trace.CallModule). A whole
# script runs as __main__.
CALL_MODULE = "program"


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
_os_exit = os._exit
_signal = signal.signal


class State:
    """Per-program state shared by the trace function and the sandbox hooks."""

    def __init__(self):
        self.armed = False
        self.in_repr = False
        self.repr_left = 0.0  # the program's time left when a timed repr started
        self.stuck = {}  # id -> value whose repr timed out: not tried again
        self.timed_out = False
        self.setup = False  # a live program's module code and arguments run (SIGXCPU raises Timeout)
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
    signal.setitimer = guarded("signal.setitimer(ITIMER_REAL)", lambda which, *a, **k: which == signal.ITIMER_REAL,
                               signal.setitimer)
    signal.alarm = forbid("signal.alarm")
    sigs = (signal.SIGALRM, signal.SIGXCPU)
    signal.signal = guarded("signal.signal(SIGALRM or SIGXCPU)", lambda sig, *a, **k: sig in sigs, _signal)


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
            g = {"__name__": "__main__" if script else CALL_MODULE, "__file__": PROGFILE, "__builtins__": builtins}
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



# ---------------------------------------------------------------------------
# Live mode: the program runs under the tracer and stops where Go asks, as a
# debugger does (trace/live.go). Events are counted and numbered exactly as
# run_one numbers them (the same depth, frame and recursion bookkeeping), so
# a live stop at event i is trace.Run's event i; nothing is recorded but a
# compact log of each event's kind, depth and line (LOG_CAP events), from
# which the inverse actions' targets are found. Reprs are made only at stops.
#
# Protocol (after the key and the hello, as in the other modes), one JSON
# line each way:
#   Go -> tracer: {"cmd": "start", "source", "entry", "call", "max_stdout",
#                  "cpu", "stop": CRITERIA}: set up (module code, the call's
#                  arguments) and run to the first stop;
#                 {"cmd": "run", "stop": CRITERIA, "interrupt": true?}:
#                  resume to the next stop (with interrupt: stop at the
#                  first event, an interrupt made at the stop);
#                 {"cmd": "eval", "level", "expr", "mode"}: an expression or
#                  statement in a frame (level 0: the current one);
#                 {"cmd": "frames"}; {"cmd": "back", ...}: an inverse
#                  action's target; {"cmd": "interrupt"}: stop at the next
#                  event (read while the program runs); {"cmd": "quit"};
#                 {"cmd": "input", "data": TEXT or null}: the answer to an
#                  input request.
#   tracer -> Go: {"t": "stop", ...}, {"t": "end", ...}, {"t": "eval", ...},
#                 {"t": "frames", ...}, {"t": "back", ...}, {"t": "error", ...};
#                 {"t": "input", output...}: while a resume runs, the program
#                  reads its stdin past what it has (LiveStdin).
# CRITERIA is {"any", "index", "le", "ret", "lt", "lines", "digest"}: stop at
# any event, at event number index, at depth <= le, at a return at depth
# ret, at depth < lt, or at a line event on one of lines: the first event
# that meets any of them; or {"pdb": "step", "next", "until" or "return",
# "level", "line", "lines"}: pdb's step, next, until (to a line >= line) or
# return by bdb's rules (pdb_check).
LOG_CAP = 50_000_000  # events whose kind, depth and line are kept (8 bytes each)
EVAL_SECONDS = 10.0  # wall-clock budget of one expression at a stop (pyeval.Timeout)
VALUE_CAP = 1 << 20  # characters of an expression's value sent back
LIVE_LINE_CAP = 4 << 20  # bytes of one reply; longer replies say so instead


def cut_text(s, cap=VALUE_CAP):
    if len(s) <= cap:
        return s
    return s[:cap] + "...[+%d characters]" % (len(s) - cap)


def timed_call(fn, seconds):
    """fn() within seconds of wall-clock time: past that, ReprTimeout is
    raised into it (on_alarm), and re-raised every TIMER_INTERVAL while it
    catches it. The live program's own timer is effectively endless."""
    st = ST[0]
    left = _getitimer(signal.ITIMER_REAL)[0]
    st.repr_left = left
    st.in_repr = True
    _setitimer(signal.ITIMER_REAL, seconds, TIMER_INTERVAL)
    try:
        return fn()
    finally:
        st.in_repr = False
        _setitimer(signal.ITIMER_REAL, max(left, 1.0), TIMER_INTERVAL)


def error_line(e):
    """pdb's one-line error, "NameError: name 'x' is not defined"."""
    import traceback
    try:
        return traceback.format_exception_only(type(e), e)[-1].strip()
    except BaseException:
        return type(e).__name__


class LiveStdin(io.TextIOBase):
    """A live program's sys.stdin: each line it reads is asked for (ask()
    returns a string of whole lines, or None at the end), so input()
    reads what the debugger's user types, as under pdb."""

    def __init__(self, ask):
        self._ask = ask
        self._buf = ""
        self._eof = False

    def readable(self):
        return True

    def _fill(self, need_line, size):
        while not self._eof and (size < 0 or len(self._buf) < size) and not (need_line and "\n" in self._buf):
            data = self._ask()
            if data is None:
                self._eof = True
            else:
                self._buf += data

    def _take(self, n):
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def readline(self, size=-1):
        size = -1 if size is None else int(size)
        self._fill(True, size)
        j = self._buf.find("\n")
        n = len(self._buf) if j < 0 else j + 1
        if size >= 0:
            n = min(n, size)
        return self._take(n)

    def read(self, size=-1):
        size = -1 if size is None else int(size)
        self._fill(False, size)
        return self._take(len(self._buf) if size < 0 else size)

    def isatty(self):
        return False


def live(inp, chan, sign, cpu_hard):
    """Serves one live session on inp (requests) and chan (signed replies);
    cpu_hard is the session's CPU time in seconds (the hard RLIMIT_CPU),
    and the start request's "cpu" the budget of each resume (the soft
    limit, which stops the program rather than killing it)."""
    import _queue
    from array import array
    cmdq = _queue.SimpleQueue()
    # Why to stop at the next event: "cpu", or the number of the resume an
    # interrupt was sent during (an interrupt read after its resume ended
    # does not stop the next one).
    intr = [None]
    runs_read = [0]  # resumes (start, run) the reader has passed on

    def reader():
        # Reads requests while the program runs, so that an interrupt gets
        # through; everything else waits in cmdq for the next stop.
        while True:
            try:
                line = inp.readline()
            except BaseException:
                line = b""
            if not line:
                cmdq.put(None)
                return
            try:
                c = json.loads(line)
            except BaseException:
                c = {"cmd": "bad"}
            if type(c) is dict and c.get("cmd") == "interrupt":
                intr[0] = runs_read[0]
                continue
            if type(c) is dict and c.get("cmd") in ("start", "run"):
                runs_read[0] += 1
            cmdq.put(c)

    def send(obj):
        try:
            data = json.dumps(obj).encode("ascii")
        except MemoryError:
            data = json.dumps({"t": "error", "msg": "MemoryError encoding a reply"}).encode("ascii")
        if len(data) > LIVE_LINE_CAP:
            data = json.dumps({"t": "error", "msg": "a reply of %d bytes is over the limit of %d" % (len(data), LIVE_LINE_CAP)}).encode("ascii")
        chan.write(sign(data))
        chan.flush()

    def on_xcpu(signum, frame):
        st = ST[0]
        if st is not None and st.setup:
            # Module code or the call's arguments, untraced: no event
            # would ever see the stop (live_session's prepare ends it).
            raise Timeout()
        intr[0] = "cpu"

    _signal(signal.SIGXCPU, on_xcpu)

    budget = [0]

    def renew_cpu():
        # The CPU budget of the next resume: the soft limit moves on from
        # what was used so far (SIGXCPU then stops the program at its next
        # event); the hard limit, the whole session's, stays.
        cpu_budget = budget[0]
        if cpu_budget <= 0:
            return
        ru = resource.getrusage(resource.RUSAGE_SELF)
        used = int(ru.ru_utime + ru.ru_stime) + 1
        soft = used + cpu_budget
        if cpu_hard > 0:
            soft = min(soft, cpu_hard)
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (soft, cpu_hard if cpu_hard > 0 else resource.RLIM_INFINITY))
        except (ValueError, OSError):
            pass

    _thread.start_new_thread(reader, ())
    first = cmdq.get()
    if first is None:
        return
    if first.get("cmd") != "start":
        send({"t": "error", "msg": "the first request must be start"})
        return
    budget[0] = int(first.get("cpu", 0))
    live_session(first, cmdq, intr, send, renew_cpu, array)


def live_session(req, cmdq, intr, send, renew_cpu, array):
    st = State()
    ST[0] = st
    entry = req["entry"]
    script = req["call"] == ""
    sink = Sink(int(req["max_stdout"]))
    real = sys.__stdout__
    out = io.TextIOWrapper(sink, encoding="utf-8", errors=real.errors,
                           line_buffering=real.line_buffering, write_through=True)
    errsink = Sink(int(req["max_stdout"]))
    err = io.TextIOWrapper(errsink, encoding="utf-8", errors="backslashreplace", write_through=True)
    sys.stdout, sys.stderr = out, err
    _setrecursionlimit(1000)

    def ask_input():
        """The next line of the program's standard input, from Go (the
        debugger's user, or what an earlier run of the session was given,
        fed back); None at its end."""
        msg = {"t": "input"}
        msg.update(output())
        send(msg)
        while True:
            c = cmdq.get()
            if c is None:
                _os_exit(0)  # the debugger is gone
            if type(c) is dict and c.get("cmd") == "input":
                d = c.get("data")
                return d if type(d) is str and d else None

    sys.stdin = LiveStdin(ask_input)

    # The log: one 64-bit entry per event, (depth * 4 + kind - 1) << 32 |
    # line, appended by one C call (what a replay spends most of its time
    # on, with the trace call itself).
    log = array("q")
    logapp = log.append
    frames = {}  # live program frame -> [invocation id, depth, stack depth, last reprs, call line]
    next_id = [0]
    count = 0  # events so far: the next event's number
    # The current resume's criteria as the line events' filter tests them
    # inline (set_stop): a line event goes on to maybe_stop, whose check is
    # exact, when its number is stop_i, its depth <= stop_le or its line in
    # stop_lines (a superset of the line events that check accepts).
    stop_i, stop_le, stop_lines = -1, -1, frozenset()
    target_i = -1  # the criteria's own index (stop_i is LOG_CAP until the log is full)
    run_no = [1]  # the resume in progress (the start is the first)
    top = 1 if script else 2
    modcode = [None]
    sent = [0, 0]  # stdout and stderr bytes sent so far
    check = [None]  # the stop test of the current resume: fn(i, kind, depth, line, info, arg)
    want_digest = [False]
    cur_kind = [0]  # the kind of the event stopped at

    def digest(k):
        """SHA-256 of the log's first k events: a replay that took the same
        path has the same."""
        import hashlib
        h = hashlib.sha256()
        h.update(memoryview(log)[:k].cast("B"))
        return h.hexdigest()

    def output():
        o = {"o": sink.n, "x": errsink.n}
        o["so"] = base64.b64encode(bytes(sink.buf[sent[0]:])).decode("ascii")
        o["se"] = base64.b64encode(bytes(errsink.buf[sent[1]:])).decode("ascii")
        o["ot"], o["xt"] = sink.truncated, errsink.truncated
        sent[0], sent[1] = len(sink.buf), len(errsink.buf)
        return o

    def make_check(c, fs):
        # The test runs at every event: the common criteria get tests of
        # their own, without the others' comparisons.
        if c.get("pdb"):
            return pdb_check(c, fs)
        if c.get("any"):
            return lambda i, k, d, l, info=None, arg=None, frame=None: True
        idx = int(c.get("index", -1))
        le = int(c.get("le", -1))
        ret = int(c.get("ret", -1))
        lt = int(c.get("lt", -1))
        lines = frozenset(int(x) for x in c.get("lines") or ())
        if le < 0 and ret < 0 and lt < 0:
            if not lines:
                return lambda i, k, d, l, info=None, arg=None, frame=None: i == idx
            if idx < 0:
                return lambda i, k, d, l, info=None, arg=None, frame=None: k == EV_LINE and l in lines

        def test(i, k, d, l, info=None, arg=None, frame=None):
            return (i == idx or d <= le or (k == EV_RETURN and d == ret) or d < lt
                    or (k == EV_LINE and l in lines))
        return test

    def internal_stop(frame, arg):
        """The StopIteration without a traceback that a generator's frame
        sees when a subiterator that yield from runs ends: bdb's
        dispatch_exception passes over it where it would stop."""
        return (frame is not None and bool(frame.f_code.co_flags & GENERATOR_FLAGS)
                and arg is not None and arg[0] is StopIteration and arg[2] is None)

    def pdb_step(i, k, d, l, info=None, arg=None, frame=None):
        """pdb's step (set_step: no stop frame): every event stops but
        internal_stop's exceptions."""
        if k == EV_EXCEPTION and internal_stop(frame, arg):
            return None
        return "stop"

    def pdb_check(c, fs):
        """pdb's step (c["pdb"] == "step"), next ("next"), until ("until",
        to a line >= c["line"]) or return ("return") from the current stop,
        by bdb's rules (CPython 3.11 Lib/bdb.py): set_step clears the stop
        frame; set_next, set_until and set_return set stopframe,
        returnframe and stoplineno, and dispatch_* stop where stop_here
        says (in the stop frame, at a line >= stoplineno), except that with
        a stopframe set a generator's call and return events are ignored
        (so next at a yield goes on to the generator's next resumption), an
        internal StopIteration in a generator's frame never stops
        (internal_stop), and a StopIteration or GeneratorExit in another
        frame stops when the stopframe is a generator. Breakpoint lines
        stop too (break_here); such a stop that pdb's own rule did not make
        answers why "break". The test gets the event's frame info, for an
        exception its (type, value, traceback), and the frame."""
        lines = frozenset(int(x) for x in c.get("lines") or ())
        mode = c["pdb"]
        if mode == "step" or not fs:
            return pdb_step
        level = min(max(int(c.get("level", 0)), 0), len(fs) - 1)  # pdb's curframe: up/down move it
        f0 = fs[level][0]
        if mode in ("next", "until") and level == 0 and cur_kind[0] == EV_RETURN:
            # set_next or set_until at a return stop: dispatch_return then
            # clears the stop info (stopframe is the returning frame), a step.
            return pdb_step
        if mode == "next":
            sf, rf, sl = f0, None, 0
        elif mode == "until":
            sf, rf, sl = f0, f0, max(int(c.get("line", 0)), 0)
        elif f0.f_code.co_flags & GENERATOR_FLAGS:
            sf, rf, sl = f0, None, -1
        else:
            sf, rf, sl = f0.f_back, f0, 0
        sfinfo = frames.get(sf) if sf is not None else None
        rfinfo = frames.get(rf) if rf is not None else None
        sfgen = sf is not None and bool(sf.f_code.co_flags & GENERATOR_FLAGS)
        rfgen = rf is not None and bool(rf.f_code.co_flags & GENERATOR_FLAGS)
        here = sfinfo is not None and sl != -1  # stop_here(stopframe), but its line

        def test(i, k, d, l, info=None, arg=None, frame=None):
            if k == EV_LINE:
                if here and info is sfinfo and l >= sl:
                    return "stop"
                return "break" if l in lines else None
            if k == EV_RETURN:
                if info is not None and ((here and info is sfinfo and l >= sl and not sfgen) or (info is rfinfo and not rfgen)):
                    return "stop"
                return None
            if k == EV_EXCEPTION:
                if here and info is sfinfo and l >= sl:
                    if not internal_stop(frame, arg):
                        return "stop"
                    return None
                if info is not sfinfo and sfgen and arg is not None and arg[0] in (StopIteration, GeneratorExit):
                    return "stop"
            return None
        return test

    def set_stop(c, fs=()):
        nonlocal stop_i, stop_le, stop_lines, target_i
        if not (c.get("pdb") and c.get("again")):  # again: the previous pdb rule, its stop frame kept
            check[0] = make_check(c, fs)
        target_i = stop_i = int(c.get("index", -1))
        if logapp is not nolog and (stop_i < 0 or stop_i > LOG_CAP):
            stop_i = LOG_CAP  # where maybe_stop turns the full log off, then sets target_i
        stop_lines = frozenset(int(x) for x in c.get("lines") or ())
        if c.get("any") or c.get("pdb"):
            stop_le = 1 << 30  # every line event: check decides
        else:
            stop_le = max(int(c.get("le", -1)), int(c.get("lt", -1)) - 1)  # d < lt: d <= lt - 1
        want_digest[0] = bool(c.get("digest"))
        renew_cpu()

    def flat_locals(frame, info, loc=None):
        flat = []
        if loc is None:
            loc = frame.f_locals
        if frame.f_code is modcode[0]:
            loc = {k: v for k, v in loc.items() if k not in INJECTED}
        for name, v in loc.items():
            flat.append(name)
            flat.append(vrepr(v))
        return flat

    def program_frames(frame):
        """The program's frames on the stack from frame outwards."""
        fs = []
        f = frame
        while f is not None:
            info = frames.get(f)
            if info is not None:
                fs.append((f, info))
            f = f.f_back
        return fs

    def frame_locals(fs, locs, j):
        """Frame j's locals dict, read once per stop as pdb reads it when it
        selects a frame: reading f_locals again would overwrite what a
        statement changed in it from the frame's own variables (the stopped
        frame's changes reach the frame when it resumes; a caller's are
        seen until then, as in pdb)."""
        loc = locs.get(j)
        if loc is None:
            loc = locs[j] = fs[j][0].f_locals
        return loc

    def frames_reply(fs, locs):
        out = []
        for j in range(len(fs) - 1, -1, -1):
            f, info = fs[j]
            out.append({"n": f.f_code.co_name, "l": f.f_lineno or f.f_code.co_firstlineno, "c": info[4],
                        "f": info[0], "d": info[1], "a": flat_locals(f, info, frame_locals(fs, locs, j))})
        return out

    def evaluate(c, fs, locs):
        """Runs the user's expression or statement in a frame as pdb does:
        the frame's globals and locals (the current frame's locals dict is
        the one its trace call writes back, so !x = 1 sticks)."""
        level = int(c.get("level", 0))
        mode = c.get("mode", "p")
        expr = c.get("expr", "")
        if level < 0 or level >= len(fs):
            return {"t": "eval", "error": "no frame %d here" % level}
        f, info = fs[level]
        loc = frame_locals(fs, locs, level)
        glb = f.f_globals
        captured = Sink(VALUE_CAP)
        cap = io.TextIOWrapper(captured, encoding="utf-8", errors="backslashreplace", write_through=True)

        def run():
            if mode == "exec":
                code = compile(expr + "\n", "<stdin>", "single")
                saved = sys.stdout, sys.displayhook
                sys.stdout = cap

                def hook(v):
                    if v is not None:
                        cap.write(repr(v) + "\n")
                sys.displayhook = hook
                try:
                    exec(code, glb, loc)
                finally:
                    sys.stdout, sys.displayhook = saved
                return None
            if mode == "args":
                code = f.f_code
                n = code.co_argcount + code.co_kwonlyargcount
                if code.co_flags & 0x04:
                    n += 1
                if code.co_flags & 0x08:
                    n += 1
                lines = []
                for name in code.co_varnames[:n]:
                    if name in loc:
                        lines.append("%s = %s" % (name, repr(loc[name])))
                    else:
                        lines.append("%s = *** undefined ***" % name)
                return "\n".join(lines)
            v = eval(compile(expr, "<string>", "eval"), glb, loc)
            if mode == "pp":
                import pprint
                return pprint.pformat(v)
            if mode == "bool":
                return "True" if v else "False"
            if mode == "whatis":
                try:
                    return "Method %s" % v.__func__.__code__.co_name
                except BaseException:
                    pass
                try:
                    if v.__code__:
                        return "Function %s" % v.__code__.co_name
                except BaseException:
                    pass
                if v.__class__ is type:
                    return "Class %s.%s" % (v.__module__, v.__qualname__)
                return repr(type(v))
            return repr(v)

        try:
            value = timed_call(run, float(c.get("seconds", EVAL_SECONDS)))
        except Control:
            raise
        except ReprTimeout:
            return {"t": "eval", "error": "no answer within %g s" % float(c.get("seconds", EVAL_SECONDS)),
                    "output": bytes(captured.buf).decode("utf-8", "replace")}
        except BaseException as e:
            return {"t": "eval", "error": cut_text(error_line(e)), "output": bytes(captured.buf).decode("utf-8", "replace")}
        r = {"t": "eval", "output": bytes(captured.buf).decode("utf-8", "replace")}
        if value is not None:
            r["value"] = cut_text(value if type(value) is str else str.__str__(value))
        return r

    def back(c):
        """The target of an inverse action from position pos (the number of
        events, End, once finished), by statetree's rules, from the log."""
        n = min(len(log), LOG_CAP)
        if n < count:
            return {"t": "error", "msg": "the run is past the %d events whose history is kept: it cannot step back" % LOG_CAP}
        pos = int(c["pos"])
        kind = c["kind"]
        lines = frozenset(int(x) for x in c.get("lines") or ())
        bps = frozenset(int(x) for x in c.get("bps") or ())
        end = count if st.done else -1
        # the log's kinds and depths, and lines, as two int views
        ints = memoryview(log).cast("B").cast("i")
        lo, hi = (0, 1) if sys.byteorder == "little" else (1, 0)
        logl, logk = ints[lo::2], ints[hi::2]
        if pos <= 0 or pos > n or (pos == n and pos != end):
            return {"t": "error", "msg": "position %d out of range" % pos}

        def prev_line(t, ls):
            if not ls:
                return 0
            j = t - 1
            while j > 0:
                if logk[j] & 3 == 1 and logl[j] in ls:
                    return j
                j -= 1
            return 0

        if kind == "inv_step_into":
            k = pos - 1
        elif kind == "inv_step_over":
            if pos == end:
                j = pos - 1
                while j > 0 and logk[j] >> 2 != 0:
                    j -= 1
                k = j
            else:
                d = logk[pos] >> 2
                j = pos - 1
                while j > 0 and logk[j] >> 2 > d:
                    j -= 1
                k = max(j, 0)
        elif kind == "inv_step_return":
            if pos == end:
                k = 0
            else:
                d = logk[pos] >> 2
                want = d - 1 if logk[pos] & 3 == 0 else d  # a call: the caller's activation
                j = pos - 1 if logk[pos] & 3 == 0 else pos
                if want < 0:
                    j = 0
                while j > 0 and logk[j] != want * 4:
                    j -= 1
                k = max(j, 0)
        elif kind in ("inv_breakpoint", "inv_continue"):
            k = prev_line(pos, lines)
        else:
            return {"t": "error", "msg": "unknown inverse action %r" % kind}
        if bps:
            k = max(k, prev_line(pos, bps))
        return {"t": "back", "i": k, "h": digest(k + 1)}

    def serve(fs, curloc):
        """Answers requests at a stop until one resumes the program."""
        locs = {} if curloc is None else {0: curloc}
        while True:
            c = cmdq.get()
            if c is None:
                _os_exit(0)  # the debugger is gone: nothing the program catches
            cmd = c.get("cmd") if type(c) is dict else None
            if cmd == "run":
                if st.done:
                    send({"t": "error", "msg": "the program has finished"})
                    continue
                run_no[0] += 1
                set_stop(c.get("stop") or {}, fs)
                if c.get("interrupt"):  # made at the stop: the resume's first event stops
                    intr[0] = run_no[0]
                return
            if cmd == "eval":
                send(evaluate(c, fs, locs))
            elif cmd == "frames":
                send({"t": "frames", "frames": frames_reply(fs, locs)})
            elif cmd == "back":
                send(back(c))
            elif cmd == "quit":
                _os_exit(0)
            else:
                send({"t": "error", "msg": "unknown request %r" % (cmd,)})

    def stop(frame, info, kind, value, i, why):
        cur_kind[0] = kind
        code = frame.f_code
        loc = frame.f_locals
        ev = {"t": "stop", "i": i, "e": kind, "l": frame.f_lineno or code.co_firstlineno, "d": info[1],
              "f": info[0], "n": code.co_name, "c": info[4], "a": flat_locals(frame, info), "why": why}
        if value is not None:
            ev["r"] = value
        if want_digest[0]:
            ev["h"] = digest(i + 1)
        ev.update(output())
        ru = resource.getrusage(resource.RUSAGE_SELF)
        ev["cpu"] = ru.ru_utime + ru.ru_stime
        send(ev)
        serve(program_frames(frame), loc)

    def event(frame, info, kind, arg):
        nonlocal count
        i = count
        count = i + 1
        d = info[1]
        line = frame.f_lineno or frame.f_code.co_firstlineno
        logapp((d * 4 + kind - 1) << 32 | line)
        maybe_stop(frame, info, kind, arg, i, d, line)

    def nolog(x):
        pass

    def maybe_stop(frame, info, kind, arg, i, d, line):
        nonlocal logapp, stop_i
        if i == LOG_CAP and logapp is not nolog:
            # The log is full: events are counted on, not logged.
            logapp = nolog
            del log[LOG_CAP:]
            stop_i = target_i
        why = None
        if intr[0] is not None:
            why, intr[0] = intr[0], None
            if why == run_no[0]:
                why = "interrupt"
            elif why != "cpu":
                why = None  # sent during an earlier resume
        if why is None:
            why = check[0](i, kind, d, line, info, arg, frame)
            if not why:
                return
            if why is True:
                why = "stop"
        value = None
        if kind == EV_RETURN:
            value = vrepr(arg)
        elif kind == EV_EXCEPTION:
            value = vrepr(arg[1])
        stop(frame, info, kind, value, i, why)

    def killer(frame, ev, arg):
        _setprofile(None)
        if frame is st.kill_frame and ev == "call":
            st.kill_frame = None
            st.killed = frame
            raise RecursionError("maximum recursion depth exceeded")
        return None

    def local_for(info):
        """The local trace function of one activation of a frame (info its
        entry in frames, d its depth): a closure, so that a line event, what
        a long run and a replay spend their time on, costs no lookup, one
        log append and the inline filter of the criteria (set_stop)."""
        d = info[1]
        kd = (d * 4 + 1) << 32

        def localfn(frame, ev, arg):
            nonlocal count
            if ev == "line":
                i = count
                count = i + 1
                line = frame.f_lineno
                logapp(kd | line)
                if i == stop_i or d <= stop_le or line in stop_lines or intr[0] is not None:
                    maybe_stop(frame, info, EV_LINE, arg, i, d, line)
                return localfn
            if st.done or frames.get(frame) is not info:
                return None
            if ev == "return":
                event(frame, info, EV_RETURN, arg)
                if not frame.f_code.co_flags & GENERATOR_FLAGS:
                    del frames[frame]
                    if d == 0:
                        st.done = True
            elif ev == "exception":
                event(frame, info, EV_EXCEPTION, arg)
            return localfn
        return localfn

    def tracefn(frame, ev, arg):
        # The same bookkeeping as run_one's tracefn: depths, frame numbers
        # and the recursion limit as the recorded trace has them.
        if ev != "call" or st.done or frame.f_code.co_filename != PROGFILE:
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
            depth, sdepth = 0, top
            counter = recursion_depth()
            if counter is not None:
                st.base = counter - top
        else:
            depth, sdepth = parent[1] + 1, parent[2] + steps
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
        line = frame.f_lineno or frame.f_code.co_firstlineno
        if info is None:
            next_id[0] += 1
            info = frames[frame] = [next_id[0], depth, sdepth, {}, line]
        else:
            info[1], info[2], info[4] = depth, sdepth, line
        event(frame, info, EV_CALL, arg)
        return local_for(info)

    def finish(status, extra, tb=None):
        """The program ended: say so, then answer requests (post-mortem:
        eval in the frames an escaping exception passed through)."""
        res = {"t": "end", "status": status, "n": count}
        res.update(extra)
        res.update(output())
        fs = []
        if tb is not None:
            while tb is not None:
                f = tb.tb_frame
                info = frames.get(f)
                if f.f_code.co_filename == PROGFILE and f is not st.killed:
                    if info is None:
                        info = [0, 0, 0, {}, f.f_code.co_firstlineno]
                    fs.append((f, info))
                    res.setdefault("tb", []).append({"n": f.f_code.co_name, "l": tb.tb_lineno, "c": info[4], "f": info[0],
                                                     "a": flat_locals(f, info)})
                tb = tb.tb_next
            fs.reverse()  # innermost first, as levels count
        send(res)
        serve(fs, None)

    st.armed = True
    _setitimer(signal.ITIMER_REAL, 1e8, TIMER_INTERVAL)  # only reprs and expressions are timed
    set_stop(req.get("stop") or {"any": True})
    try:
        code = compile_program(req["source"])
    except SyntaxError as e:
        return finish("syntax", {"msg": bound(safestr(e.msg)), "line": e.lineno or 0})
    except ValueError as e:
        return finish("syntax", {"msg": bound(safestr(e)), "line": 0})
    except RecursionError:
        return finish("syntax", {"msg": TOO_DEEP, "line": 0})
    g = {"__name__": "__main__" if script else CALL_MODULE, "__file__": PROGFILE, "__builtins__": builtins}
    res = {"status": "", "msg": "", "exc": None, "line": 0}
    if script:
        modcode[0] = code
        fn, args, kwargs = exec, (code, g), {}
    else:
        st.setup = True  # SIGXCPU (the first resume's budget) raises Timeout here
        try:
            fn, args, kwargs = prepare(req, code, g, res)
        except Timeout:
            return finish("timeout", {"msg": "the module code or the call's arguments ran past the CPU time of a step (%s s)" % req.get("cpu", "?")})
        finally:
            st.setup = False
        if fn is None:
            return finish(res["status"], {"msg": res["msg"], "exc": res.get("exc")})
    st.real_limit = max(st.vis_limit * 3, st.vis_limit + 500)
    _setrecursionlimit(st.real_limit)
    ok = False
    _settrace(tracefn)
    try:
        value = fn(*args, **kwargs)
        ok = True
    except BaseException as e:
        value = e
    finally:
        tracer = _gettrace()
        _settrace(None)
        _setprofile(None)
        _setrecursionlimit(st.vis_limit)
        st.real_limit = st.vis_limit
    if st.violation is not None:
        return finish("forbidden", {"msg": st.violation})
    if tracer is not tracefn:
        return finish("tracer", {"msg": "tracing was lost (the tracer hit a limit)"})
    if ok:
        return finish("returned", {"ret": bound(saferepr(value), 1 << 20, (1 << 20) - 32)})
    if isinstance(value, MemoryError):
        return finish("memory", {"msg": "MemoryError"})
    if count == 0 and not script:
        # Raised before the entry's first event: binding the arguments to
        # its parameters failed (f(1, 2) for def f(x)), in Python's own
        # words, as run_one says it.
        exc = exc_info(value)
        return finish("setup", {"msg": "calling %s raised %s: %s" % (req["entry"], type(value).__name__, exc["msg"]), "exc": exc})
    return finish("raised", {"exc": exc_info(value)}, value.__traceback__)


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
    # The program sees itself as a script run with no arguments would (the
    # file name its code objects carry), not the tracer's own arguments.
    sys.argv[:] = [PROGFILE]
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
    # Descriptors: each socket's buffers are kernel memory outside
    # RLIMIT_AS (9,900 socket pairs held 2.4 GiB); 1024 bound them.
    nofile = min(1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    signal.signal(signal.SIGALRM, on_alarm)
    out = os.fdopen(3, "wb")
    out.write(sign(json.dumps({"t": "hello", "version": sys.version}).encode("ascii")))
    out.flush()
    _exit = os._exit
    if mode == "live":
        neuter()
        live(inp, out, sign, cpu)
        return
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
