def squares(n):
    for i in range(n):
        sq = i * i
        yield sq
    done = True


def total(n):
    acc = 0
    for v in squares(n):
        acc += v
    return acc
