package service

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/translog"
)

// ReceiptLog is the store of the receipt log (SPEC §15) as the service uses it: the records, the
// pending leaves and the tree (store.ReceiptLog).
type ReceiptLog interface {
	ReceiptRecorder
	translog.Storage
	translog.IdentityKeeper
	Receipt(ctx context.Context, verificationID string) (r store.Receipt, ok bool, err error)
}

var _ ReceiptLog = store.ReceiptLog(nil)

// LogEnabled says the service keeps a receipt log: its routes and tool answer.
func (s *Service) LogEnabled() bool { return s.d.Receipts != nil }

// LogIdentity is the log's origin and its public key in the form note.NewVerifier reads, for the
// agent card.
func (s *Service) LogIdentity() (origin, verifierKey string) {
	return s.d.LogKey.Origin, s.d.LogKey.VerifierKey
}

// errNoLog answers the log's routes in a deployment that keeps none.
var errNoLog = apperr.New(apperr.NotFound, "This deployment keeps no receipt log.")

// errLogEmpty answers GET /log/checkpoint before the first leaf is sequenced.
func errLogEmpty() *apperr.Error {
	e := apperr.New(apperr.NotFound, "The receipt log has no leaves yet. Try again after the first verification has been sequenced.")
	// Retryable, so that the router sends the Retry-After it names (as for a record not yet written).
	e.Retryable, e.RetryAfter = true, 1
	return e
}

// LogCheckpoint is the latest signed checkpoint (a C2SP signed note).
func (s *Service) LogCheckpoint(ctx context.Context) ([]byte, error) {
	if s.d.Receipts == nil {
		return nil, errNoLog
	}
	h, err := s.d.Receipts.LogHead(ctx)
	if err != nil {
		return nil, fmt.Errorf("log checkpoint: %w", err)
	}
	if h.Size == 0 {
		return nil, errLogEmpty()
	}
	return h.Checkpoint, nil
}

// LogTreeSize is how many leaves the committed tree has.
func (s *Service) LogTreeSize(ctx context.Context) (int64, error) {
	if s.d.Receipts == nil {
		return 0, errNoLog
	}
	h, err := s.d.Receipts.LogHead(ctx)
	return h.Size, err
}

// LogTile is the tile at path ("tile/8/…", tlog's layout) and whether it is full (immutable).
func (s *Service) LogTile(ctx context.Context, path string) ([]byte, bool, error) {
	if s.d.Receipts == nil {
		return nil, false, errNoLog
	}
	v, err := translog.Read(ctx, s.d.Receipts)
	if err != nil {
		return nil, false, err
	}
	data, full, err := v.Tile(path)
	if errors.Is(err, translog.ErrBadTile) {
		return nil, false, apperr.New(apperr.NotFound, "No such tile: tiles are tile/8/<level>/<n>[.p/<width>] and tile/8/data/<n>[.p/<width>] within the latest checkpoint's tree.")
	}
	return data, full, err
}

// Record is the stored record of a verification (GET /verifications/{id}, MCP get_receipt), with
// its place in the log once sequenced (Pending otherwise).
type Record struct {
	store.Receipt
	Inclusion *translog.Inclusion // nil while pending
}

// Pending says the record's leaf is not sequenced yet.
func (r Record) Pending() bool { return r.Inclusion == nil }

// recordJSON is the wire form of a Record (SPEC §15).
type recordJSON struct {
	VerificationID string  `json:"verification_id"`
	ReceiptHash    string  `json:"receipt_hash"`
	Result         string  `json:"result"`
	VerifiedAt     string  `json:"verified_at"`
	KeyVersion     string  `json:"key_version"`
	OutputHash     string  `json:"output_hash"`
	SchemaHash     string  `json:"schema_hash"`
	RulesHash      string  `json:"rules_hash"`
	RequestHash    *string `json:"request_hash"`
	// TaskID is null for anonymous and test- verifications, whose task ids the public record
	// does not hold (SPEC §9 lists the others' already).
	TaskID          *string         `json:"task_id"`
	EnforceRules    bool            `json:"enforce_rules"`
	VerifierVersion *string         `json:"verifier_version"`
	Settlement      json.RawMessage `json:"settlement"`
	Log             any             `json:"log"`
}

// LogProof is a record's log block once sequenced.
type LogProof struct {
	Index          int64    `json:"index"`
	TreeSize       int64    `json:"tree_size"`
	Checkpoint     string   `json:"checkpoint"`
	InclusionProof []string `json:"inclusion_proof"`
}

// MarshalJSON renders the record as SPEC §15 says.
func (r Record) MarshalJSON() ([]byte, error) {
	out := recordJSON{
		VerificationID: r.VerificationID, ReceiptHash: fmt.Sprintf("%x", r.ReceiptHash[:]), Result: r.Result,
		VerifiedAt: r.VerifiedAt.UTC().Format(time.RFC3339Nano), KeyVersion: r.KeyVersion,
		OutputHash: r.OutputHash, SchemaHash: r.SchemaHash, RulesHash: r.RulesHash,
		EnforceRules: r.EnforceRules, Settlement: r.Settlement, Log: map[string]string{"status": "pending"},
	}
	if r.RequestHash != "" {
		out.RequestHash = &r.RequestHash
	}
	if r.TaskID != "" {
		out.TaskID = &r.TaskID
	}
	if r.VerifierVersion != "" {
		out.VerifierVersion = &r.VerifierVersion
	}
	if len(out.Settlement) == 0 {
		out.Settlement = json.RawMessage("null")
	}
	if inc := r.Inclusion; inc != nil {
		p := LogProof{Index: inc.Index, TreeSize: inc.TreeSize, Checkpoint: string(inc.Checkpoint), InclusionProof: make([]string, len(inc.Proof))}
		for i, h := range inc.Proof {
			p.InclusionProof[i] = base64.StdEncoding.EncodeToString(h[:])
		}
		out.Log = p
	}
	return json.Marshal(out)
}

// VerificationRecord reads the stored record of verification id and, once its leaf is
// sequenced, proves its inclusion under the latest checkpoint.
func (s *Service) VerificationRecord(ctx context.Context, id string) (Record, error) {
	if s.d.Receipts == nil {
		return Record{}, errNoLog
	}
	if err := CheckVerificationID(id); err != nil {
		return Record{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.d.StoreTimeout)
	defer cancel()
	r, ok, err := s.d.Receipts.Receipt(ctx, id)
	if err != nil {
		return Record{}, s.unavailable("read verification record", err)
	}
	if !ok {
		return Record{}, errNoRecord(s.d.RecordDays)
	}
	v, err := translog.Read(ctx, s.d.Receipts)
	if err != nil {
		return Record{}, s.unavailable("read the log", err)
	}
	inc, sequenced, err := v.Prove(id)
	if err != nil {
		return Record{}, s.unavailable("prove inclusion", err)
	}
	rec := Record{Receipt: r}
	if sequenced {
		rec.Inclusion = &inc
	}
	return rec, nil
}

// errNoRecord answers GET /verifications/{id} for an id with no stored record. Every answer's
// record is written before the answer leaves (Record), so an id a caller holds is never missing
// for a moment: it was never issued here, or its record expired.
func errNoRecord(recordDays int) *apperr.Error {
	return apperr.New(apperr.NotFound, fmt.Sprintf("No stored record has this verification id: it was never issued here, "+
		"or its record expired (records are kept %d days; the log keeps its leaf).", recordDays))
}

// unavailable logs a store failure and answers a retryable 503.
func (s *Service) unavailable(what string, err error) *apperr.Error {
	s.d.Log.Warn(what+" failed", "err", err.Error())
	e := apperr.New(apperr.Unavailable, "The record could not be read just now; try again.")
	e.RetryAfter = 1
	return e
}

// maxVerificationID bounds a verification id read from a path or a tool's arguments: the
// service's ids are 36-character UUIDs, and the store's keys take up to this many.
const maxVerificationID = 128

// CheckVerificationID refuses a verification id no record can have, before any store reads it.
func CheckVerificationID(id string) error {
	fix := "Send the verification_id of a receipt this service issued (a UUID)."
	if id == "" || len(id) > maxVerificationID {
		return apperr.Field("verification_id", fmt.Sprintf("must be 1 to %d characters", maxVerificationID), fix)
	}
	for _, c := range id {
		if c < 0x21 || c > 0x7e {
			return apperr.Field("verification_id", "must be printable ASCII without spaces", fix)
		}
	}
	return nil
}

// SequencerInterval is how often the local server's sequencer looks for pending leaves (two small
// reads when there are none). The record's write commits before the answer, so a leaf is in a
// signed checkpoint within about this interval and one step (SPEC §15: p99 ≤ 1 s).
const SequencerInterval = 50 * time.Millisecond

// localBatch is how many leaves one commit of the local server's sequencer appends at most: a
// step costs a few bbolt commits whatever its size, so under thousands of answers a second the
// batches must be large for the tree to keep up (translog.MaxBatch's bound is DynamoDB's).
const localBatch = 4096

// Sequence appends the pending leaves to the log until none is left or ctx ends (one sequencer
// among any number: the tree head's compare-and-swap decides), and returns how many it added.
func (s *Service) Sequence(ctx context.Context) (int, error) {
	if s.d.Receipts == nil {
		return 0, errors.New("sequence: this service keeps no receipt log")
	}
	q := translog.Sequencer{Storage: s.d.Receipts, Key: s.d.LogKey}
	return q.Drain(ctx)
}

// CheckLogIdentity makes sure the store's receipt log is this service's (SPEC §15: one origin,
// one log key): the first instance to start on a store claims the log for its base URL's origin
// and its log key, and an instance with another one gets translog.ErrOtherLog, a start-up error
// for whatever sequences (the local server, the log function). Without it, instances sharing a
// table with different base URLs or log keys would sign checkpoints of one tree under several
// names, each of which only some buyers could check.
func (s *Service) CheckLogIdentity(ctx context.Context) error {
	if s.d.Receipts == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.d.StoreTimeout)
	defer cancel()
	return translog.CheckIdentity(ctx, s.d.Receipts, s.d.LogKey)
}

// StartSequencer runs the local server's sequencer in the background every interval, once
// CheckLogIdentity has accepted the store's log (its error is returned, and nothing runs);
// stop ends it after the step under way and sequences what the recording left once more.
func (s *Service) StartSequencer(ctx context.Context, interval time.Duration) (stop func(), err error) {
	if s.d.Receipts == nil {
		return func() {}, nil
	}
	if err := s.CheckLogIdentity(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	q := &translog.Sequencer{Storage: s.d.Receipts, Key: s.d.LogKey, Batch: localBatch}
	var wg sync.WaitGroup
	wg.Go(func() { q.Run(ctx, interval, s.d.Log.With(slog.String("part", "log sequencer"))) })
	return func() {
		cancel()
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
		defer cancel()
		if _, err := q.Drain(ctx); err != nil {
			s.d.Log.Warn("log sequencer: the last step failed; the next start sequences what is left", "err", err.Error())
		}
	}, nil
}

// RecordSchemaJSON is the JSON Schema of a stored record (GET /verifications/{verification_id},
// MCP get_receipt), for the OpenAPI document and the tool's output schema.
const RecordSchemaJSON = `{
  "type": "object",
  "required": ["verification_id", "receipt_hash", "result", "verified_at", "key_version", "output_hash", "schema_hash", "rules_hash", "request_hash", "task_id", "enforce_rules", "verifier_version", "settlement", "log"],
  "properties": {
    "verification_id": {"type": "string"},
    "receipt_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "SHA-256 of the RFC 8785 form of the whole signed response: the log's leaf."},
    "result": {"enum": ["pass", "fail"]},
    "verified_at": {"type": "string", "format": "date-time"},
    "key_version": {"type": "string"},
    "output_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    "schema_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    "rules_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    "request_hash": {"type": ["string", "null"], "description": "Present when the answer had full detail."},
    "task_id": {"type": ["string", "null"], "description": "The request's task_id when its agent_id is set and does not start with test- (the agent's public history lists it already); null otherwise, and the attestation's subject is then named verification:<verification_id>."},
    "enforce_rules": {"type": "boolean", "description": "Whether the rules and bounds could block the verdict (the attestation's AOV_RULES_V1 level)."},
    "verifier_version": {"type": ["string", "null"], "description": "The version of the verifier that signed the answer; null for records written before it was kept."},
    "settlement": {"type": ["object", "null"], "description": "The x402 SettlementResponse of a paid answer (success, transaction, network, payer), added once settled; null for a free one."},
    "log": {"oneOf": [
      {"type": "object", "required": ["status"], "additionalProperties": false, "properties": {"status": {"const": "pending"}}},
      {"type": "object", "required": ["index", "tree_size", "checkpoint", "inclusion_proof"], "additionalProperties": false, "properties": {
        "index": {"type": "integer", "minimum": 0},
        "tree_size": {"type": "integer", "minimum": 1},
        "checkpoint": {"type": "string", "description": "The C2SP signed checkpoint the proof is for."},
        "inclusion_proof": {"type": "array", "items": {"type": "string", "description": "base64 SHA-256"}}}}
    ]}
  }
}`
