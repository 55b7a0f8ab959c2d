# Nexus: build, run and test. `make run` and `make test` are the two commands a fresh machine with
# Go needs; everything else is for maintainers.

GO        ?= go
BIN       ?= bin
DATA_DIR  ?= ./nexus-data
# VERSION is the release the VERSION file names; COMMIT the commit built, "-dirty" when the work
# tree has changes. The build stamps both into bin/nexus (`nexus version`); `make VERSION=…`
# overrides the first.
VERSION   := $(shell cat VERSION)
COMMIT    := $(shell git describe --always --dirty --abbrev=12 --exclude='*' 2>/dev/null || echo unknown)
LDFLAGS   := -X github.com/nexuskernel/nexus/internal/cli.Version=$(VERSION) -X github.com/nexuskernel/nexus/internal/cli.Commit=$(COMMIT)
# FUZZTIME is how long `make fuzz` runs each fuzz target. `make test` runs each for the number of
# inputs FUZZ_TARGETS gives it instead of for a time: go test's fuzzing coordinator can report its
# own -fuzztime deadline as a failure ("context deadline exceeded", go.dev/issue/75804), and a
# count budget sets no deadline.
FUZZTIME ?= 5m

.PHONY: all build plugins run image test test-unit test-e2e test-postgres test-live fuzz fuzz-short soak bench lint generate generate-check proto contracts clean

all: build

## build: every binary of the project into bin/, static, the version and commit stamped
# The binaries are static (CGO_ENABLED=0: the SQLite driver is pure Go), so they run on any Linux
# of their architecture and in an image with nothing else in it.
build:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

## plugins: the four plugin binaries into bin/, beside bin/nexus
plugins:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/nexus-memory-fs ./cmd/nexus-memory-postgres ./cmd/nexus-tools-example ./cmd/nexus-mcp-bridge

# CONFIG is the settings file `make run` serves with: the sample, which starts the two plugins
# built beside bin/nexus. `make run CONFIG=` serves without a settings file.
CONFIG ?= examples/nexus.hcl

## run: build, then serve on the embedded default (SQLite in ./nexus-data) with CONFIG
run: build
	$(BIN)/nexus serve --data-dir $(DATA_DIR) --config "$(CONFIG)" $(RUN_ARGS)

# The container image (Dockerfile, docs/operations.md#the-container-image): FROM scratch, so no
# base image is pulled. Its build context is a directory this target stages: the binaries
# `make build` makes, the CA bundle of the build machine (Debian's ca-certificates), and the
# passwd and group files of its one user.
IMAGE            ?= nexus:$(VERSION)
CONTAINER_ENGINE ?= $(shell command -v podman 2>/dev/null || command -v docker 2>/dev/null)
CA_BUNDLE        ?= /etc/ssl/certs/ca-certificates.crt
IMAGE_CONTEXT    := $(BIN)/image-context
# IMAGE_UID is the image's user and group, as the Dockerfile names them: a high id no host user
# has by default (distroless images use the same).
IMAGE_UID        := 65532
BINARIES         := $(notdir $(wildcard cmd/*))

## image: the container image of the binaries `make build` makes, with podman or docker (IMAGE names it)
image: build
	@test -n "$(CONTAINER_ENGINE)" || { echo "make image: needs podman or docker (apt-get install podman)"; exit 1; }
	@test -s "$(CA_BUNDLE)" || { echo "make image: no CA bundle at $(CA_BUNDLE) (apt-get install ca-certificates, or set CA_BUNDLE)"; exit 1; }
	rm -rf $(IMAGE_CONTEXT)
	mkdir -p $(IMAGE_CONTEXT)/root/usr/local/bin $(IMAGE_CONTEXT)/root/etc/ssl/certs $(IMAGE_CONTEXT)/root/tmp $(IMAGE_CONTEXT)/owned/data
	chmod 1777 $(IMAGE_CONTEXT)/root/tmp
	chmod 0700 $(IMAGE_CONTEXT)/owned/data
	cp $(addprefix $(BIN)/,$(BINARIES)) $(IMAGE_CONTEXT)/root/usr/local/bin/
	cp $(CA_BUNDLE) $(IMAGE_CONTEXT)/root/etc/ssl/certs/ca-certificates.crt
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnexus:x:$(IMAGE_UID):$(IMAGE_UID):nexus:/data:/sbin/nologin\n' > $(IMAGE_CONTEXT)/root/etc/passwd
	printf 'root:x:0:\nnexus:x:$(IMAGE_UID):\n' > $(IMAGE_CONTEXT)/root/etc/group
	$(CONTAINER_ENGINE) build $(if $(findstring podman,$(notdir $(CONTAINER_ENGINE))),--format docker) \
		--build-arg VERSION=$(VERSION) --build-arg REVISION=$(COMMIT) \
		-t $(IMAGE) -f Dockerfile $(IMAGE_CONTEXT)

# PG_LINE says, once, whether the suite's PostgreSQL half runs and on which database: the host,
# port and database name of NEXUS_TEST_POSTGRES_URL, never its user or password.
PG_LINE = if [ -n "$$NEXUS_TEST_POSTGRES_URL" ]; then \
	echo "PostgreSQL half: runs on $$(printf '%s' "$$NEXUS_TEST_POSTGRES_URL" | sed -E 's|^[A-Za-z]+://([^@/?]*@)?([^/?]*)/?([^?]*).*$$|\2/\3|')"; \
	else echo "PostgreSQL half: skipped (NEXUS_TEST_POSTGRES_URL is not set; SQLite only)"; fi

## test: the whole suite with the race detector, then a short run of every fuzz target
test: test-unit fuzz-short

# TEST_TIMEOUT bounds one package's test binary. The suite takes about a quarter of it on an idle
# 2-core machine; the slack is for a machine busy with other work, where go test's own default
# (10 minutes) would abort the end-to-end package and lose its report.
TEST_TIMEOUT ?= 30m

test-unit:
	@$(PG_LINE)
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...

## test-e2e: the end-to-end suite against the plugin binaries `make plugins` put in bin/, then the
## plugin load test again without the race detector, at its full rate (without
## NEXUS_PLUGIN_BIN_DIR the suite builds them itself; with build tag e2e it adds a nexus server
## whose plugin block bridges the public server-filesystem), the MCP bridge against the public MCP servers
## (installed from npm with npm ci at the versions providers/mcp-bridge/mcpbridgetest/npm pins;
## skipped without node and npm unless NEXUS_TEST_REQUIRE_NPM=1), then README.md and examples/ run in a fresh
## clone of HEAD in an empty directory (internal/readmetest, build tag e2e: it compiles the module again,
## in minutes), with the systemd unit checked by systemd-analyze and the container image built by
## `make image` with podman, exported and served from its tree (skipped without them unless
## NEXUS_TEST_REQUIRE_DEPLOY=1)
test-e2e: plugins
	NEXUS_PLUGIN_BIN_DIR=$(abspath $(BIN)) $(GO) test -tags e2e -race -count=1 ./internal/e2e/...
	NEXUS_PLUGIN_BIN_DIR=$(abspath $(BIN)) $(GO) test -tags e2e -count=1 -run '^TestPluginMemoryUnderLoad$$' ./internal/e2e/
	$(GO) test -tags e2e -race -count=1 -timeout 20m ./providers/mcp-bridge/
	$(GO) test -tags e2e -count=1 -timeout 40m -v ./internal/readmetest/

## test-postgres: the whole suite on PostgreSQL too; NEXUS_TEST_POSTGRES_URL names a database the
## tests may create schemas in
test-postgres:
	@test -n "$$NEXUS_TEST_POSTGRES_URL" || { echo "set NEXUS_TEST_POSTGRES_URL"; exit 1; }
	@$(PG_LINE)
	$(GO) test -race -count=1 ./...

## test-live: the model adapters against real servers named by NEXUS_TEST_OPENAI_BASE_URL (with
## NEXUS_TEST_OPENAI_MODEL) and NEXUS_TEST_ANTHROPIC_BASE_URL (with NEXUS_TEST_ANTHROPIC_MODEL and
## NEXUS_TEST_ANTHROPIC_API_KEY); docs/providers.md lists the variables
test-live:
	$(GO) test -count=1 -run TestLive -v ./core/model/openai ./core/model/anthropic

# The fuzz targets, as package:FuzzName:inputs triples; `make fuzz` and `make test` both run them.
# The input counts are each about three seconds of fuzzing on a 2-core machine (targets differ in
# speed by a factor of a thousand: FuzzCompile compiles whole declaration sets).
FUZZ_TARGETS := \
	./core/envelope:FuzzValidate:100000 \
	./core/envelope:FuzzEscape:20000 \
	./sdk/announce:FuzzValidateAnnouncement:10000 \
	./sdk/jsonwire:FuzzCanonicalJSON:150000 \
	./core/model:FuzzMockScript:25000 \
	./sdk/jsonwire:FuzzCanonicalValue:120000 \
	./sdk/memory:FuzzIntegerValue:12000 \
	./sdk/memory:FuzzReadSlice:40000 \
	./sdk/memory:FuzzMatcher:10000 \
	./providers/memory-fs:FuzzParseHeaderFast:40000 \
	./core/declare:FuzzCompile:150 \
	./core/declare:FuzzCompileAlias:18000 \
	./core/declare:FuzzResolveCall:30000 \
	./sdk/jsonwire:FuzzDecode:100000 \
	./core/projection:FuzzProject:40000 \
	./core/profiles:FuzzProfileReadBack:20000 \
	./core/steps:FuzzJudge:15000 \
	./core/runs:FuzzCheckCall:5000 \
	./core/kernel:FuzzToolSearch:7000 \
	./core/model/openai:FuzzStream:8000 \
	./core/model/anthropic:FuzzStream:15000 \
	./providers/mcp-bridge:FuzzNameMapping:6000 \
	./providers/mcp-bridge:FuzzResultMapping:5000

# FUZZ_FOR, when set, replaces every target's input count with one -fuzztime (a duration or Nx).
FUZZ_FOR ?=

fuzz-short:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; budget="$(FUZZ_FOR)"; \
		[ -n "$$budget" ] || budget=$${rest##*:}x; \
		echo "fuzz $$name ($$budget)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $$budget $$pkg || exit 1; \
	done

## fuzz: every fuzz target for FUZZTIME each
fuzz:
	@$(MAKE) fuzz-short FUZZ_FOR=$(FUZZTIME)

## soak: the suite with its long loops on: the plugin crash loops (plugins/ and the end-to-end one
## against a real server) kill a plugin mid-call 100 times, and the memory plugins' sustained load
## (internal/e2e) runs each of its phases for 300 s instead of 30, and the two-instance kill loads
## for 20 s with the kill at 8 s
soak:
	NEXUS_SOAK=1 $(GO) test -race -count=1 -timeout 2h ./...

## bench: the benchmarks, measured side by side with their baselines (B1 in sdk/memory, B2 and a
## re-announcement's host path in plugins, B10 in providers/memory-fs, B11 in providers/memory-postgres with NEXUS_TEST_POSTGRES_URL,
## B12, one run end to end through a runner against bare handlers plus its SQL, in core/server,
## B13 and the retry decorator's cost in core/model/openai, B14 in core/model/openai and anthropic,
## B15 in providers/mcp-bridge, B16 in internal/e2e, B20 and B24 in internal/e2e with NEXUS_TEST_POSTGRES_URL)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 -v ./...

# TOOL_PLUGIN is the example plugin, a module of its own that ./... does not reach: lint runs vet
# and the root module's pinned staticcheck inside it.
TOOL_PLUGIN := examples/tool-plugin

## lint: formatting, vet and staticcheck, over the e2e-tagged files and the example plugin module too
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./internal/readmetest/ ./internal/e2e/
	$(GO) tool staticcheck ./...
	$(GO) tool staticcheck -tags e2e ./internal/readmetest/ ./internal/e2e/
	cd $(TOOL_PLUGIN) && GOWORK=off $(GO) vet ./...
	sc=$$($(GO) tool -n staticcheck) && cd $(TOOL_PLUGIN) && GOWORK=off $$sc ./...

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
