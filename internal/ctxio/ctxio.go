// Package ctxio makes a blocking reader (a terminal's or a pipe's stdin)
// give way to a context: a read waiting for input returns as soon as the
// context is done, so that a prompt or a protocol loop reading stdin stops
// at SIGTERM or SIGINT (issue 28: `ndbg debug` and `ndbg dap` waited at
// the prompt until SIGKILL). Go cannot interrupt a read of a blocking file
// descriptor, so the read runs in a goroutine of its own, which ends when
// the read does (input, the end of the input, or the process's exit).
package ctxio

import (
	"context"
	"io"
	"sync"
)

// Reader returns r read under ctx: a Read returns what r gives, or
// context.Cause(ctx) once ctx is done (and from then on). At most one read
// of r runs at a time; what it brings after ctx is done is dropped.
func Reader(ctx context.Context, r io.Reader) io.Reader {
	return &reader{ctx: ctx, r: r}
}

type reader struct {
	ctx context.Context
	r   io.Reader

	mu      sync.Mutex
	pending chan result // the read in flight; nil when none
	left    []byte      // what a read brought beyond the caller's buffer
	err     error       // r's error, returned once left is used up
}

type result struct {
	data []byte
	err  error
}

func (c *reader) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.left) > 0 {
		n := copy(p, c.left)
		c.left = c.left[n:]
		return n, nil
	}
	if c.err != nil {
		return 0, c.err
	}
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	if c.pending == nil {
		ch := make(chan result, 1)
		c.pending = ch
		size := max(len(p), 4096)
		go func() {
			buf := make([]byte, size)
			n, err := c.r.Read(buf)
			ch <- result{buf[:n], err}
		}()
	}
	select {
	case res := <-c.pending:
		c.pending = nil
		n := copy(p, res.data)
		c.left = res.data[n:]
		if res.err != nil {
			c.err = res.err
			if len(c.left) == 0 && n == 0 {
				return 0, res.err
			}
		}
		return n, nil
	case <-c.ctx.Done():
		return 0, context.Cause(c.ctx)
	}
}
