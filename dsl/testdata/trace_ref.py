"""Independent reference for the DSL encoder (docs/dsl.md), used by
dsl/realtrace_test.go.

Reads JSON lines {"source": prepared program, "call": "f(...)"} on stdin,
traces each call with sys.settrace, and writes one JSON line per program:
{"events": [[event, line, [[name, repr], ...], value], ...], "text": ...}
where text is the trajectory "start at the first event, then step_into
until past the end" written with json.dumps, the ".." rule computed from
ast, and the repr bound, as the specification says; or {"skip": reason}.
Standard library only.
"""
import ast
import json
import sys

MARKER = "  # << START_OF_TRACE"
MAX_REPR, KEEP = 256, 240


def truncate(s):
    b = s.encode("utf-8")
    if len(b) <= MAX_REPR:
        return s
    cut = KEEP
    while cut > 0 and (b[cut] & 0xC0) == 0x80:
        cut -= 1
    return b[:cut].decode("utf-8") + "...[+%d]" % (len(b) - cut)


def safe_repr(v):
    try:
        return truncate(repr(v))
    except Exception:
        return "<repr failed>"


def func_of(tree):
    """Line -> def line of the innermost enclosing def (decorators and
    signature included), 0 at module level."""
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            spans.append((first, node.end_lineno, node.lineno))

    def f(line):
        best = None
        for first, last, defline in spans:
            if first <= line <= last and (best is None or first >= best[0]):
                best = (first, defline)
        return best[1] if best else 0

    return f


def trace(source, call):
    events = []
    g = {}
    code = compile(source, "prog.py", "exec")
    exec(code, g)

    def tr(frame, event, arg):
        if frame.f_code.co_filename != "prog.py":
            return None
        locs = [[k, safe_repr(v)] for k, v in frame.f_locals.items()]
        if event in ("return", "exception"):
            value = safe_repr(arg if event == "return" else arg[1])
            events.append([event, frame.f_lineno, [], value])
        else:
            events.append([event, frame.f_lineno, locs, ""])
        if len(events) > 300:
            raise RuntimeError("too long")
        return tr

    sys.settrace(tr)
    try:
        eval(compile(call, "call.py", "eval"), g)
    except Exception:
        pass
    finally:
        sys.settrace(None)
    return events


def encode(source, events):
    lines = source.split("\n")
    text_of = lambda n: lines[n - 1][: -len(MARKER)] if lines[n - 1].endswith(MARKER) else lines[n - 1]
    fo = func_of(ast.parse(source))
    out = ["<|begin_of_text|><|trace_context_start|>", source, "<|frame_sep|>"]
    last = {}  # def line -> locals dict of the last call/line frame
    for k, (event, line, locs, value) in enumerate(events):
        if k > 0:
            out.append("<|step_into|>")
        src = text_of(line) + "\n"
        if event in ("return", "exception"):
            tok = "<|return_sep|>" if event == "return" else "<|exception_sep|>"
            out.append(tok + "<|action_sep|>" + src + "<|arg_sep|>" + json.dumps(value) + "<|frame_sep|>")
            continue
        d = dict(locs)
        shown = {name: json.dumps(r) for name, r in d.items()}
        ref = last.get(fo(line))
        if event == "line" and k > 0:
            for name, r in d.items():
                if ref is not None and ref.get(name) == r:
                    shown[name] = '".."'
                elif r == "..":  # a literal "..", not the marker
                    shown[name] = '"\\u002e\\u002e"'
        tok = "<|call_sep|>" if event == "call" else "<|line_sep|>"
        pairs = ", ".join(json.dumps(name) + ": " + v for name, v in shown.items())
        out.append(tok + "{" + pairs + "}" + "<|action_sep|>" + src + "<|frame_sep|>")
        last[fo(line)] = d
    out.append("<|step_into|><|end_of_text|>")
    return "".join(out)


for raw in sys.stdin:
    item = json.loads(raw)
    try:
        events = trace(item["source"], item["call"])
    except Exception as e:  # noqa: BLE001 - any failure skips the program
        print(json.dumps({"skip": repr(e)}))
        continue
    if not events or len(events) > 300:
        print(json.dumps({"skip": "no events or too long"}))
        continue
    print(json.dumps({"events": events, "text": encode(item["source"], events)}))
