package ndbg

import "context"

// openEmbedded loads the default model embedded in the binary.
func openEmbedded(context.Context, Options) (*Model, error) {
	return nil, ErrNoDefaultModel
}
