package dynamo

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo/dynalitetest"
	"github.com/agent-output-verifier/verifier/pkg/store/storetest"
)

// newTable creates a fresh table in the dynalite at endpoint and returns a store on it.
func newTable(t *testing.T, client *dynamodb.Client, opts ...Option) (*Store, string) {
	t.Helper()
	table := dynalitetest.TableName(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := CreateTable(ctx, client, table); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	s := New(client, table, opts...)
	t.Cleanup(func() { _ = s.Close() })
	return s, table
}

func TestDynamo(t *testing.T) {
	client := dynalitetest.Client(dynalitetest.Start(t))

	t.Run("Contract", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			s, _ := newTable(t, client)
			return s
		})
	})
	t.Run("ExpiresAtIsEpochSeconds", func(t *testing.T) { testExpiresAtIsEpochSeconds(t, client) })
	t.Run("ExpiryWithClock", func(t *testing.T) { testExpiryWithClock(t, client) })
	t.Run("PingHidesConfiguration", func(t *testing.T) { testPingHidesConfiguration(t, client) })
}

// testExpiresAtIsEpochSeconds reads the raw items back: DynamoDB's TTL only acts on a Number
// attribute holding epoch seconds, and silently ignores anything else (milliseconds, strings).
func testExpiresAtIsEpochSeconds(t *testing.T, client *dynamodb.Client) {
	ctx := context.Background()
	s, table := newTable(t, client)
	// Half a second over: epoch seconds drop it, epoch milliseconds would not.
	expires := time.Date(2030, 3, 2, 0, 0, 0, 500_000_000, time.UTC)
	if err := s.ReservePayment(ctx, "nonce-ttl", expires); err != nil {
		t.Fatalf("ReservePayment: %v", err)
	}
	if _, _, err := s.ConsumeAllowance(ctx, "client-ttl", "2025-03-01", 5, expires); err != nil {
		t.Fatalf("ConsumeAllowance: %v", err)
	}
	for name, k := range map[string]map[string]types.AttributeValue{
		"payment":   paymentKey("nonce-ttl"),
		"allowance": allowanceKey("client-ttl", "2025-03-01"),
	} {
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: k, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatalf("GetItem %s: %v", name, err)
		}
		n, ok := out.Item["expires_at"].(*types.AttributeValueMemberN)
		if !ok {
			t.Fatalf("%s item expires_at = %#v, want a Number", name, out.Item["expires_at"])
		}
		if got, want := n.Value, strconv.FormatInt(expires.Unix(), 10); got != want {
			t.Errorf("%s item expires_at = %s, want %s (epoch seconds)", name, got, want)
		}
	}
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

// testExpiryWithClock checks that reads and the reservation condition use the store's clock, not
// the server's, and count in whole seconds like DynamoDB's TTL.
func testExpiryWithClock(t *testing.T, client *dynamodb.Client) {
	ctx := context.Background()
	clk := &clock{now: time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)}
	s, _ := newTable(t, client, WithClock(clk.Now))
	midnight := time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC)
	if _, _, err := s.ConsumeAllowance(ctx, "client", "2025-03-01", 3, midnight); err != nil {
		t.Fatalf("ConsumeAllowance: %v", err)
	}
	if err := s.ReservePayment(ctx, "nonce", midnight); err != nil {
		t.Fatalf("ReservePayment: %v", err)
	}

	clk.Set(midnight.Add(999 * time.Millisecond))
	if got, _ := s.AllowanceUsed(ctx, "client", "2025-03-01"); got != 1 {
		t.Errorf("AllowanceUsed in the expiry second = %d, want 1", got)
	}
	if err := s.ReservePayment(ctx, "nonce", midnight.Add(time.Hour)); !errors.Is(err, store.ErrPaymentReplayed) {
		t.Errorf("ReservePayment in the expiry second = %v, want ErrPaymentReplayed", err)
	}

	clk.Set(midnight.Add(time.Second))
	if got, err := s.AllowanceUsed(ctx, "client", "2025-03-01"); err != nil || got != 0 {
		t.Errorf("AllowanceUsed after expiry = %d, %v; want 0 (the item lingers, the read ignores it)", got, err)
	}
	if err := s.ReservePayment(ctx, "nonce", midnight.Add(time.Hour)); err != nil {
		t.Errorf("ReservePayment over an expired leftover = %v, want nil", err)
	}
	if g, r, err := s.ConsumeAllowance(ctx, "client", "2025-03-01", 3, midnight.Add(time.Hour)); err != nil || !g || r != 2 {
		t.Errorf("ConsumeAllowance over an expired counter = %v, %d, %v; want true, 2, nil", g, r, err)
	}

	// A spent counter that expired is restarted by exactly one of many concurrent callers, and the
	// restarted day still grants no more than the limit.
	const limit, callers = 5, 30
	for range limit {
		if g, _, err := s.ConsumeAllowance(ctx, "client-busy", "2025-03-01", limit, midnight.Add(2*time.Second)); err != nil || !g {
			t.Fatalf("ConsumeAllowance = %v, %v; want a grant", g, err)
		}
	}
	clk.Set(midnight.Add(3 * time.Second))
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			g, _, err := s.ConsumeAllowance(ctx, "client-busy", "2025-03-01", limit, midnight.Add(time.Hour))
			if err != nil {
				t.Errorf("ConsumeAllowance: %v", err)
			}
			if g {
				granted.Add(1)
			}
		})
	}
	wg.Wait()
	if got := granted.Load(); got != limit {
		t.Errorf("%d concurrent calls on an expired spent counter got %d grants, want %d", callers, got, limit)
	}
}

// testPingHidesConfiguration makes Ping fail in the two ways a deployment can be misconfigured and
// checks that the message names neither the table nor the endpoint.
func testPingHidesConfiguration(t *testing.T, client *dynamodb.Client) {
	ctx := context.Background()
	s, _ := newTable(t, client)
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping of a working table: %v", err)
	}

	const missing = "verifier-table-that-does-not-exist"
	err := New(client, missing).Ping(ctx)
	var pe *PingError
	if !errors.As(err, &pe) || pe.Reason != "ResourceNotFoundException" {
		t.Fatalf("Ping of a missing table = %v, want a PingError with ResourceNotFoundException", err)
	}
	if strings.Contains(err.Error(), missing) {
		t.Errorf("Ping error %q names the table", err)
	}

	const endpoint = "http://127.0.0.1:1" // nothing listens on port 1
	unreachable := dynalitetest.Client(endpoint)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = New(unreachable, missing).Ping(ctx)
	if !errors.As(err, &pe) || (pe.Reason != "unreachable" && pe.Reason != "timeout") {
		t.Fatalf("Ping of a closed port = %v, want a PingError unreachable or timeout", err)
	}
	if msg := err.Error(); strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, missing) {
		t.Errorf("Ping error %q names the endpoint or table", msg)
	}
	if errors.Unwrap(err) == nil {
		t.Errorf("Ping error keeps no cause for the log")
	}
}
