// Package testhttp sends the HTTP requests of the tests that talk to a running server: one copy of
// "build the request, set the headers, read the whole answer", so every test does it alike.
package testhttp

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// Do sends a request to url and returns the answer with its body read. A non-nil body goes as
// application/json; hdr are header name and value pairs, set after that, so a test can send any
// other content type. A request that cannot be sent or an answer that cannot be read ends the test.
func Do(t testing.TB, method, url string, body []byte, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}
