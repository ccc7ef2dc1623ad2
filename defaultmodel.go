//go:build !nodefaultmodel

package ndbg

import (
	"embed"
	"io/fs"
)

// defaultModel is the default neural debugger, trained by train/make_default.sh
// (its model card is weights/default/README.md), embedded so ndbg-infer needs
// no download. The weights are model.safetensors, or shards and their index
// (model-00001-of-0000N.safetensors, model.safetensors.index.json: a model
// from the GPU run, whose files stay under 16 MiB each); the pattern takes
// either (TestDefaultModelEmbedsShards).
//
//go:embed weights/default/config.json weights/default/tokenizer.json weights/default/model*.safetensors*
var defaultModel embed.FS

// defaultModelFS returns the embedded default model's files.
func defaultModelFS() (fs.FS, bool) {
	sub, err := fs.Sub(defaultModel, "weights/default")
	return sub, err == nil
}
