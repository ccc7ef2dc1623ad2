def mean(xs):
    total = 0
    for x in xs:
        total += x
    return total / len(xs)


def f(data):
    clean = [d for d in data if d is not None]
    m = mean(clean)
    return round(m, 2)
