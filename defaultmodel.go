package ndbg

import (
	"embed"
	"io/fs"
)

// defaultModel is the default neural debugger, trained by train/make_default.sh
// (its model card is weights/default/README.md), embedded so ndbg-infer needs
// no download.
//
//go:embed weights/default/config.json weights/default/tokenizer.json weights/default/*.safetensors
var defaultModel embed.FS

// defaultModelFS returns the embedded default model's files.
func defaultModelFS() (fs.FS, bool) {
	sub, err := fs.Sub(defaultModel, "weights/default")
	return sub, err == nil
}
