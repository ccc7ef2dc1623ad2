def parse(items):
    out = []
    for s in items:
        out.append(int(s))
    return out
