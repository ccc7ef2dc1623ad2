"""Static facts about programs for the constrained decoder: every code object
(functions, lambdas, comprehensions, generator expressions) with the line of its
call event, the lines where it can report events, and the local names it can
have. Compiles each source; never runs it. Reads a JSON list of sources on
stdin, writes a JSON list of results on stdout."""
import json
import sys


def walk(code, out):
    names = list(dict.fromkeys(code.co_varnames + code.co_cellvars + code.co_freevars))
    lines = sorted({l for _, _, l in code.co_lines() if l is not None})
    # A generator (or coroutine) reports a call event at every resume, on the
    # line where it was suspended.
    resumable = bool(code.co_flags & (0x20 | 0x80 | 0x200))
    out.append({"name": code.co_name, "first": code.co_firstlineno, "lines": lines, "names": names,
                "generator": resumable})
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            walk(c, out)


def analyze(src):
    try:
        mod = compile(src, "<program>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        return {"error": f"{type(e).__name__}: {e}", "line": getattr(e, "lineno", 0) or 0}
    out = []
    for c in mod.co_consts:
        if hasattr(c, "co_code"):
            walk(c, out)
    return {"codes": out}


json.dump([analyze(s) for s in json.loads(sys.stdin.buffer.read())], sys.stdout)
