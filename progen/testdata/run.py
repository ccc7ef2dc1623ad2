# Runs generated programs, one JSON object per input line:
#   {"source": ..., "call": ...}
# and writes one JSON line per program:
#   {"ok": bool, "exc": "ValueError" or null, "msg": ..., "events": n}
# Events are the sys.settrace events in the program's own frames; a program
# past the event limit or the time limit is stopped and reported as such.
import json, signal, sys

LIMIT = 20000


class Stop(BaseException):
    pass


def alarm(signum, frame):
    raise Stop("timeout")


signal.signal(signal.SIGALRM, alarm)

for line in sys.stdin:
    req = json.loads(line)
    count = [0]

    def tracer(frame, event, arg):
        if frame.f_code.co_filename != "<prog>":
            return None
        count[0] += 1
        if count[0] > LIMIT:
            raise Stop("event limit")
        return tracer

    out = {"ok": False, "exc": None, "msg": "", "events": 0}
    try:
        g = {"__name__": "prog"}
        exec(compile(req["source"], "<prog>", "exec"), g)
        call = compile(req["call"], "<prog>", "eval")
        signal.alarm(2)
        sys.settrace(tracer)
        try:
            r = eval(call, g)
        finally:
            sys.settrace(None)
            signal.alarm(0)
        out["ok"] = True
        out["repr_len"] = len(repr(r))
    except Stop as e:
        out["exc"] = "Stop"
        out["msg"] = str(e)
    except BaseException as e:
        out["exc"] = type(e).__name__
        out["msg"] = str(e)[:200]
    out["events"] = count[0]
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
