package service

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"strings"
)

// IPv6ClientPrefixBits is how much of an IPv6 address names a client: its /64. A /64 is the
// smallest network a site is given (RFC 6177) and one host may pick any address inside it
// (SLAAC privacy addresses, RFC 8981), so counting each IPv6 address apart would give anyone
// with an IPv6 prefix an unlimited free allowance. IPv4 clients are one address each.
const IPv6ClientPrefixBits = 64

// UnknownClient is the one identity of every request whose client address is missing or is not
// an IP address (a Lambda event without sourceIp, a trusted proxy that wrote something else
// into X-Forwarded-For). They share one free allowance and count as one caller: text that is
// not an address never becomes an identity of its own, so it cannot multiply allowances.
const UnknownClient = "unknown"

// ClientRule says, in the free_trial and free_allowance documents, how a client is told apart.
const ClientRule = "identified by request IP address, an IPv6 address by its /64 prefix"

// ClientOf is the client of SPEC §8.1 as the free allowance and the history's caller id know
// it, from one address as a peer or proxy wrote it (with or without a port, in brackets or not,
// with a zone or not): the canonical text of the IP address, an IPv4-mapped IPv6 address as its
// IPv4 address, an IPv6 address as its /64 prefix (IPv6ClientPrefixBits), and UnknownClient when
// the text is no address. Which address names the client (the peer, or a trusted proxy's
// X-Forwarded-For entry) is the transport's to say; what a client is, is this.
func ClientOf(address string) string {
	addr, ok := parseClientAddr(address)
	if !ok {
		return UnknownClient
	}
	if addr.Is4() {
		return addr.String()
	}
	return netip.PrefixFrom(addr, IPv6ClientPrefixBits).Masked().String()
}

// parseClientAddr reads a client address: "192.0.2.1", "192.0.2.1:443", "2001:db8::1",
// "[2001:db8::1]", "[2001:db8::1]:443", "fe80::1%eth0". The zone is dropped (it names the
// server's interface, not the client) and an IPv4-mapped address is its IPv4 address (what a
// dual-stack listener reports for an IPv4 peer). Only the forms netip reads are addresses: IPv4
// with leading zeros ("010.0.0.1", octal to some parsers and decimal to others) or in fewer
// than four parts is not one. An unspecified address (0.0.0.0, ::) is no client's either.
func parseClientAddr(text string) (netip.Addr, bool) {
	text = strings.TrimSpace(text)
	var addr netip.Addr
	if ap, err := netip.ParseAddrPort(text); err == nil {
		addr = ap.Addr()
	} else {
		if len(text) > 2 && text[0] == '[' && text[len(text)-1] == ']' {
			text = text[1 : len(text)-1]
		}
		if addr, err = netip.ParseAddr(text); err != nil {
			return netip.Addr{}, false
		}
	}
	addr = addr.WithZone("").Unmap()
	if addr.IsUnspecified() {
		return netip.Addr{}, false
	}
	return addr, true
}

// CallerID is the salted SHA-256 of a client identity (ClientOf): it tells callers apart, for
// the free allowance and in agents' histories, without storing their addresses.
func (s *Service) CallerID(client string) string {
	h := sha256.New()
	h.Write(s.d.CallerSalt)
	h.Write([]byte(client))
	return hex.EncodeToString(h.Sum(nil))
}
