package ndbg

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestModelIDShards: a sharded model (the GPU run's export) is identified
// by all its shards, a one-file model as before, and no weights by "".
func TestModelIDShards(t *testing.T) {
	one := []byte("one file of weights")
	sum := sha256.Sum256(one)
	assert.Equal(t, fmt.Sprintf("weights/default, model.safetensors sha256 %x… (%d bytes)", sum[:6], len(one)),
		modelID(fstest.MapFS{"model.safetensors": {Data: one}, "config.json": {Data: []byte("{}")}}))

	sharded := fstest.MapFS{
		"model-00001-of-00002.safetensors": {Data: []byte("first")},
		"model-00002-of-00002.safetensors": {Data: []byte("second")},
		"model.safetensors.index.json":     {Data: []byte("{}")},
	}
	id := modelID(sharded)
	all := sha256.Sum256([]byte("firstsecond"))
	assert.Equal(t, fmt.Sprintf("weights/default, 2 shards sha256 %x… (11 bytes)", all[:6]), id)
	sharded["model-00002-of-00002.safetensors"] = &fstest.MapFile{Data: []byte("other!")}
	assert.NotEqual(t, id, modelID(sharded), "a changed shard changes the id")

	assert.Equal(t, "", modelID(fstest.MapFS{"config.json": {Data: []byte("{}")}}))
}

// TestDefaultModelEmbedsShards: the go:embed patterns of the default model
// take a sharded model's files (its index included, without which
// weights.OpenFS cannot find the shards), and everything of the model now
// in weights/default is in the binary.
func TestDefaultModelEmbedsShards(t *testing.T) {
	src, err := os.ReadFile("defaultmodel.go")
	require.NoError(t, err)
	var patterns []string
	for _, line := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(line, "//go:embed "); ok {
			patterns = append(patterns, strings.Fields(rest)...)
		}
	}
	require.NotEmpty(t, patterns, "no //go:embed line in defaultmodel.go")
	for _, name := range []string{"config.json", "tokenizer.json", "model.safetensors", "model-00001-of-00004.safetensors",
		"model-00004-of-00004.safetensors", "model.safetensors.index.json"} {
		matched := false
		for _, p := range patterns {
			if ok, _ := path.Match(p, "weights/default/"+name); ok {
				matched = true
			}
		}
		assert.True(t, matched, "%s is not embedded by %q", name, patterns)
	}

	fsys, ok := defaultModelFS()
	if !ok {
		t.Skip("this build embeds no default model")
	}
	disk, err := filepath.Glob("weights/default/model*.safetensors*")
	require.NoError(t, err)
	require.NotEmpty(t, disk)
	for _, p := range disk {
		_, err := fs.Stat(fsys, filepath.Base(p))
		assert.NoError(t, err, "%s is not embedded", p)
	}
}
