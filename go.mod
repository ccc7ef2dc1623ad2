module github.com/ndbg/ndbg

go 1.26.8

require (
	github.com/google/go-dap v0.12.0
	github.com/stretchr/testify v1.12.1
	github.com/x448/float16 v0.8.4
	gorgonia.org/cu v0.9.6
)

require (
	github.com/google/uuid v1.1.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
