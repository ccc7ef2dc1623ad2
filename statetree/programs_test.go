package statetree

// testProgram is a program, its entry function and the call to trace.
type testProgram struct {
	name, source, entry, call string
}

// handPrograms cover the control flow the tree must get right: loops,
// recursion, helpers, generators, comprehensions, lambdas, exceptions caught
// and uncaught, early returns.
var handPrograms = []testProgram{
	{"helper_loop", `def g(x):
    y = x * 2
    return y

def f(n):
    s = 0
    for i in range(n):
        s += g(i)
    return s
`, "f", "f(3)"},
	{"recursion", `def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)
`, "fact", "fact(4)"},
	{"fib_tree", `def fib(n):
    if n < 2:
        return n
    a = fib(n - 1)
    b = fib(n - 2)
    return a + b
`, "fib", "fib(4)"},
	{"while_early_return", `def find(xs, t):
    i = 0
    while i < len(xs):
        if xs[i] == t:
            return i
        i += 1
    return -1
`, "find", "find([3, 1, 4, 1, 5], 4)"},
	{"generator", `def gen(n):
    for i in range(n):
        yield i * i

def f(n):
    total = 0
    for v in gen(n):
        total += v
    return total
`, "f", "f(3)"},
	{"generator_next", `def counter(a):
    x = a
    while True:
        y = yield x
        x += 1

def f():
    c = counter(5)
    first = next(c)
    second = next(c)
    third = c.send(7)
    return first + second + third
`, "f", "f()"},
	{"yield_from", `def inner(n):
    yield n
    yield n + 1

def outer(n):
    yield from inner(n)
    yield 0

def f(n):
    return list(outer(n))
`, "f", "f(2)"},
	{"comprehensions", `def f(xs):
    sq = [x * x for x in xs]
    ev = {x: x % 2 == 0 for x in sq}
    s = sum(x for x in xs if x > 1)
    st = {x // 2 for x in xs}
    return sq, ev, s, st
`, "f", "f([1, 2, 3])"},
	{"lambdas", `def f(words):
    key = lambda w: (len(w), w)
    out = sorted(words, key=key)
    doubled = list(map(lambda w: w * 2, out))
    return [w for w in doubled if len(w) > 2]
`, "f", "f(['bb', 'a', 'ccc'])"},
	{"caught_exception", `def parse(s):
    return int(s)

def f(items):
    good = []
    for s in items:
        try:
            good.append(parse(s))
        except ValueError as e:
            good.append(-1)
    return good
`, "f", "f(['1', 'x', '3'])"},
	{"uncaught_exception", `def check(x):
    if x < 0:
        raise ValueError('negative')
    return x

def mid(x):
    y = check(x)
    return y + 1

def f(x):
    a = mid(1)
    b = mid(x)
    return a + b
`, "f", "f(-2)"},
	{"exception_through_frames_caught", `def deep(n):
    if n == 0:
        raise KeyError(n)
    return deep(n - 1)

def f(n):
    try:
        deep(n)
    except KeyError:
        return 'caught'
    finally:
        n += 1
    return 'no'
`, "f", "f(2)"},
	{"nested_closure", `def f(n):
    def add(k):
        return n + k
    total = 0
    for i in range(2):
        total += add(i)
    return total
`, "f", "f(10)"},
	{"class_methods", `class Acc:
    def __init__(self, start):
        self.v = start

    def add(self, x):
        self.v += x
        return self

def f(xs):
    a = Acc(0)
    for x in xs:
        a.add(x).add(1)
    return a.v
`, "f", "f([1, 2])"},
	{"same_line_calls", `def g(x):
    return x + 1

def h(x):
    return x * 2

def f(x):
    return h(g(x)) + g(h(x))
`, "f", "f(3)"},
	{"dict_string_methods", `def f(text):
    counts = {}
    for ch in text.lower():
        if ch.isalpha():
            counts[ch] = counts.get(ch, 0) + 1
    best = max(counts, key=lambda c: counts[c])
    return best, ''.join(sorted(counts))
`, "f", "f('Hello World')"},
	{"with_statement", `class Ctx:
    def __enter__(self):
        return 1

    def __exit__(self, *a):
        return False

def f():
    with Ctx() as c:
        x = c + 1
    return x
`, "f", "f()"},
	{"genexpr_any", `def f(xs):
    if any(x > 2 for x in xs):
        return 'big'
    return 'small'
`, "f", "f([1, 5, 2, 9])"},
	{"generator_exception", `def gen():
    yield 1
    raise RuntimeError('stop')

def f():
    out = []
    try:
        for v in gen():
            out.append(v)
    except RuntimeError:
        out.append(0)
    return out
`, "f", "f()"},
	{"reraise", `def g(x):
    try:
        return 10 // x
    except ZeroDivisionError:
        raise ValueError(x)

def f(x):
    return g(x)
`, "f", "f(0)"},
	{"finally_return", `def g(x):
    try:
        if x:
            return 'try'
        raise ValueError(x)
    finally:
        x = 0

def f():
    a = g(1)
    try:
        b = g(0)
    except ValueError:
        b = 'err'
    return a, b
`, "f", "f()"},
	{"recursion_caught_midway", `def down(n):
    if n == 0:
        raise IndexError('bottom')
    return down(n - 1)

def guard(n):
    try:
        return down(n)
    except IndexError:
        return -n

def f():
    return [guard(i) for i in range(3)]
`, "f", "f()"},
	{"generator_resumed_deeper", `def squares(n):
    for i in range(n):
        yield i * i

def total(it):
    s = 0
    for v in it:
        s += v
    return s

def f(n):
    g = squares(n)
    first = next(g)
    return first + total(g)
`, "f", "f(4)"},
	{"interleaved_generators", `def count(a, b):
    while a < b:
        yield a
        a += 1

def f():
    out = []
    for x, y in zip(count(0, 3), count(10, 20)):
        out.append(x + y)
    return out
`, "f", "f()"},
	{"recursive_yield_from", `def walk(t):
    if isinstance(t, list):
        for c in t:
            yield from walk(c)
    else:
        yield t

def f(t):
    return list(walk(t))
`, "f", "f([1, [2, [3]], 4])"},
	{"while_break_continue", `def f(xs):
    i = 0
    acc = []
    while True:
        i += 1
        if i >= len(xs):
            break
        if xs[i] % 2:
            continue
        acc.append(xs[i])
    return acc
`, "f", "f([5, 2, 7, 4, 6, 1])"},
	{"sort_key_callbacks", `def key(p):
    name, age = p
    return (-age, name)

def f(people):
    people.sort(key=key)
    names = list(map(lambda p: p[0].upper(), people))
    return list(filter(None, names))
`, "f", "f([('bo', 3), ('al', 5), ('cy', 3)])"},
	{"assert_and_message", `def check(v):
    assert v > 0, 'must be positive'
    return v

def f(vs):
    out = []
    for v in vs:
        try:
            out.append(check(v))
        except AssertionError as e:
            out.append(str(e))
    return out
`, "f", "f([2, -1])"},
	{"nested_def_defaults", `def f(xs):
    base = len(xs)
    def scale(x, k=base * 2):
        return x * k
    return [scale(x) for x in xs] + [scale(1, 1)]
`, "f", "f([1, 2])"},
	{"uncaught_in_generator", `def gen(xs):
    for x in xs:
        yield 10 // x

def f(xs):
    return sum(gen(xs))
`, "f", "f([1, 2, 0, 4])"},
}
