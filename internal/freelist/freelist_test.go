package freelist

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Take gives the most recent item that fits, Put refuses past Max, and the
// byte count follows both.
func TestList(t *testing.T) {
	l := List[[]byte]{Max: 100}
	_, ok := l.Take(nil)
	require.False(t, ok, "an empty list gave an item")
	require.True(t, l.Put(make([]byte, 10), 10))
	require.True(t, l.Put(make([]byte, 60), 60))
	require.False(t, l.Put(make([]byte, 40), 40), "kept past Max")
	require.Equal(t, 2, l.Len())
	require.EqualValues(t, 70, l.Bytes())
	b, ok := l.Take(func(b []byte) bool { return len(b) <= 20 })
	require.True(t, ok)
	require.Len(t, b, 10, "not the item that fits")
	_, ok = l.Take(func(b []byte) bool { return len(b) > 60 })
	require.False(t, ok)
	b, ok = l.Take(nil)
	require.True(t, ok)
	require.Len(t, b, 60)
	require.Zero(t, l.Len())
	require.Zero(t, l.Bytes())
	var zero List[int]
	require.False(t, zero.Put(1, 1), "the zero value kept an item")
}

// Concurrent takes and puts lose nothing and count right (run with -race).
func TestListConcurrent(t *testing.T) {
	l := List[int]{Max: 1 << 20}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				l.Put(g*1000+i, 1)
				l.Take(nil)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, l.Len(), l.Bytes())
}
