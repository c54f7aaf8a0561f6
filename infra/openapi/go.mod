module github.com/agent-output-verifier/verifier/infra/openapi

go 1.26

require github.com/agent-output-verifier/verifier v0.0.0

replace github.com/agent-output-verifier/verifier => ../..
