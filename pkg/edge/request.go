package edge

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/service"
)

// ReadBody reads a request body of at most limit bytes, for every transport that takes one; a
// longer body is a 413 naming the limit. A body declared longer (Content-Length) is refused at
// once, before a byte of it is read: waiting for bytes that would be refused anyway held the
// connection until the server's read timeout.
func ReadBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, apperr.TooLarge(limit)
	}
	// A body of a declared length is read into one buffer of that size (and a byte to see the
	// end), instead of one grown by doubling from 512 bytes, which was a twentieth of everything
	// the local server allocated under load. The length is only the client's word, so it sizes
	// the first buffer up to maxPresized: past that the buffer grows with the bytes that arrive,
	// and a connection that states a megabyte and sends nothing holds no more than that.
	size := 512
	if r.ContentLength >= 0 && r.ContentLength <= limit {
		size = int(min(r.ContentLength+1, maxPresized))
	}
	body, err := readAll(io.LimitReader(r.Body, limit+1), size)
	if err != nil {
		return nil, apperr.Field("body", "could not be read", "Send the body again.")
	}
	if int64(len(body)) > limit {
		return nil, apperr.TooLarge(limit)
	}
	return body, nil
}

// maxPresized is the largest buffer a body's stated length makes ReadBody allocate before its
// bytes arrive: more than the local server's realistic requests (at most about 10 KB).
const maxPresized = 16 << 10

// readAll is io.ReadAll into a buffer of size bytes to begin with.
func readAll(r io.Reader, size int) ([]byte, error) {
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // room to read on into
		}
	}
}

// ClientIdentity is the client of SPEC §8.1 (service.ClientOf) of an HTTP request. The address is
// the TCP peer locally, API Gateway's sourceIp on Lambda (the adapter puts it in RemoteAddr),
// and X-Forwarded-For only as far as the operator trusts proxies: with n trusted hops the client
// is the n-th address from the right, and a request that passed fewer proxies than that is its
// peer's.
func ClientIdentity(r *http.Request, trustedHops int) string {
	if trustedHops > 0 {
		if hop, ok := forwardedHop(r.Header.Values("X-Forwarded-For"), trustedHops); ok {
			return service.ClientOf(hop)
		}
	}
	return service.ClientOf(r.RemoteAddr)
}

// forwardedHop is the n-th X-Forwarded-For entry from the right, over every X-Forwarded-For
// header in order; false when there are fewer than n entries.
func forwardedHop(values []string, n int) (string, bool) {
	for i := len(values) - 1; i >= 0; i-- {
		entries := strings.Split(values[i], ",")
		for j := len(entries) - 1; j >= 0; j-- {
			e := strings.TrimSpace(entries[j])
			if e == "" {
				continue
			}
			if n--; n == 0 {
				return e, true
			}
		}
	}
	return "", false
}

// WriteDocument answers a GET or HEAD with a discovery document: body with its content type,
// cache lifetime and a strong ETag over the bytes, or 304 Not Modified when If-None-Match names
// that ETag (RFC 9110 §13.1.2, weak comparison).
func WriteDocument(w http.ResponseWriter, r *http.Request, contentType, cacheControl string, body []byte) {
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", cacheControl)
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// etagMatches tells whether an If-None-Match list names etag; W/ prefixes are ignored, as the
// weak comparison If-None-Match uses requires.
func etagMatches(list, etag string) bool {
	for _, tag := range strings.Split(list, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == "*" || tag == etag {
			return true
		}
	}
	return false
}
