# Agent Output Verifier: build, test and run.
# `make dev` serves every route locally; `make test` runs the whole suite (CI calls exactly this).

GO        ?= go
VERSION   ?= 0.1.0-dev
LDFLAGS   := -s -w -X github.com/agent-output-verifier/verifier/pkg/wire.Version=$(VERSION)
BIN       := bin
# FUZZTIME bounds each fuzz campaign that `make test` runs.
FUZZTIME  ?= 8s

.PHONY: test unit staticcheck openapi fuzz bench dev verifier tools chromium clean

test: unit staticcheck openapi fuzz

# staticcheck runs at a pinned release (the one built for this Go) through `go run`, so that
# nothing is installed by hand: the module cache fetches it once.
STATICCHECK_VERSION := v0.8.2
staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

unit:
	@unformatted="$$($$($(GO) env GOROOT)/bin/gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path '*/node_modules/*'))"; \
		if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...
	# Allocation guards run without the race detector, which allocates on its own.
	$(GO) test -count=1 -run 'Allocs' ./pkg/...

# The OpenAPI conformance test (infra/openapi) is a module of its own, so that the validator it
# uses (pb33f/libopenapi-validator) never enters the service's module graph: it validates the
# served /openapi.json as OpenAPI 3.1 and real answers of every route against it.
openapi:
	cd infra/openapi && $(GO) vet ./... && $(GO) test -race -count=1 ./...

# Every parser's fuzz target (package:Target) runs for FUZZTIME on top of its seed corpus
# (which `unit` already runs): requests, paths, canonical JSON, receipts, signatures, payment
# headers and payloads, cursors, stored aggregates, client answers, MCP tool arguments and _meta.
FUZZ_TARGETS := \
	pkg/verify:FuzzDecodeRequest pkg/verify:FuzzParsePath pkg/jsonvalue:FuzzRender pkg/verify/schemacheck:FuzzSchemaCheck pkg/verify:FuzzCanonicalTree \
	pkg/receipt:FuzzCanonicalEqual pkg/receipt:FuzzVerifyAttestation pkg/receipt:FuzzRequestHashes pkg/receipt:FuzzCardKeys \
	pkg/receipt:FuzzSignMatchesStdlib \
	pkg/x402:FuzzDecodePaymentSignature pkg/x402:FuzzDecodePaymentRequired pkg/x402:FuzzDecodeSettleResponse \
	pkg/x402:FuzzDecodePaymentPayload pkg/x402:FuzzPaymentIDSolana pkg/x402:FuzzVerifyJWS \
	pkg/store/internal/storekey:FuzzDecodeCursor pkg/reputation:FuzzUnmarshalAggregate pkg/client:FuzzReadAnswer \
	pkg/mcpserver:FuzzToolArguments

# infra/fuzz/run fails a campaign on anything it finds and tolerates only Go 1.26's bare
# -fuzztime deadline race, after replaying the corpus.
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		GO=$(GO) infra/fuzz/run $${t%%:*} $${t##*:} $(FUZZTIME); \
	done

# Measures SPEC §14's bars in one run on this machine and writes docs/PERFORMANCE.md (several
# minutes): Go benchmarks, the whole job against the peer stacks (Node, Python, the naive Go
# composition), load on the local server, Lambda sizes and first invokes. The Node peer's packages
# (infra/bench/node) are installed from their lock file first. BENCHFLAGS passes flags to
# infra/bench (go run ./infra/bench -h); BENCHFLAGS=-peers measures and prints only the peers.
BENCH_NPM_DIR := infra/bench/node
bench: verifier tools $(BENCH_NPM_DIR)/node_modules/.installed
	$(GO) run ./infra/bench $(BENCHFLAGS)

verifier:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/verifier ./cmd/verifier

dev: verifier
	$(BIN)/verifier serve --addr 127.0.0.1:8080 --data .data

clean:
	rm -rf $(BIN) .data

# --- Lambda: SAM's build targets, local builds, the Runtime Interface Emulator (template.yaml) ---

# LAMBDAS are the function groups under functions/; `make build` builds each for LAMBDA_ARCH.
LAMBDAS     := verify wellknown mcp score log
LAMBDA_ARCH ?= arm64
# TOOLS holds the Go tools the tests run, installed at pinned versions by `make tools`.
TOOLS       := $(CURDIR)/$(BIN)/tools
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
RIE         := $(TOOLS)/aws-lambda-rie
# FN and EVENT choose what `make invoke` runs: functions/$(FN) with events/*.json.
FN          ?= verify
EVENT       ?= events/verify-pass.json

# LAMBDA_TAGS are every Lambda binary's build tags: no RPC shim (lambda.norpc), no HTTP/2 in
# net/http (nethttpomithttp2: everything a function calls speaks HTTP/1.1). internal/lambdatest's
# BuildTags is the same list for the emulator tests and the bench; infra/sam checks they agree.
LAMBDA_TAGS := lambda.norpc,nethttpomithttp2

# lambda_build builds functions/$(1) for linux/$(2) into $(3): static, stripped, with LAMBDA_TAGS.
lambda_build = GOOS=linux GOARCH=$(2) CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -tags $(LAMBDA_TAGS) -ldflags '$(LDFLAGS)' -o $(3) ./functions/$(1)

.PHONY: build build-VerifyFunction build-WellKnownFunction build-McpFunction build-ScoreFunction build-LogFunction invoke

# `sam build` (BuildMethod: makefile) runs build-<LogicalId> with ARTIFACTS_DIR set.
build-VerifyFunction:
	@test -n "$(ARTIFACTS_DIR)" || { echo "ARTIFACTS_DIR is not set: sam build sets it; use make build here"; exit 2; }
	$(call lambda_build,verify,arm64,$(ARTIFACTS_DIR)/bootstrap)

build-WellKnownFunction:
	@test -n "$(ARTIFACTS_DIR)" || { echo "ARTIFACTS_DIR is not set: sam build sets it; use make build here"; exit 2; }
	$(call lambda_build,wellknown,arm64,$(ARTIFACTS_DIR)/bootstrap)

build-McpFunction:
	@test -n "$(ARTIFACTS_DIR)" || { echo "ARTIFACTS_DIR is not set: sam build sets it; use make build here"; exit 2; }
	$(call lambda_build,mcp,arm64,$(ARTIFACTS_DIR)/bootstrap)

build-ScoreFunction:
	@test -n "$(ARTIFACTS_DIR)" || { echo "ARTIFACTS_DIR is not set: sam build sets it; use make build here"; exit 2; }
	$(call lambda_build,score,arm64,$(ARTIFACTS_DIR)/bootstrap)

build-LogFunction:
	@test -n "$(ARTIFACTS_DIR)" || { echo "ARTIFACTS_DIR is not set: sam build sets it; use make build here"; exit 2; }
	$(call lambda_build,log,arm64,$(ARTIFACTS_DIR)/bootstrap)

build:
	@set -e; for fn in $(LAMBDAS); do \
		echo "build $(BIN)/lambda/$$fn/bootstrap (linux/$(LAMBDA_ARCH))"; \
		$(call lambda_build,$$fn,$(LAMBDA_ARCH),$(BIN)/lambda/$$fn/bootstrap); \
	done

# The RIE test (internal/lambdatest) needs the emulator; CI installs it through `make test`.
tools: $(TOOLS)/.aws-lambda-rie-$(RIE_VERSION)
unit: tools

$(TOOLS)/.aws-lambda-rie-$(RIE_VERSION):
	GOBIN=$(TOOLS) $(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)
	touch $@

# Runs one function for the host architecture under the emulator on 127.0.0.1 with a temporary
# key and a DynamoDB table on a fresh dynalite (the functions link no embedded store; `make npm`
# installs dynalite), sends it EVENT and prints the response.
invoke: tools infra/dynalite/node_modules/.installed
	$(GO) run ./infra/lambda/invoke -rie $(RIE) -fn $(FN) -event $(EVENT)

# The browser test of /docs (cmd/verifier) runs Debian's chromium headless; installed when missing.
chromium:
	@command -v chromium >/dev/null 2>&1 || { echo "installing chromium (apt-get)"; \
		apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
unit: chromium

# --- npm tool sets the tests start (dynalite, ...), installed from their lock files ---

# infra/bench/node (BENCH_NPM_DIR, above) is the Node peer of `make bench`; the infra/bench tests
# run it briefly.
NPM_DIRS := infra/dynalite infra/x402 infra/mcp $(BENCH_NPM_DIR)
npm: $(NPM_DIRS:%=%/node_modules/.installed)
unit: npm

%/node_modules/.installed: %/package-lock.json %/package.json
	npm ci --prefix $* --no-audit --no-fund
	touch $@
.PHONY: npm
