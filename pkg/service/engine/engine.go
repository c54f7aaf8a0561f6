// Package engine hands pkg/verify's engine to the service as its service.Engine. It is the one
// package that joins the two, so that only the programs that verify (the local server, the verify
// and MCP functions) import it and link the engine and its JSON Schema library; the score and
// discovery functions build their service without it.
package engine

import (
	"errors"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/verify"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// New is the engine of limits (zero fields take their defaults) as the service uses it.
func New(limits wire.Limits) service.Engine { return checker{verify.NewEngine(limits)} }

type checker struct{ e *verify.Engine }

func (c checker) Decode(body []byte) (service.Checkable, error) {
	req, sch, err := c.e.Decode(body)
	if err != nil {
		return nil, err
	}
	return &job{e: c.e, req: req, sch: sch}, nil
}

// job is one decoded request and its compiled schema.
type job struct {
	e   *verify.Engine
	req *verify.Request
	sch *verify.Schema
}

func (j *job) StopWhen(done <-chan struct{}) { j.req.StopWhen(done) }

func (j *job) CheckSchema() error { return stopped(j.e.CheckSchema(j.req, j.sch)) }

func (j *job) Finish(env service.Envelope, key receipt.Key) (service.Checked, error) {
	venv := verify.Envelope{VerificationID: env.VerificationID, VerifiedAt: env.VerifiedAt,
		VerifierVersion: env.VerifierVersion, Verify: env.Verify, Payment: env.Payment}
	var a verify.Attester = key
	var hk *hashingKey
	if env.HashReceipt {
		hk = &hashingKey{Key: key}
		a = hk
	}
	out, rep, err := j.e.Finish(j.req, j.sch, venv, a)
	if err != nil {
		return service.Checked{}, stopped(err)
	}
	c := service.Checked{Body: out, VerificationID: rep.VerificationID, TaskID: j.req.TaskID, AgentID: j.req.AgentID,
		Result: rep.Result, OverallRatio: rep.OverallRatio(), KeyVersion: key.Version, EnforceRules: j.req.EnforceRules,
		Hashes: receipt.Hashes{Output: rep.OutputHash, Schema: rep.SchemaHash, Rules: rep.RulesHash, Request: rep.RequestHash}}
	if hk != nil {
		c.ReceiptHash, c.HasReceiptHash = hk.hash, hk.ok
	}
	return c, nil
}

// hashingKey signs as its key does and keeps the receipt hash of the last answer it signed,
// computed while signing (receipt.Key.AttestCanonicalHashed) for the receipt log.
type hashingKey struct {
	receipt.Key
	hash [32]byte
	ok   bool
}

func (h *hashingKey) AttestCanonical(context string, response, canonical []byte, timestamp string) ([]byte, error) {
	out, sum, ok, err := h.Key.AttestCanonicalHashed(context, response, canonical, timestamp)
	h.hash, h.ok = sum, ok
	return out, err
}

// stopped says the engine's stop in the service's words; every other error passes unchanged.
func stopped(err error) error {
	if errors.Is(err, verify.ErrStopped) {
		return service.ErrStopped
	}
	return err
}
