# Agent Output Verifier: build, test and run.
# `make dev` serves every route locally; `make test` runs the whole suite (CI calls exactly this).

GO        ?= go
VERSION   ?= 0.1.0-dev
LDFLAGS   := -s -w -X github.com/agent-output-verifier/verifier/pkg/verify.Version=$(VERSION)
BIN       := bin
# FUZZTIME bounds each fuzz campaign that `make test` runs.
FUZZTIME  ?= 10s

.PHONY: test unit fuzz bench dev verifier tools clean

test: unit fuzz

unit:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

# Each fuzz target runs for FUZZTIME on top of its seed corpus (which `unit` already runs).
fuzz:
	$(GO) test ./pkg/verify -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/verify -run '^$$' -fuzz '^FuzzParsePath$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/verify -run '^$$' -fuzz '^FuzzSchemaCheck$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/receipt -run '^$$' -fuzz '^FuzzCanonicalEqual$$' -fuzztime $(FUZZTIME)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...

verifier:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/verifier ./cmd/verifier

dev: verifier
	$(BIN)/verifier serve --addr 127.0.0.1:8080 --data .data

clean:
	rm -rf $(BIN) .data
