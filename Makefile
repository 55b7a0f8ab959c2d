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

.PHONY: all build plugins run test test-unit test-e2e test-postgres fuzz fuzz-short soak bench lint generate generate-check proto contracts clean

all: build

## build: every binary of the project into bin/
build:
	@mkdir -p $(BIN)
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

## plugins: the three plugin binaries into bin/, beside bin/nexus
plugins:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./cmd/nexus-memory-fs ./cmd/nexus-memory-postgres ./cmd/nexus-tools-example

## run: build, then serve on the embedded default (SQLite in ./nexus-data)
run: build
	$(BIN)/nexus serve --data-dir $(DATA_DIR) $(RUN_ARGS)

## test: the whole suite with the race detector, then a short run of every fuzz target
test: test-unit fuzz-short

test-unit:
	$(GO) test -race -count=1 ./...

## test-e2e: the end-to-end suite against the plugin binaries `make plugins` put in bin/ (without
## NEXUS_PLUGIN_BIN_DIR the suite builds them itself)
test-e2e: plugins
	NEXUS_PLUGIN_BIN_DIR=$(abspath $(BIN)) $(GO) test -race -count=1 ./internal/e2e/...

## test-postgres: the whole suite on PostgreSQL too; NEXUS_TEST_POSTGRES_URL names a database the
## tests may create schemas in
test-postgres:
	@test -n "$$NEXUS_TEST_POSTGRES_URL" || { echo "set NEXUS_TEST_POSTGRES_URL"; exit 1; }
	$(GO) test -race -count=1 ./...

# The fuzz targets, as package:FuzzName pairs; `make fuzz` and `make test` both run them.
FUZZ_TARGETS := \
	./core/envelope:FuzzValidate \
	./sdk/announce:FuzzValidateAnnouncement \
	./sdk/announce/jsonwire:FuzzCanonicalJSON \
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
	./core/profiles:FuzzProfileReadBack \
	./core/runs:FuzzCheckCall \
	./core/runs:FuzzEscape \
	./core/kernel:FuzzToolSearch

fuzz-short:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($(FUZZTIME_SHORT))"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME_SHORT) $$pkg || exit 1; \
	done

## fuzz: every fuzz target for FUZZTIME each
fuzz:
	@$(MAKE) fuzz-short FUZZTIME_SHORT=$(FUZZTIME)

## soak: the suite with its long loops on: the plugin crash loops (plugins/ and the end-to-end one
## against a real server) kill a plugin mid-call 100 times
soak:
	NEXUS_SOAK=1 $(GO) test -race -count=1 -timeout 2h ./...

## bench: the benchmarks, measured side by side with their baselines (B1 in sdk/memory, B2 in
## plugins, B10 in providers/memory-fs, B11 in providers/memory-postgres with NEXUS_TEST_POSTGRES_URL)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 -v ./...

## lint: formatting, vet and staticcheck
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

# The plugin protocol's sources and the one protoc that regenerates them. protoc writes its
# version into every generated header, so regeneration is byte-exact only with this release
# (Debian 12's protobuf-compiler); the Go generators are pinned as tools in go.mod and run
# through `go tool`.
PROTO_DIR     := contracts/proto
PROTO_FILES   := $(sort $(wildcard $(PROTO_DIR)/nexus/plugin/v1/*.proto))
PROTOC        ?= protoc
PROTOC_VERSION := 3.21.12
MODULE        := github.com/nexuskernel/nexus

## proto: regenerate sdk/internal/pb from contracts/proto (needs protoc $(PROTOC_VERSION): apt-get install protobuf-compiler)
proto:
	@$(PROTOC) --version | grep -qx 'libprotoc $(PROTOC_VERSION)' || { echo "proto: protoc $(PROTOC_VERSION) is required (apt-get install protobuf-compiler), found: $$($(PROTOC) --version 2>&1)"; exit 1; }
	$(PROTOC) -I $(PROTO_DIR) \
		--plugin=protoc-gen-go=$$($(GO) tool -n protoc-gen-go) \
		--plugin=protoc-gen-go-grpc=$$($(GO) tool -n protoc-gen-go-grpc) \
		--go_out=. --go_opt=module=$(MODULE) \
		--go-grpc_out=. --go-grpc_opt=module=$(MODULE) \
		$(PROTO_FILES)

## generate: regenerate committed generated code
generate: proto
	$(GO) generate ./...

## generate-check: fail when regeneration changes anything committed
generate-check: generate
	@git add -N sdk/internal/pb && git diff --exit-code --stat -- sdk/internal/pb || { echo "generated code is stale: run make generate and commit"; exit 1; }

## contracts: rewrite the contract pack and the golden catalog from the registry
contracts:
	$(GO) test ./core/registry -run 'TestContractPack|TestGoldenCatalog' -update

clean:
	rm -rf $(BIN)
