package ndbg

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
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
	data, err := fs.ReadFile(fsys, "model.safetensors")
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return fmt.Sprintf("weights/default, model.safetensors sha256 %x… (%d bytes)", sum[:6], len(data))
}
