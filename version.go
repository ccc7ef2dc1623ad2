package ndbg

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"slices"
)

// DefaultModelID identifies the default model embedded in the binary: the
// first 12 hex digits of its weights' SHA-256 and their size; "" when the
// build embeds none. Commands print it with --version, so that a result can
// be traced to the model that made it.
func DefaultModelID() string {
	fsys, ok := defaultModelFS()
	if !ok {
		return ""
	}
	return modelID(fsys)
}

// modelID is DefaultModelID for the model in fsys: the hash runs over
// model.safetensors, or over every shard (model-*.safetensors) in name
// order, so a sharded model (the GPU run's) is identified too; "" when
// fsys holds no weights.
func modelID(fsys fs.FS) string {
	names, err := fs.Glob(fsys, "model*.safetensors")
	if err != nil || len(names) == 0 {
		return ""
	}
	if slices.Contains(names, "model.safetensors") {
		names = []string{"model.safetensors"} // what the engine loads when both are there
	}
	slices.Sort(names)
	h := sha256.New()
	size := 0
	for _, n := range names {
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			return ""
		}
		h.Write(data)
		size += len(data)
	}
	sum := h.Sum(nil)
	if len(names) == 1 {
		return fmt.Sprintf("weights/default, %s sha256 %x… (%d bytes)", names[0], sum[:6], size)
	}
	return fmt.Sprintf("weights/default, %d shards sha256 %x… (%d bytes)", len(names), sum[:6], size)
}
