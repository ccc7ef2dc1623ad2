package statetree

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// stdlibPrograms use the standard-library modules the tracer's former
// Python-level bans broke (issue 18: "import random" failed with
// "forbidden operation: os.register_at_fork"). Threads run untraced, in the
// tracer as under bdb (sys.settrace is per thread). No local holds a value
// whose repr differs between runs (a started thread's ident), and no
// program function is called back from library code (where the tree's
// step_return and the driver's, which sees only program frames, part).
var stdlibPrograms = []testProgram{
	{"random", `import random
def f(n):
    random.seed(7)
    xs = [random.randint(0, 9) for _ in range(n)]
    y = random.choice(xs)
    random.shuffle(xs)
    return xs, y
`, "f", "f(5)"},
	{"logging", `import io, logging
def f(n):
    log = logging.Logger('ndbg.test')  # not the shared registry: the driver runs it twice
    out = io.StringIO()
    log.addHandler(logging.StreamHandler(out))
    log.setLevel(logging.INFO)
    for i in range(n):
        log.info('step %d', i)
    log.debug('hidden')
    return out.getvalue()
`, "f", "f(3)"},
	{"threading_queue", `import threading, queue
def work(q, n):
    for i in range(n):
        q.put(i * i)
    q.put(None)
def f(n):
    q = queue.Queue()
    threading.Thread(target=work, args=(q, n)).start()
    out = []
    while True:
        v = q.get()
        if v is None:
            break
        out.append(v)
    return out
`, "f", "f(4)"},
	{"statistics", `import statistics
def f(xs):
    m = statistics.mean(xs)
    md = statistics.median(xs)
    sd = round(statistics.stdev(xs), 6)
    return m, md, sd
`, "f", "f([3, 1, 4, 1, 5, 9, 2, 6])"},
	{"tempfile", `import tempfile
def f(data):
    d = tempfile.gettempdir()
    n = tempfile.TemporaryFile().write(data)
    with tempfile.SpooledTemporaryFile(max_size=10) as s:
        s.write(data * 5)
        s.seek(0)
        back = s.read(len(data))
    return n, back
`, "f", "f(b'abc')"},
	{"asyncio", `import asyncio
async def double(x):
    await asyncio.sleep(0)
    return 2 * x
async def main(n):
    return await asyncio.gather(*(double(i) for i in range(n)))
def f(n):
    return asyncio.run(main(n))
`, "f", "f(3)"},
	{"concurrent_futures", `from concurrent.futures import ThreadPoolExecutor
def sq(x):
    return x * x
def f(n):
    with ThreadPoolExecutor(max_workers=2) as ex:
        out = list(ex.map(sq, range(n)))
    return out
`, "f", "f(5)"},
}

// TestConformanceStdlib traces each program in the sandbox and compares
// every stop with CPython's bdb.
func TestConformanceStdlib(t *testing.T) {
	agreed, differ := conform(t, stdlibPrograms, 12, 12)
	t.Logf("%d commands as pdb, %d documented differences", agreed, differ)
	require.Greater(t, agreed, 100)
}
