# Nexus: build, run and test. `make run` and `make test` are the two commands a fresh machine with
# Go needs; everything else is for maintainers.

GO        ?= go
BIN       ?= bin
DATA_DIR  ?= ./nexus-data
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/nexuskernel/nexus/internal/cli.Version=$(VERSION)
# FUZZTIME is how long `make fuzz` runs each fuzz target; `make test` runs each for FUZZTIME_SHORT.
FUZZTIME       ?= 5m
FUZZTIME_SHORT ?= 4s

.PHONY: all build run test test-unit fuzz fuzz-short soak bench lint generate contracts clean

all: build

## build: every binary of the project into bin/
build:
	@mkdir -p $(BIN)
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

## run: build, then serve on the embedded default (SQLite in ./nexus-data)
run: build
	$(BIN)/nexus serve --data-dir $(DATA_DIR) $(RUN_ARGS)

## test: the whole suite with the race detector, then a short run of every fuzz target
test: test-unit fuzz-short

test-unit:
	$(GO) test -race -count=1 ./...

# The fuzz targets, as package:FuzzName pairs; `make fuzz` and `make test` both run them.
FUZZ_TARGETS := \
	./core/envelope:FuzzValidate \
	./sdk/announce:FuzzValidateAnnouncement \
	./core/model:FuzzMockScript \
	./core/canonjson:FuzzCanonicalize \
	./sdk/memory:FuzzIntegerValue \
	./sdk/memory:FuzzReadSlice \
	./sdk/memory:FuzzMatcher \
	./providers/memory-fs:FuzzParseHeaderFast \
	./core/declare:FuzzCompile \
	./core/declare:FuzzCompileAlias \
	./core/declare:FuzzResolveCall \
	./core/declare/jsonv:FuzzDecode \
	./core/projection:FuzzProject \
	./core/profiles:FuzzProfileReadBack

fuzz-short:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($(FUZZTIME_SHORT))"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME_SHORT) $$pkg || exit 1; \
	done

## fuzz: every fuzz target for FUZZTIME each
fuzz:
	@$(MAKE) fuzz-short FUZZTIME_SHORT=$(FUZZTIME)

## soak: long crash and load loops (none yet beyond the suite)
soak:
	NEXUS_SOAK=1 $(GO) test -race -count=1 -timeout 2h ./...

## bench: the benchmarks, measured side by side with their baselines
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 -v ./...

## lint: formatting, vet and staticcheck
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

## generate: regenerate committed generated code
generate:
	$(GO) generate ./...

## contracts: rewrite the contract pack and the golden catalog from the registry
contracts:
	$(GO) test ./core/registry -run 'TestContractPack|TestGoldenCatalog' -update

clean:
	rm -rf $(BIN)
