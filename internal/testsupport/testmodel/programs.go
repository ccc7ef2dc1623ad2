package testmodel

// MeanProgram is the program the debugger's tests share (the root API's,
// ndbg debug's, ndbg dap's and ndbg serve's): mean divides by the length
// of a list that f cleans of None first, so f([None]) raises
// ZeroDivisionError at line 5 through f's line 9. Its lines, which the
// tests name: mean's def 1, its loop 3-4 and return 5; f's def 7, the
// comprehension 8, the call of mean 9 and f's return 10; line 6 is blank.
// (examples/mean.py is the same program with two blank lines, as a user
// would write it.)
const MeanProgram = `def mean(xs):
    total = 0
    for x in xs:
        total += x
    return total / len(xs)

def f(data):
    clean = [d for d in data if d is not None]
    m = mean(clean)
    return round(m, 2)
`
