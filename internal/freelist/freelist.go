// Package freelist keeps memory that its users have finished with (KV-cache
// blocks, a pass's activations, a product's scratch), up to a number of
// bytes, for the next user that needs as much: memory touched for the first
// time costs a page fault per 4 KiB, 19 µs each in the virtual machines of
// bench/RESULTS.md, often more than the work done in it. Unlike a sync.Pool,
// a List keeps its items across garbage collections and hands any of them to
// any goroutine (a sync.Pool keeps an item on one P).
package freelist

import (
	"slices"
	"sync"
)

// List is a bounded free list of T; its zero value keeps nothing until Max
// is set. Safe for concurrent use.
type List[T any] struct {
	Max   int64 // the most bytes it keeps
	mu    sync.Mutex
	free  []entry[T]
	bytes int64
}

type entry[T any] struct {
	item  T
	bytes int64
}

// Take removes and returns the most recently put item that fits accepts
// (any item when fits is nil); false when none does.
func (l *List[T]) Take(fits func(T) bool) (T, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.free) - 1; i >= 0; i-- {
		if e := l.free[i]; fits == nil || fits(e.item) {
			l.free = slices.Delete(l.free, i, i+1) // the vacated slot cleared: no stale reference
			l.bytes -= e.bytes
			return e.item, true
		}
	}
	var zero T
	return zero, false
}

// Put keeps item, of the given size in bytes, unless that would take the
// list past Max; it reports whether it kept it. The caller must not use an
// item it put.
func (l *List[T]) Put(item T, bytes int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bytes+bytes > l.Max {
		return false
	}
	l.free = append(l.free, entry[T]{item, bytes})
	l.bytes += bytes
	return true
}

// Len reports how many items the list keeps.
func (l *List[T]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.free)
}

// Bytes reports the bytes of the items the list keeps.
func (l *List[T]) Bytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes
}
