// Package schemacheck compiles an expected_schema under the service's limits (no remote
// references, a memory bound, ECMA-262 patterns, formats checked in linear time) and checks an
// instance against it, counting each assertion and keeping its failures as typed values.
package schemacheck
