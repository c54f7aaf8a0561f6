package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The receipt log probe's pace: one request of the mix every probeEvery, and a look at the
// checkpoint every checkpointEvery. A probe request is one among thousands a second, so it takes
// the load's conditions without adding to them; the checkpoint's poll bounds the delay's precision.
const (
	probeEvery      = 20 * time.Millisecond
	checkpointEvery = 5 * time.Millisecond
	// probeWait bounds how long the probe waits after the load for its answers to be sequenced
	// and for the checkpoint to show them.
	probeWait = 30 * time.Second
)

// logProbe measures the receipt log's integration delay under load (SPEC §15: locally p99 ≤ 1 s):
// the time from an answer to the first signed checkpoint whose tree holds it. It sends requests
// of the same mix beside the load, notes when each was answered and under which verification id,
// watches the checkpoint's tree size, and at the end reads each answer's index from its record.
type logProbe struct {
	base     string
	gen      *generator
	client   *http.Client
	stop     chan struct{} // ends the watcher
	stopSend chan struct{} // ends the sender
	sendDone sync.WaitGroup
	wg       sync.WaitGroup

	mu      sync.Mutex
	sizes   []sizeSeen // tree sizes, each when first seen
	answers []probeAnswer
	noLog   bool // the server has no receipt log
}

type sizeSeen struct {
	size int64
	at   time.Time
}

type probeAnswer struct {
	id string
	at time.Time
}

func startLogProbe(base string, gen *generator) *logProbe {
	p := &logProbe{base: base, gen: gen, client: &http.Client{Timeout: 10 * time.Second}, stop: make(chan struct{}), stopSend: make(chan struct{})}
	p.wg.Add(1)
	go p.watch()
	p.sendDone.Add(1)
	go p.send()
	return p
}

// stopSending ends the sender and waits for its last request.
func (p *logProbe) stopSending() {
	close(p.stopSend)
	p.sendDone.Wait()
}

// watch polls the checkpoint and notes when each tree size first appears.
func (p *logProbe) watch() {
	defer p.wg.Done()
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		resp, err := p.client.Get(p.base + "/log/checkpoint")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
		resp.Body.Close()
		now := time.Now()
		if resp.StatusCode == http.StatusNotFound && bytes.Contains(b, []byte("keeps no receipt log")) {
			p.mu.Lock()
			p.noLog = true
			p.mu.Unlock()
			return
		}
		lines := bytes.SplitN(b, []byte("\n"), 3)
		if resp.StatusCode != http.StatusOK || len(lines) < 3 {
			continue
		}
		size, err := strconv.ParseInt(string(lines[1]), 10, 64)
		if err != nil {
			continue
		}
		p.mu.Lock()
		if n := len(p.sizes); n == 0 || p.sizes[n-1].size < size {
			p.sizes = append(p.sizes, sizeSeen{size, now})
		}
		p.mu.Unlock()
	}
}

// send sends a request of the mix every probeEvery and notes its answer.
func (p *logProbe) send() {
	defer p.sendDone.Done()
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		select {
		case <-p.stopSend:
			return
		case <-t.C:
		}
		path, body, hdr := p.gen.next()
		req, err := http.NewRequest(http.MethodPost, p.base+path, bytes.NewReader(body))
		if err != nil {
			continue
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := p.client.Do(req)
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		at := time.Now()
		var v struct {
			ID string `json:"verification_id"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &v) != nil || v.ID == "" {
			continue
		}
		p.mu.Lock()
		p.answers = append(p.answers, probeAnswer{v.ID, at})
		p.mu.Unlock()
	}
}

// finish stops sending, waits until the checkpoint holds every probed answer (at most probeWait
// after the load), and returns each probed answer's integration delay, sorted; ok is false when the
// server keeps no log.
func (p *logProbe) finish() (delays []time.Duration, ok bool, err error) {
	p.stopSending()
	defer func() { close(p.stop); p.wg.Wait() }()
	deadline := time.Now().Add(probeWait)
	index := map[string]int64{}
	for _, a := range p.answers {
		for {
			p.mu.Lock()
			noLog := p.noLog
			p.mu.Unlock()
			if noLog {
				return nil, false, nil
			}
			i, sequenced, err := p.indexOf(a.id)
			if err != nil {
				return nil, true, err
			}
			if sequenced {
				index[a.id] = i
				break
			}
			if time.Now().After(deadline) {
				p.mu.Lock()
				seen := len(p.sizes)
				p.mu.Unlock()
				if seen == 0 {
					return nil, false, nil // a build without a log: no checkpoint route at all
				}
				return nil, true, fmt.Errorf("%s not sequenced %v after the load", a.id, probeWait)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var last int64 = -1
	for _, i := range index {
		last = max(last, i)
	}
	for {
		p.mu.Lock()
		covered := len(p.sizes) > 0 && p.sizes[len(p.sizes)-1].size > last
		p.mu.Unlock()
		if covered {
			break
		}
		if time.Now().After(deadline) {
			return nil, true, fmt.Errorf("the checkpoint watched never held index %d", last)
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range p.answers {
		i := slices.IndexFunc(p.sizes, func(s sizeSeen) bool { return s.size > index[a.id] })
		delays = append(delays, max(p.sizes[i].at.Sub(a.at), 0))
	}
	slices.Sort(delays)
	return delays, true, nil
}

// indexOf reads the index of verification id from its record; sequenced is false while the
// record is missing (written a moment after the answer) or pending.
func (p *logProbe) indexOf(id string) (index int64, sequenced bool, err error) {
	resp, err := p.client.Get(p.base + "/verifications/" + id)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return 0, false, nil
	}
	var rec struct {
		Log struct {
			Index *int64 `json:"index"`
		} `json:"log"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil || resp.StatusCode != http.StatusOK {
		return 0, false, fmt.Errorf("record of %s: HTTP %d", id, resp.StatusCode)
	}
	if rec.Log.Index == nil {
		return 0, false, nil
	}
	return *rec.Log.Index, true, nil
}
