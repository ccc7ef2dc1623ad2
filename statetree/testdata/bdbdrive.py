"""Drive CPython's bdb (the engine under pdb) on a program and record where
each debugger command stops: the independent reference for statetree.

Reads a JSON array of requests on stdin, each
  {"source": str, "entry": str, "call": "f(1, 2)",
   "sessions": [["step", "next", "return", "break:7", "continue:3,9"], ...],
   "breaks": [4, 9]}
and writes a JSON array with one reply per request on stdout:
  {"trace": [event...], "sessions": [[stop...], ...]}
where "trace" is a plain sys.settrace trace of the call (every event in the
program's own frames) and each session starts a fresh bdb.runcall, records
its first stop (pdb's runcall stops first at the entry's first line), then
one stop per command. A stop or event is
  {"event", "line", "depth", "calls", "func", "gen", "value", "locals"}
("calls": call events in program frames so far, the entry's included;
trace events also carry "frame", an id per frame object) or
{"end": true} once the program has finished. Breakpoints live for one
command: "break:L" is `break L` then `continue`; "continue:L1,L2" sets both
first; they are all cleared at the next stop. "breaks" (optional) are
breakpoints set before each session starts and kept for all of it, as a
pdb user's `break` lines stay set while they step: every command (step,
next, return, break, continue) may stop at them. Frames outside the program's
file are skipped, as by pdb's skip option, and do not count in the depth.
"""
import ast
import bdb
import json
import os
import sys
import tempfile

MODULE = "__ndbg_prog__"
GEN_FLAGS = 0x20 | 0x80 | 0x200  # CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR


def load(path, source, entry, call):
    """Fresh module globals with the program run, and the entry's args."""
    g = {"__name__": MODULE}
    exec(compile(source, path, "exec"), g)
    node = ast.parse(call, mode="eval").body
    if not isinstance(node, ast.Call):
        raise ValueError("call is not a call expression")
    # The arguments are evaluated in a module of their own, so a lambda
    # passed in (CRUXEval does that) is outside the program and skipped.
    gi = dict(g, __name__="__ndbg_input__")
    gi["__ndbg_capture"] = lambda *a, **k: (a, k)
    node.func = ast.Name(id="__ndbg_capture", ctx=ast.Load())
    expr = ast.fix_missing_locations(ast.Expression(body=node))
    args, kwargs = eval(compile(expr, "<call>", "eval"), gi)
    return g[entry], args, kwargs


def safe_repr(v):
    try:
        return repr(v)
    except Exception as e:  # a broken __repr__
        return "<repr failed: %s>" % type(e).__name__


class Recorder:
    """Common bookkeeping: program frames, depth, counts."""

    def __init__(self, path):
        self.path = path
        self.base = None
        self.calls = 0

    def mine(self, frame):
        return frame.f_code.co_filename == self.path

    def depth(self, frame):
        d = -1
        while frame is not None and frame is not self.base:
            if self.mine(frame):
                d += 1
            frame = frame.f_back
        return d

    def record(self, frame, event, arg):
        r = {"event": event, "line": frame.f_lineno, "depth": self.depth(frame),
             "calls": self.calls, "func": frame.f_code.co_name,
             "gen": bool(frame.f_code.co_flags & GEN_FLAGS)}
        if event in ("call", "line"):
            r["locals"] = [[k, safe_repr(v)] for k, v in frame.f_locals.items()]
        elif event == "return":
            r["value"] = safe_repr(arg)
        else:
            r["value"] = safe_repr(arg[1])
        return r


def plain_trace(path, source, entry, call):
    fn, args, kwargs = load(path, source, entry, call)
    rec = Recorder(path)
    events = []
    keep = []

    ids = {}
    nid = [0]

    def add(frame, event, arg):
        r = rec.record(frame, event, arg)
        r["frame"] = ids[id(frame)]
        events.append(r)
        if event == "return" and not r["gen"]:
            del ids[id(frame)]  # the frame is done; its id may be reused

    def local(frame, event, arg):
        add(frame, event, arg)
        return local

    def glob(frame, event, arg):
        if rec.base is None:
            rec.base = frame.f_back
        if not rec.mine(frame):
            return None
        if not (frame.f_code.co_flags & GEN_FLAGS and id(frame) in ids):
            nid[0] += 1
            ids[id(frame)] = nid[0]
        if frame.f_code.co_flags & GEN_FLAGS:
            # A suspended generator's frame must not be freed and its id
            # reused; other frames are not kept, so that objects die (and
            # generators are finalized) when they would without tracing.
            keep.append(frame)
        rec.calls += 1
        add(frame, event, arg)
        return local

    sys.settrace(glob)
    try:
        fn(*args, **kwargs)
    except Exception:
        pass
    finally:
        sys.settrace(None)
    return events


class Driver(bdb.Bdb):
    def __init__(self, path, cmds, breaks):
        super().__init__(skip=["*"])
        self.rec = Recorder(path)
        self.cmds = list(cmds)
        self.breaks_kept = list(breaks)
        self.stops = []
        self.clear_all_breaks()  # bdb keeps Breakpoint objects class-wide
        self.set_breaks(self.breaks_kept)

    def set_breaks(self, lines):
        for l in lines:
            err = self.set_break(self.rec.path, l)
            if err:
                raise RuntimeError(err)

    def is_skipped_module(self, module_name):
        return module_name != MODULE

    def trace_dispatch(self, frame, event, arg):
        if event == "call":
            if self.botframe is None:
                self.rec.base = frame.f_back
            if self.rec.mine(frame):
                self.rec.calls += 1
        return super().trace_dispatch(frame, event, arg)

    def stop(self, frame, event, arg):
        self.clear_all_breaks()
        self.set_breaks(self.breaks_kept)
        self.stops.append(self.rec.record(frame, event, arg))
        if not self.cmds:
            # The session is over: run to the end without stopping again.
            self.breaks_kept = []
            self.clear_all_breaks()
            self.set_continue()
            return
        cmd = self.cmds.pop(0)
        if cmd == "step":
            self.set_step()
        elif cmd == "next":
            self.set_next(frame)
        elif cmd == "return":
            self.set_return(frame)
        elif cmd.startswith("break:") or cmd.startswith("continue"):
            lines = cmd.partition(":")[2]
            self.set_breaks(int(l) for l in filter(None, lines.split(",")))
            self.set_continue()
        else:
            raise ValueError("unknown command %r" % cmd)

    def user_call(self, frame, args):
        # bdb calls this whenever it might stop in the frame; pdb stops only
        # if stop_here (pdb.Pdb.user_call).
        if self.stop_here(frame):
            self.stop(frame, "call", None)

    def user_line(self, frame):
        self.stop(frame, "line", None)

    def user_return(self, frame, value):
        self.stop(frame, "return", value)

    def user_exception(self, frame, exc_info):
        self.stop(frame, "exception", exc_info)


def session(path, source, entry, call, cmds, breaks):
    fn, args, kwargs = load(path, source, entry, call)
    d = Driver(path, cmds, breaks)
    try:
        d.runcall(fn, *args, **kwargs)
    except Exception:
        pass
    finally:
        sys.settrace(None)
        d.clear_all_breaks()
    stops = d.stops
    if d.cmds or len(stops) == len(cmds):
        # The program finished with commands left, or the last command ran
        # it to the end.
        stops.append({"end": True})
    return stops


def run(req):
    fd, path = tempfile.mkstemp(suffix=".py", prefix="ndbgprog")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(req["source"])
        path = os.path.realpath(path)
        return {"trace": plain_trace(path, req["source"], req["entry"], req["call"]),
                "sessions": [session(path, req["source"], req["entry"], req["call"], s, req.get("breaks", []))
                             for s in req["sessions"]]}
    finally:
        os.unlink(path)


def main():
    json.dump([run(req) for req in json.load(sys.stdin)], sys.stdout)


if __name__ == "__main__":
    main()
