import re

def helper(s, n=2):
    x = s * n
    x = s * n
    return x

class C:
    """Doc.
    x = s * n
    """
    def m(self):
        x = 1
        return x

    @staticmethod
    def st(a, \
           b):
        x = 1
        return x

def f(a,
      b='''multi
line''', c=r"raw\" \\"):
    t = "a\
b"
    u = f"{a!r}" + rb'\x00' + Rb"q" + F'{b}' + 'it''s'
    x = 1
    x = 1  # (2)
    x = 1
    y = (1 +
         2)  # comment
    y = (1 +
         2)
    z = x + \
        y
    z = x + \
        y
    if x:
        x = 1
    else:
        pass
    def inner(q):
        x = 1
        return [x for x in q]
    s = """
    x = 1
    """
    s = """
    x = 1
    """
    s = '''\
    x = 1'''
    lam = lambda v: v + 1
    lam = lambda v: v + 1
    d = {
        'k': 1,
        'k': 1,
    }
    return x  # \
