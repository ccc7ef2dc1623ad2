// Package cuda holds the CUDA kernels of the inference engine: their sources
// (*.cu, in the style of llm.c's dev/cuda: a comment per numbered variant,
// CPU references on the Go side) and the PTX that nvcc builds from them for
// sm_80 and sm_90, embedded so that Go builds need no CUDA compiler.
//
// This package does not import the CUDA driver; package
// github.com/ndbg/ndbg/cuda loads the PTX and launches the kernels.
package cuda

//go:generate sh gen.sh

import (
	"embed"
	"fmt"
	"regexp"
)

//go:embed *.ptx
var files embed.FS

// Modules lists the PTX modules, one per .cu source.
var Modules = []string{"gemv", "gemm", "vector", "attention", "sample", "forward"}

// PTX returns the PTX text of module name for arch ("sm_80" or "sm_90"),
// NUL-terminated as cuModuleLoadData expects.
func PTX(name, arch string) (string, error) {
	b, err := files.ReadFile(name + "." + arch + ".ptx")
	if err != nil {
		return "", fmt.Errorf("kernels/cuda: no PTX for %s on %s: %w", name, arch, err)
	}
	return string(b) + "\x00", nil
}

var entryRE = regexp.MustCompile(`(?m)^\.visible \.entry ([A-Za-z_][A-Za-z0-9_]*)\(`)

// Functions returns the names of the kernels (.entry) defined in a PTX text.
func Functions(ptx string) []string {
	var names []string
	for _, m := range entryRE.FindAllStringSubmatch(ptx, -1) {
		names = append(names, m[1])
	}
	return names
}
