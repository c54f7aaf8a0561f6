package verify

// Version is the build's version, reported as verifier_version. Release builds set it with
// -ldflags "-X github.com/agent-output-verifier/verifier/pkg/verify.Version=<v>".
var Version = "0.1.0-dev"
