// Command loadgen drives a local verifier server on loopback with a realistic mix of requests and
// prints throughput and latency percentiles. It starts the server itself (bin/verifier serve) with
// a generous free allowance and a stub facilitator, so that both the free and the paid paths are
// exercised without a chain: the stub accepts every payment, which measures the server's own cost
// of the paid path, not a facilitator's.
//
//	go run ./infra/loadgen -bin bin/verifier -duration 10s -conns 32
//
// With -mix seed every request is the seed invoice (testdata/seed/invoice-draft.request.json,
// run from the module root) under a fresh task id and one of 50 agent ids in turn: one small
// document and one cached schema, the upper bound for small documents.
//
// Phase 1 is closed-loop (conns workers, each sending as fast as answers come) and finds the
// maximum throughput; phase 2 sends at half that rate, open-loop, and reports the latency a
// client sees at that load.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testproc"
)

func main() {
	bin := flag.String("bin", "bin/verifier", "the verifier binary to serve")
	duration := flag.Duration("duration", 10*time.Second, "length of each phase")
	conns := flag.Int("conns", 32, "concurrent keep-alive connections in the closed-loop phase")
	paidShare := flag.Float64("paid", 0.1, "share of requests sent with a payment")
	freshShare := flag.Float64("fresh", 0.05, "share of requests with a schema never seen before")
	out := flag.String("out", "", "also write the report (Markdown) to this file")
	dataParent := flag.String("data-parent", "", "where the server's fresh data directory is made (default: the system's temporary directory)")
	openRate := flag.Float64("open-rate", 0, "the open loop's rate in requests/s (default: half the closed loop's throughput); for comparing two builds at one rate")
	mix := flag.String("mix", "realistic", "request mix: realistic (generated invoices of 1–200 items) or seed (the seed invoice only; -fresh does not apply)")
	flag.Parse()
	if err := run(*bin, *duration, *conns, *paidShare, *freshShare, *openRate, *mix, *out, *dataParent); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run(bin string, duration time.Duration, conns int, paidShare, freshShare, openRate float64, mix, out, dataParent string) error {
	var seed map[string]any
	switch mix {
	case "realistic":
	case "seed":
		raw, err := os.ReadFile(seedRequestFile)
		if err != nil {
			return fmt.Errorf("-mix seed: %w (run from the module root)", err)
		}
		if err := json.Unmarshal(raw, &seed); err != nil {
			return fmt.Errorf("-mix seed: %s: %w", seedRequestFile, err)
		}
	default:
		return fmt.Errorf("-mix %q: want realistic or seed", mix)
	}
	fac, err := startStubFacilitator()
	if err != nil {
		return err
	}
	defer fac.Close()
	base, pid, stop, err := startServer(bin, "http://"+fac.Addr().String(), dataParent)
	if err != nil {
		return err
	}
	defer stop()

	accepted, err := requirement(&http.Client{Timeout: 10 * time.Second}, base)
	if err != nil {
		return err
	}
	gen := newGenerator(accepted, paidShare, freshShare)
	gen.seed = seed
	mixText := fmt.Sprintf(`%.0f%% paid (stub facilitator), %.0f%% fresh schemas, the rest from a pool of %d repeated schemas;
1–200 line items (mostly small); about a third of the outputs fail a rule.`, paidShare*100, freshShare*100, len(gen.schemas))
	if seed != nil {
		mixText = fmt.Sprintf(`the seed invoice only (2 line items, one schema, fails its sum rule), %.0f%% paid (stub
facilitator).`, paidShare*100)
	}

	client := newPool(strings.TrimPrefix(base, "http://"), conns*2)
	defer client.close()
	// Warm-up: compile the schema pool, fill connection pools.
	closedLoop(client, gen, conns, 2*time.Second)
	self := os.Getpid()
	cpu0, srv0, gen0 := readCPU(), processCPU(pid), processCPU(self)
	max := closedLoop(client, gen, conns, duration)
	cpu1, srv1, gen1 := readCPU(), processCPU(pid), processCPU(self)
	rate, rateText := max.throughput()/2, "half that rate"
	if openRate > 0 {
		rate, rateText = openRate, "a set rate"
	}
	probe := startLogProbe(base, gen)
	half := openLoop(client, gen, rate, duration)
	cpu2, srv2, gen2 := readCPU(), processCPU(pid), processCPU(self)
	delays, hasLog, err := probe.finish()
	if err != nil {
		return fmt.Errorf("receipt log probe: %w", err)
	}

	report := fmt.Sprintf(`## Load (local server on loopback, one run)

Mix: %s

| phase | requests | errors | throughput | p50 | p90 | p99 | max |
|---|---|---|---|---|---|---|---|
| closed loop, %d connections | %d | %d | %.0f/s | %s | %s | %s | %s |
| open loop at %s (%.0f/s) | %d | %d | %.0f/s | %s | %s | %s | %s |
`, mixText, conns,
		max.n, max.errors, max.throughput(), ms(max.pct(50)), ms(max.pct(90)), ms(max.pct(99)), ms(max.pct(100)),
		rateText, rate, half.n, half.errors, half.throughput(), ms(half.pct(50)), ms(half.pct(90)), ms(half.pct(99)), ms(half.pct(100)))
	if closedBusy, ok := cpu0.busyUntil(cpu1); ok {
		openBusy, _ := cpu1.busyUntil(cpu2)
		report += fmt.Sprintf(`
Machine CPU busy (all %d cores, server and load generator together, /proc/stat): %.0f%% in the closed
loop, %.0f%% in the open loop.
`, runtime.NumCPU(), closedBusy, openBusy)
	}
	if srv0 > 0 && srv2 > srv1 {
		report += fmt.Sprintf(`
Server process CPU (/proc/<pid>/stat, unaffected by other processes on the machine): %.0f µs per
request in the closed loop (%.2f cores), %.0f µs per request in the open loop (%.2f cores).
`, perRequest(srv1-srv0, max.n), (srv1-srv0).Seconds()/max.elapsed.Seconds(),
			perRequest(srv2-srv1, half.n), (srv2-srv1).Seconds()/half.elapsed.Seconds())
	}
	if max.paid.n > 0 && half.paid.n > 0 {
		report += fmt.Sprintf(`
Paid requests alone (%d and %d of them): p50 %s, p99 %s in the closed loop; p50 %s, p99 %s in the
open loop.
`, max.paid.n, half.paid.n, ms(max.paid.pct(50)), ms(max.paid.pct(99)), ms(half.paid.pct(50)), ms(half.paid.pct(99)))
	}
	if gen0 > 0 && gen2 > gen1 {
		report += fmt.Sprintf(`
Load generator CPU (its own process): %.0f µs per request in the closed loop, %.0f µs in the open
loop.
`, perRequest(gen1-gen0, max.n), perRequest(gen2-gen1, half.n))
	}
	if hasLog && len(delays) > 0 {
		q := func(p int) time.Duration { return delays[(len(delays)-1)*p/100] }
		report += fmt.Sprintf(`
Receipt log integration delay (SPEC §15, from an answer to the first signed checkpoint that holds
it), %d requests of the mix probed during the open loop: p50 %s, p90 %s, p99 %s, max %s.
`, len(delays), ms(q(50)), ms(q(90)), ms(q(99)), ms(delays[len(delays)-1]))
	} else if !hasLog {
		report += "\nThe server keeps no receipt log.\n"
	}
	fmt.Print(report)
	if out != "" {
		return os.WriteFile(out, []byte(report), 0o644)
	}
	return nil
}

// seedRequestFile is the seed invoice request that -mix seed sends, relative to the module root.
const seedRequestFile = "testdata/seed/invoice-draft.request.json"

// cpuTime is the machine's CPU time so far from the first line of /proc/stat (Linux), in ticks.
// It shows whether a phase was bound by the processors or by waiting (locks, fsync, the network).
type cpuTime struct{ busy, total uint64 }

func readCPU() cpuTime {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTime{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTime{}
	}
	var t cpuTime
	// user nice system idle iowait irq softirq steal (guest time is already in user).
	for i, s := range f[1:9] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuTime{}
		}
		t.total += v
		if i != 3 && i != 4 {
			t.busy += v
		}
	}
	return t
}

// processCPU is the CPU time (user and system) process pid has used so far, from
// /proc/<pid>/stat (Linux); zero where that cannot be read. Unlike the machine's busy share, it
// counts the server alone: neither the load generator nor anything else running on the machine.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; the fields after it are plain numbers.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	// utime and stime are fields 14 and 15 of the whole line, in clock ticks (USER_HZ, 100 on Linux).
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * (time.Second / clockTicks)
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times, which is 100 on every Linux
// architecture Go runs on.
const clockTicks = 100

func perRequest(cpu time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(cpu.Microseconds()) / float64(n)
}

// busyUntil is the busy share of the CPU time between t and later, in percent.
func (t cpuTime) busyUntil(later cpuTime) (float64, bool) {
	if t.total == 0 || later.total <= t.total {
		return 0, false
	}
	return 100 * float64(later.busy-t.busy) / float64(later.total-t.total), true
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// result collects latencies of one phase.
type result struct {
	n, errors int
	elapsed   time.Duration
	lat       []time.Duration
	paid      *result // the paid requests alone (latencies only)
}

func (r *result) throughput() float64 { return float64(r.n) / r.elapsed.Seconds() }

func (r *result) pct(p int) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	slices.Sort(r.lat)
	i := (len(r.lat) - 1) * p / 100
	return r.lat[i]
}

type recorder struct {
	mu   sync.Mutex
	lat  []time.Duration
	paid []time.Duration
	n    atomic.Int64
	bad  atomic.Int64
}

// send sends one request of the mix and records its latency.
func (rec *recorder) send(client *pool, gen *generator) { rec.sendDue(client, gen, time.Time{}) }

// sendDue is send with the latency counted from due (when the request was due to be sent), or
// from the send itself when due is zero.
func (rec *recorder) sendDue(client *pool, gen *generator, due time.Time) {
	path, body, hdr := gen.next()
	start := due
	if start.IsZero() {
		start = time.Now()
	}
	status, err := client.do(path, body, hdr)
	d := time.Since(start)
	rec.n.Add(1)
	if err != nil || status != http.StatusOK {
		rec.bad.Add(1)
	}
	rec.mu.Lock()
	rec.lat = append(rec.lat, d)
	if hdr != nil {
		rec.paid = append(rec.paid, d)
	}
	rec.mu.Unlock()
}

func (rec *recorder) result(elapsed time.Duration) *result {
	return &result{n: int(rec.n.Load()), errors: int(rec.bad.Load()), elapsed: elapsed, lat: rec.lat,
		paid: &result{n: len(rec.paid), lat: rec.paid}}
}

func closedLoop(client *pool, gen *generator, conns int, d time.Duration) *result {
	var rec recorder
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				rec.send(client, gen)
			}
		}()
	}
	wg.Wait()
	return rec.result(time.Since(start))
}

// openLoop sends at a fixed rate whatever the answers do, so queueing shows in the latencies. It
// wakes at most once a millisecond and sends every request due by then, each on a goroutine of
// its own: a wake-up per request cost the load generator more CPU than the request itself on this
// machine's virtual processors. A request's latency counts from when it was due, so a late send
// counts against the server, never for it.
func openLoop(client *pool, gen *generator, rate float64, d time.Duration) *result {
	var rec recorder
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; ; {
		now := time.Now()
		for ; ; i++ {
			due := start.Add(time.Duration(i) * interval)
			if due.Sub(start) >= d {
				wg.Wait()
				return rec.result(time.Since(start))
			}
			if due.After(now) {
				break
			}
			wg.Add(1)
			go func() { defer wg.Done(); rec.sendDue(client, gen, due) }()
		}
		time.Sleep(max(time.Until(start.Add(time.Duration(i)*interval)), time.Millisecond))
	}
}

// generator makes the request mix.
type generator struct {
	schemas     [][]byte       // the pool of repeated schemas, serialized
	seed        map[string]any // the seed request, sent instead of generated invoices when set
	accepted    json.RawMessage
	acceptedDoc map[string]any // accepted, decoded once
	paidShare   float64
	freshShare  float64
	seq         atomic.Int64
}

func newGenerator(accepted json.RawMessage, paidShare, freshShare float64) *generator {
	g := &generator{accepted: accepted, paidShare: paidShare, freshShare: freshShare}
	json.Unmarshal(accepted, &g.acceptedDoc)
	for i := range 20 {
		g.schemas = append(g.schemas, invoiceSchema(fmt.Sprintf("pool-%d", i)))
	}
	return g
}

// invoiceSchema is an invoice schema under its own title, serialized once: the generator writes
// bodies by appending, so that the load generator spends its share of the two cores on load.
func invoiceSchema(title string) []byte {
	b, _ := json.Marshal(map[string]any{
		"title": title, "type": "object", "required": []any{"invoice_id", "currency", "line_items", "total"},
		"properties": map[string]any{
			"invoice_id": map[string]any{"type": "string", "pattern": "^INV-[0-9]{4}$"},
			"currency":   map[string]any{"enum": []any{"USD", "EUR"}},
			"line_items": map[string]any{"type": "array", "minItems": 1, "items": map[string]any{
				"type": "object", "required": []any{"sku", "qty", "line_total"},
				"properties": map[string]any{
					"sku":        map[string]any{"type": "string"},
					"qty":        map[string]any{"type": "integer", "minimum": 1},
					"line_total": map[string]any{"type": "number", "minimum": 0},
				}}},
			"total": map[string]any{"type": "number"},
		},
	})
	return b
}

// appendCents appends cents as a decimal amount with two places.
func appendCents(b []byte, cents int) []byte {
	b = strconv.AppendInt(b, int64(cents/100), 10)
	b = append(b, '.', byte('0'+cents%100/10), byte('0'+cents%10))
	return b
}

func (g *generator) next() (string, []byte, map[string]string) {
	n := g.seq.Add(1)
	if g.seed != nil {
		return g.seedRequest(n)
	}
	schema := g.schemas[mrand.IntN(len(g.schemas))]
	if mrand.Float64() < g.freshShare {
		schema = invoiceSchema(fmt.Sprintf("fresh-%d", n))
	}
	items := 1 + int(mrand.ExpFloat64()*8)
	if items > 200 {
		items = 200
	}
	b := make([]byte, 0, 512+len(schema)+items*64)
	b = append(b, `{"task_id":"load-`...)
	b = strconv.AppendInt(b, n, 10)
	b = append(b, `","agent_id":"load-agent-`...)
	b = strconv.AppendInt(b, n%50, 10)
	b = append(b, `","expected_schema":`...)
	b = append(b, schema...)
	b = append(b, `,"submitted_output":{"invoice_id":"INV-1234","currency":"USD","line_items":[`...)
	total := 0
	for i := range items {
		cents := 100 + mrand.IntN(10000)
		total += cents
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"sku":"SKU-`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `","qty":`...)
		b = strconv.AppendInt(b, int64(1+mrand.IntN(5)), 10)
		b = append(b, `,"line_total":`...)
		b = appendCents(b, cents)
		b = append(b, '}')
	}
	if mrand.IntN(3) == 0 {
		total += 500 // a third of the invoices do not add up
	}
	b = append(b, `],"total":`...)
	b = appendCents(b, total)
	b = append(b, `},"rules":[{"type":"sum_equals","field":"line_items[].line_total","equals_field":"total"}],"enforce_rules":true}`...)
	return g.route(n, b)
}

// seedRequest is the seed invoice under task and agent ids of this run, so that it is recorded
// like the generated requests (the seed's own agent id is a test- one, which is never recorded).
func (g *generator) seedRequest(n int64) (string, []byte, map[string]string) {
	req := maps.Clone(g.seed)
	req["task_id"] = fmt.Sprintf("load-%d", n)
	req["agent_id"] = fmt.Sprintf("load-agent-%d", n%50)
	body, _ := json.Marshal(req)
	return g.route(n, body)
}

// route alternates the two verify routes and attaches a payment to paidShare of the requests.
func (g *generator) route(n int64, body []byte) (string, []byte, map[string]string) {
	path := "/verify/schema"
	if n%2 == 0 {
		path = "/verify/deliverable"
	}
	if mrand.Float64() < g.paidShare {
		return path, body, map[string]string{"PAYMENT-SIGNATURE": g.payment()}
	}
	return path, body, nil
}

// payment is a structurally valid EVM exact payment with a fresh nonce; the stub facilitator
// accepts it.
func (g *generator) payment() string {
	nonce := make([]byte, 32)
	rand.Read(nonce)
	acc := g.acceptedDoc
	p, _ := json.Marshal(map[string]any{
		"x402Version": 2, "accepted": acc,
		"payload": map[string]any{
			"signature": "0x" + hex.EncodeToString(make([]byte, 65)),
			"authorization": map[string]any{"from": "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "to": acc["payTo"],
				"value": acc["amount"], "validAfter": "0", "validBefore": "9999999999", "nonce": "0x" + hex.EncodeToString(nonce)},
		},
	})
	return base64.StdEncoding.EncodeToString(p)
}

// requirement fetches the server's own payment requirement from the discovery probe.
func requirement(client *http.Client, base string) (json.RawMessage, error) {
	resp, err := client.Post(base+"/verify/schema", "application/json", nil)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	raw, err := base64.StdEncoding.DecodeString(resp.Header.Get("PAYMENT-REQUIRED"))
	if err != nil {
		return nil, fmt.Errorf("probe: no PAYMENT-REQUIRED header (status %d)", resp.StatusCode)
	}
	var pr struct{ Accepts []json.RawMessage }
	if err := json.Unmarshal(raw, &pr); err != nil || len(pr.Accepts) == 0 {
		return nil, fmt.Errorf("probe: no accepts")
	}
	return pr.Accepts[0], nil
}

// startStubFacilitator answers /verify and /settle with success on 127.0.0.1.
func startStubFacilitator() (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/verify", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"isValid":true,"payer":"0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"}`)
	})
	mux.HandleFunc("/settle", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"success":true,"payer":"0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266","transaction":"0x`+hex.EncodeToString(make([]byte, 32))+`","network":"eip155:8453"}`)
	})
	go http.Serve(ln, mux)
	return ln, nil
}

// startServer runs `verifier serve` on a free loopback port with a fresh data directory made in
// parent (the system's temporary directory when empty).
func startServer(bin, facilitator, parent string) (string, int, func(), error) {
	dir, err := os.MkdirTemp(parent, "loadgen-")
	if err != nil {
		return "", 0, nil, err
	}
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"))
	cmd.Env = append(os.Environ(), "VERIFIER_FREE_CALLS_PER_DAY=1000000000", "X402_FACILITATOR_URL="+facilitator,
		"X402_PAY_TO_EVM=0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", "X402_NETWORKS=eip155:8453",
		"AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true")
	testproc.SetProcessGroup(cmd)
	// The server logs a line per request. They go to a file, as an operator's would, not to a
	// pipe this process must drain: a pipe left full while this process waited for a processor
	// blocked the server's logger and the requests waiting to log.
	logFile, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		os.RemoveAll(dir)
		return "", 0, nil, err
	}
	cmd.Stderr = logFile
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		os.RemoveAll(dir)
		return "", 0, nil, fmt.Errorf("start %s: %w", bin, err)
	}
	stop := func() {
		testproc.KillProcessGroup(cmd.Process.Pid, false)
		cmd.Wait()
		logFile.Close()
		os.RemoveAll(dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-lines:
		m := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(line)
		if m == nil {
			stop()
			return "", 0, nil, fmt.Errorf("server did not start: %q", line)
		}
		return m[1], cmd.Process.Pid, stop, nil
	case <-ctx.Done():
		stop()
		return "", 0, nil, fmt.Errorf("server did not start in time")
	}
}
