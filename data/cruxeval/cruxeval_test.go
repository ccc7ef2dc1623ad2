package cruxeval

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDev checks the embedded split against NOTICE: its sha256 and 100
// items, ids sample_0, sample_8, ..., sample_792.
func TestDev(t *testing.T) {
	sum := sha256.Sum256([]byte(DevJSONL()))
	assert.Equal(t, "13b548454462d78ea0c349932dfa57191956b36c0d9a8f968947e49a31f5c801", hex.EncodeToString(sum[:]))
	items, err := Dev()
	require.NoError(t, err)
	require.Len(t, items, 100)
	for i, it := range items {
		assert.Equal(t, fmt.Sprintf("sample_%d", 8*i), it.ID)
		assert.NotEmpty(t, it.Code, it.ID)
		assert.NotEmpty(t, it.Output, it.ID)
	}
	assert.Equal(t, "f([1, 1, 3, 1, 3, 1])", items[0].Call())
}
