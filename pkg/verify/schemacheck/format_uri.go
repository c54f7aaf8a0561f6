package schemacheck

import (
	"net/netip"
	"strings"
	"unicode/utf8"
)

// formatURI is RFC 3986's URI (reference: URI-reference) and, with iri set, RFC 3987's IRI
// (IRI-reference), as a single left-to-right scan of the ABNF: every character is looked at a
// bounded number of times, whatever the input.
func formatURI(s string, iri, reference bool) bool {
	if !utf8.ValidString(s) {
		return false
	}
	rest, frag, hasFrag := strings.Cut(s, "#")
	if hasFrag && !formatURIChars(frag, iri, false, "/?") {
		return false
	}
	rest, query, hasQuery := strings.Cut(rest, "?")
	if hasQuery && !formatURIChars(query, iri, true, "/?") {
		return false
	}
	// A scheme is what precedes the first ':' when no '/' comes before it (RFC 3986 §4.2: a
	// relative reference cannot have a ':' in its first segment).
	colon, slash := strings.IndexByte(rest, ':'), strings.IndexByte(rest, '/')
	hasScheme := colon >= 0 && (slash < 0 || colon < slash)
	if hasScheme {
		if !formatScheme(rest[:colon]) {
			return false
		}
		rest = rest[colon+1:]
	} else if !reference {
		return false
	}
	if auth, ok := strings.CutPrefix(rest, "//"); ok {
		end := strings.IndexByte(auth, '/')
		if end < 0 {
			end = len(auth)
		}
		// path-abempty: segments, each starting with '/'
		return formatAuthority(auth[:end], iri) && formatURIChars(auth[end:], iri, false, "/")
	}
	// path-absolute, path-rootless, path-noscheme or path-empty: the segments' characters are the
	// same; only a path starting with "//" (handled above) or, without a scheme, a ':' in the
	// first segment (excluded by where the scheme was looked for) would differ.
	return formatURIChars(rest, iri, false, "/")
}

// formatScheme is ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
func formatScheme(s string) bool {
	if s == "" || !formatIsAlpha(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !formatIsAlpha(c) && !formatIsDigit(c) && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// formatAuthority is [ userinfo "@" ] host [ ":" port ].
func formatAuthority(a string, iri bool) bool {
	if at := strings.IndexByte(a, '@'); at >= 0 {
		if !formatURIChars(a[:at], iri, false, ":") {
			return false
		}
		a = a[at+1:]
	}
	host, port := a, ""
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 || !formatIPLiteral(a[1:end]) {
			return false
		}
		host, port = "", a[end+1:]
		if port != "" {
			if port[0] != ':' {
				return false
			}
			port = port[1:]
		}
	} else if c := strings.IndexByte(a, ':'); c >= 0 {
		host, port = a[:c], a[c+1:]
	}
	for i := 0; i < len(port); i++ {
		if !formatIsDigit(port[i]) {
			return false
		}
	}
	// reg-name (an IPv4address is one too): unreserved, pct-encoded, sub-delims.
	return formatURIChars(host, iri, false, "")
}

// formatIPLiteral is what sits between the brackets of an IP-literal: an IPv6address without a
// zone, or IPvFuture ("v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ); ABNF strings match
// either case, so "V" is a version too).
func formatIPLiteral(s string) bool {
	if len(s) > 0 && (s[0] == 'v' || s[0] == 'V') {
		dot := strings.IndexByte(s, '.')
		if dot < 2 || dot == len(s)-1 {
			return false
		}
		for i := 1; i < dot; i++ {
			if !formatIsHex(s[i]) {
				return false
			}
		}
		for i := dot + 1; i < len(s); i++ {
			if c := s[i]; !formatIsUnreserved(c) && !formatIsSubDelim(c) && c != ':' {
				return false
			}
		}
		return true
	}
	if strings.IndexByte(s, '%') >= 0 {
		return false
	}
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6()
}

// formatURIChars tells whether s is made of pchar-like characters: unreserved, pct-encoded and
// sub-delims, the ASCII characters in extra, ':' and '@' unless extra is "" or ":" (host and
// userinfo take fewer), and with iri set the ucschar of RFC 3987 (and iprivate where private is
// set: in a query).
func formatURIChars(s string, iri, private bool, extra string) bool {
	pchar := extra != "" && extra != ":"
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '%':
			if i+2 >= len(s) || !formatIsHex(s[i+1]) || !formatIsHex(s[i+2]) {
				return false
			}
			i += 3
			continue
		case formatIsUnreserved(c), formatIsSubDelim(c), strings.IndexByte(extra, c) >= 0, pchar && (c == ':' || c == '@'):
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(s[i:])
			if !iri || !(formatIsUCSChar(r) || private && formatIsIPrivate(r)) {
				return false
			}
			i += n
			continue
		default:
			return false
		}
		i++
	}
	return true
}

// formatIsUCSChar is RFC 3987's ucschar.
func formatIsUCSChar(r rune) bool {
	switch {
	case r >= 0xA0 && r <= 0xD7FF, r >= 0xF900 && r <= 0xFDCF, r >= 0xFDF0 && r <= 0xFFEF:
		return true
	case r >= 0x10000 && r <= 0xEFFFD:
		// %x10000-1FFFD / %x20000-2FFFD / ... / %xE1000-EFFFD: every plane but its last two
		// code points (E0000-E0FFF is excluded too).
		return r&0xFFFF <= 0xFFFD && !(r >= 0xE0000 && r <= 0xE0FFF)
	}
	return false
}

// formatIsIPrivate is RFC 3987's iprivate.
func formatIsIPrivate(r rune) bool {
	return r >= 0xE000 && r <= 0xF8FF || r >= 0xF0000 && r <= 0xFFFFD || r >= 0x100000 && r <= 0x10FFFD
}

func formatIsAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func formatIsDigit(c byte) bool { return c >= '0' && c <= '9' }
func formatIsHex(c byte) bool {
	return formatIsDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// formatIsUnreserved is ALPHA / DIGIT / "-" / "." / "_" / "~".
func formatIsUnreserved(c byte) bool {
	return formatIsAlpha(c) || formatIsDigit(c) || c == '-' || c == '.' || c == '_' || c == '~'
}

// formatIsSubDelim is "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "=".
func formatIsSubDelim(c byte) bool { return strings.IndexByte("!$&'()*+,;=", c) >= 0 }

// ---- uri-template (RFC 6570 §2) ----

// formatURITemplate is RFC 6570's URI-Template: literals and expressions, "{" [ operator ]
// variable-list "}", scanned once. The operators reserved for future extensions are part of
// the grammar and so accepted. The literals are those of the RFC as amended by its verified
// erratum 6937, which puts back the apostrophe (%x26-3B for %x26 / %x28-3B): the RFC's own
// examples use it, and it is one of RFC 3986's sub-delims.
func formatURITemplate(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 || !formatTemplateExpression(s[i+1:i+end]) {
				return false
			}
			i += end + 1
		case c == '%':
			if i+2 >= len(s) || !formatIsHex(s[i+1]) || !formatIsHex(s[i+2]) {
				return false
			}
			i += 3
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(s[i:])
			if !formatIsUCSChar(r) && !formatIsIPrivate(r) {
				return false
			}
			i += n
		case c == 0x21, c >= 0x23 && c <= 0x24, c >= 0x26 && c <= 0x3B, c == 0x3D, c >= 0x3F && c <= 0x5B,
			c == 0x5D, c == 0x5F, c >= 0x61 && c <= 0x7A, c == 0x7E:
			i++
		default:
			return false // among them space, '"', '<', '>', '\\', '^', '`', '|', '}' and controls
		}
	}
	return true
}

// formatTemplateExpression is [ operator ] variable-list, the inside of an expression.
func formatTemplateExpression(e string) bool {
	if e != "" && strings.IndexByte("+#./;?&=,!@|", e[0]) >= 0 {
		e = e[1:]
	}
	if e == "" {
		return false
	}
	for spec := range strings.SplitSeq(e, ",") {
		name, mod := spec, ""
		if k := strings.IndexAny(spec, ":*"); k >= 0 {
			name, mod = spec[:k], spec[k:]
		}
		if !formatTemplateVarname(name) {
			return false
		}
		switch {
		case mod == "", mod == "*":
		case mod[0] == ':':
			// max-length = %x31-39 0*3DIGIT
			n := mod[1:]
			if len(n) == 0 || len(n) > 4 || n[0] < '1' || n[0] > '9' {
				return false
			}
			for i := 1; i < len(n); i++ {
				if !formatIsDigit(n[i]) {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// formatTemplateVarname is varchar *( ["."] varchar ), varchar being ALPHA / DIGIT / "_" /
// pct-encoded.
func formatTemplateVarname(n string) bool {
	if n == "" || n[0] == '.' || n[len(n)-1] == '.' {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		switch {
		case formatIsAlpha(c), formatIsDigit(c), c == '_':
		case c == '.':
			if n[i+1] == '.' {
				return false
			}
		case c == '%':
			if i+2 >= len(n) || !formatIsHex(n[i+1]) || !formatIsHex(n[i+2]) {
				return false
			}
			i += 2
		default:
			return false
		}
	}
	return true
}
