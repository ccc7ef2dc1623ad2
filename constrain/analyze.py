"""Static facts about a program for the constrained decoder: every code object
(functions, lambdas, comprehensions, generator expressions) with the line of its
call event, the lines where it can report events, and the local names it can
have. Compiles the source; never runs it. Reads the source on stdin, writes
JSON on stdout."""
import json
import sys


def walk(code, out):
    names = list(dict.fromkeys(code.co_varnames + code.co_cellvars + code.co_freevars))
    lines = sorted({l for _, _, l in code.co_lines() if l is not None})
    out.append({"name": code.co_name, "first": code.co_firstlineno, "lines": lines, "names": names})
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            walk(c, out)


def main():
    src = sys.stdin.buffer.read().decode("utf-8")
    try:
        mod = compile(src, "<program>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as e:
        json.dump({"error": f"{type(e).__name__}: {e}", "line": getattr(e, "lineno", 0) or 0}, sys.stdout)
        return
    out = []
    for c in mod.co_consts:
        if hasattr(c, "co_code"):
            walk(c, out)
    json.dump({"codes": out}, sys.stdout)


main()
