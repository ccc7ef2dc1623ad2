# ndbg: build, test, benchmark, lint. `make test` runs every test that needs no GPU.
GO ?= go
# The trainer's tests need PyTorch: Debian's is importable from /usr/bin/python3.
PY ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
PKGS := ./...

.PHONY: all build test bench lint fuzz generate cuda-check cuda-ptx

all: build

build:
	$(GO) build $(PKGS)

# Every test that runs without a GPU: the trainer's (Python, unittest), then
# the Go tests with the assembly kernels and with the
# pure-Go fallback (noasm). internal/testsupport/testreport runs them all and prints
# each package's line, every skipped test with its reason, the output of
# failures, and one closing "N passed, N failed, N skipped" over all of
# them. NDBG_REQUIRE_ORACLES=1 makes a test whose oracle (internal/testsupport/oracle;
# README's "Two commands" lists them) is missing fail instead of skip; CI
# sets it.
test:
	$(GO) run ./internal/testsupport/testreport -unittest train -python $(PY) -count=1 -timeout 30m $(PKGS) + -count=1 -timeout 30m -tags noasm ./kernels/... ./model/...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2x $(PKGS)

# The assembly kernels have pure-Go twins (-tags noasm, and every other
# architecture): vet builds those too, so a name that only the amd64
# build defines fails here and not on a user's arm64 machine.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags noasm $(PKGS)
	GOARCH=arm64 $(GO) vet $(PKGS)

# Rewrite the generated assembly kernels (kernels/gen_*.py, see
# kernels/generate.go); kernels' TestGeneratedAssemblyIsUpToDate, which
# `make test` and CI run, fails when a committed one has drifted.
generate:
	$(GO) generate ./kernels

# Each fuzz target for FUZZTIME (default 1m).
FUZZTIME ?= 1m
fuzz:
	@grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | sed 's/:func /:/' | while IFS=: read -r file fn; do \
		pkg=./$$(dirname "$${file#./}"); echo "== $$pkg $$fn"; \
		$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) "$$pkg" || exit 1; \
	done

# The cuda build compiles: the CUDA device and everything that links it
# (ndbg, ndbg-infer, cuda-bench); it runs only on a GPU machine
# (cuda/README.md).
cuda-check:
	$(GO) build -tags cuda ./...
	$(GO) vet -tags cuda ./...
	$(GO) test -tags cuda -c -o /dev/null ./cuda/

# Rebuild the committed PTX from kernels/cuda/*.cu (needs nvcc 11.8+).
cuda-ptx:
	$(GO) generate ./kernels/cuda
