package ndbg

import "io/fs"

// defaultModelFS returns the embedded default model's files. This build
// embeds none (see weights/README.md for how the default model is made).
func defaultModelFS() (fs.FS, bool) { return nil, false }
