# A whole script for `ndbg debug examples/stats.py --backend real` (no
# --call): its __main__ block prints each mean, then f([None]) divides by
# zero, so post-mortem debugging starts in mean.
def mean(xs):
    total = 0
    for x in xs:
        total += x
    return total / len(xs)


def f(data):
    clean = [d for d in data if d is not None]
    m = mean(clean)
    return round(m, 2)


if __name__ == "__main__":
    for data in ([3, None, 4], [None]):
        print("mean of", data, "is", f(data))
