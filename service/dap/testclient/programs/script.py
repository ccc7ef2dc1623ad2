import sys


def half(x):
    print("half of", x)
    return x / 2


if __name__ == "__main__":
    total = 0
    for v in [8, 2]:
        total += half(v)
    print("total", total, file=sys.stderr)
    print("done")
