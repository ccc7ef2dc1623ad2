# ndbg: build, test, benchmark, lint. `make test` runs every test that needs no GPU.
GO ?= go
PKGS := ./...

.PHONY: all build test bench lint fuzz cuda-check cuda-ptx

all: build

build:
	$(GO) build $(PKGS)

# Every test that runs without a GPU, with the assembly kernels and with the
# pure-Go fallback (noasm).
test:
	$(GO) test -count=1 $(PKGS)
	$(GO) test -count=1 -tags noasm ./kernels/... ./model/...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2x $(PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

# Each fuzz target for FUZZTIME (default 1m).
FUZZTIME ?= 1m
fuzz:
	@grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | sed 's/:func /:/' | while IFS=: read -r file fn; do \
		pkg=./$$(dirname "$${file#./}"); echo "== $$pkg $$fn"; \
		$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) "$$pkg" || exit 1; \
	done

# The CUDA backend compiles (it runs only on a GPU machine: cuda/README.md).
cuda-check:
	$(GO) vet -tags cuda ./cuda/... ./bench/cuda/ ./kernels/cuda/
	$(GO) test -tags cuda -c -o /dev/null ./cuda/

# Rebuild the committed PTX from kernels/cuda/*.cu (needs nvcc 11.8+).
cuda-ptx:
	$(GO) generate ./kernels/cuda
