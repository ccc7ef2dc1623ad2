def deco(fn):
    return fn

@deco
def f(x):
    @deco
    @deco
    def g(y,
          z=1):
        return y
    class K:
        v = 1
        def h(self):
            return 2
    return g(x) + K().h()

@deco
class Top:
    def f(self):
        return 1

def f(x):
    return x

def factory(n):
    return deco

@factory(
    1)
# a comment between decorator and def
@deco
def h(x):
    return x
