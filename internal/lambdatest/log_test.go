package lambdatest_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agent-output-verifier/verifier/internal/lambdatest"
	"github.com/agent-output-verifier/verifier/pkg/app"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo/dynalitetest"
	"github.com/agent-output-verifier/verifier/pkg/translog"
)

// logFunctionTimeout is the function timeout the emulator is given for functions/log: the
// invocation sequences until 5 s before it (app.Sequence), so a test invocation lasts about 3 s
// instead of the 50 s of a deployed one.
const logFunctionTimeout = "8"

// functions/log under the Runtime Interface Emulator over a dynalite table: a scheduled
// invocation sequences every pending leaf (across a full tile) and reports the tree's size; a
// second one, after more leaves, extends the tree; every leaf's inclusion proof verifies under the
// signed checkpoint, the tiles recompute to it and the later checkpoint is consistent with the
// earlier one.
func TestLogFunctionUnderEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a Lambda binary")
	}
	rie := emulatorOrSkip(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	keyFile, logKeyFile := filepath.Join(tmp, "signing-key.json"), filepath.Join(tmp, "log-key.json")
	if _, err := lambdatest.WriteKey(keyFile, keyVersion); err != nil {
		t.Fatal(err)
	}
	lk, err := lambdatest.WriteKey(logKeyFile, "log-"+keyVersion)
	if err != nil {
		t.Fatal(err)
	}
	logKey, err := translog.NewLogKey(translog.Origin(baseURL), lk)
	if err != nil {
		t.Fatal(err)
	}
	endpoint := dynalitetest.Start(t)
	client := dynalitetest.Client(endpoint)
	table := dynalitetest.TableName(t)
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	st := dynamo.New(client, table)
	bin, err := lambdatest.Build(ctx, root(t), "log", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	vars, err := lambdatest.LocalVars(root(t), "log", lambdatest.Here{DynamoDB: endpoint, Table: table, KeyFile: keyFile, LogKeyFile: logKeyFile})
	if err != nil {
		t.Fatal(err)
	}
	vars["AWS_LAMBDA_FUNCTION_TIMEOUT"] = logFunctionTimeout
	e := runEmulated(ctx, t, rie, bin, "log", vars)
	want := map[string]translog.Hash{}
	record := func(from, n int) {
		for i := from; i < from+n; i++ {
			id := fmt.Sprintf("lambda-log-%04d", i)
			h := sha256.Sum256([]byte(id))
			want[id] = h
			if err := st.RecordReceipt(ctx, store.Receipt{VerificationID: id, ReceiptHash: h, Result: "pass", Expires: time.Now().Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// An EventBridge scheduled event, as the schedule sends it.
	event := []byte(`{"version":"0","id":"0d5c1f1e-0000-0000-0000-000000000000","detail-type":"Scheduled Event","source":"aws.events",` +
		`"account":"123456789012","time":"2026-12-01T00:00:00Z","region":"us-east-1","resources":[],"detail":{}}`)
	invoke := func(wantAdded int) translog.Checkpoint {
		t.Helper()
		out, err := e.Invoke(ctx, event)
		if err != nil {
			t.Fatal(err)
		}
		var res app.SequencerResult
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("invocation answered %s: %v", out, err)
		}
		if res.Sequenced != wantAdded || res.TreeSize != int64(len(want)) {
			t.Fatalf("invocation: %+v, want %d sequenced, a tree of %d", res, wantAdded, len(want))
		}
		v, err := translog.Read(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		cp, err := translog.OpenCheckpoint(v.Head.Checkpoint, logKey.VerifierKey)
		if err != nil || cp.Size != int64(len(want)) {
			t.Fatalf("checkpoint %+v, %v", cp, err)
		}
		seen := map[int64]bool{}
		for id, leaf := range want {
			inc, ok, err := v.Prove(id)
			if err != nil || !ok || seen[inc.Index] {
				t.Fatalf("%s: ok %v, index %d seen before %v, %v", id, ok, inc.Index, seen[inc.Index], err)
			}
			seen[inc.Index] = true
			if _, err := translog.CheckInclusion(inc.Checkpoint, logKey.VerifierKey, leaf, inc.Index, inc.Proof); err != nil {
				t.Fatalf("%s: %v", id, err)
			}
		}
		if _, err := translog.Audit(func(p string) ([]byte, error) { d, _, err := v.Tile(p); return d, err }, cp, nil); err != nil {
			t.Fatalf("audit: %v", err)
		}
		return cp
	}
	record(0, 300)
	first := invoke(300)
	record(300, 20)
	second := invoke(20)
	v, err := translog.Read(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.ProveTree(first.Size)
	if err != nil {
		t.Fatal(err)
	}
	if err := tlogCheckTree(p, second, first); err != nil {
		t.Errorf("the second checkpoint is not consistent with the first: %v", err)
	}
}

// tlogCheckTree checks with tlog.CheckTree that old's tree is a prefix of cur's.
func tlogCheckTree(p tlog.TreeProof, cur, old translog.Checkpoint) error {
	return tlog.CheckTree(p, cur.Size, cur.Hash, old.Size, old.Hash)
}
