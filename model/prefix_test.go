package model

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/kernels"
)

func TestPrefixCache(t *testing.T) {
	m := tinyModel(t, kernels.BF16, 0)
	pc := NewPrefixCache(m, 2)
	src := seq(40, 256)

	want := m.NewSession()
	_, err := want.Forward(context.Background(), src, false)
	require.NoError(t, err)
	next := decodeAll(t, want, []int{7, 8})

	// Many concurrent users of one prefix: each gets a private fork.
	var wg sync.WaitGroup
	results := make([][][]float32, 6)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := pc.Fork(context.Background(), src)
			if !assert.NoError(t, err) {
				return
			}
			if !assert.Equal(t, len(src), s.Len()) || !assert.NotNil(t, s.Last()) {
				return
			}
			var rows [][]float32
			for _, tok := range []int{7, 8} {
				l, err := s.Forward(context.Background(), []int{tok}, false)
				if !assert.NoError(t, err) {
					return
				}
				rows = append(rows, append([]float32(nil), l...))
			}
			results[i] = rows
		}()
	}
	wg.Wait()
	for _, r := range results {
		assert.Equal(t, next, r)
	}
	assert.Equal(t, 1, pc.Len())

	// Eviction beyond two entries, and failures are not cached.
	for _, p := range [][]int{{1, 2}, {3, 4}, {5}} {
		_, err := pc.Fork(context.Background(), p)
		require.NoError(t, err)
	}
	assert.Equal(t, 2, pc.Len())
	_, err = pc.Fork(context.Background(), []int{1, 999})
	assert.ErrorIs(t, err, ErrToken)
	assert.Equal(t, 2, pc.Len())
	_, err = pc.Fork(context.Background(), nil)
	assert.Error(t, err)
}
