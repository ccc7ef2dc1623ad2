//go:build nodefaultmodel

package ndbg

import "io/fs"

// defaultModelFS reports that this build embeds no default model: the
// nodefaultmodel tag leaves the weights out of binaries that never run one
// (the GPU run's data generator, train/gpu/build.sh, which carries it in a
// 64 MiB budget). Open then returns ErrNoDefaultModel without Options.Dir.
func defaultModelFS() (fs.FS, bool) { return nil, false }
