// Package testemf holds CloudWatch Embedded Metric Format documents to AWS's specification, for
// the tests that read what the service writes: each document must be valid against the
// specification's own JSON schema (testdata/emf.schema.json, copied from AWS's page) and keep the
// rules about references that a schema cannot express. The tests that read EMF (pkg/httpapi's
// telemetry test, the Lambda emulator runs of internal/lambdatest) all check through Check, so
// there is one reading of the specification.
package testemf

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The specification's limits that its schema does not carry, each quoted from its text.
const (
	// maxDocument: "limited to a maximum size of 1 MB" (a CloudWatch Logs event).
	maxDocument = 1 << 20
	// maxMetrics: the Metrics array "MUST NOT contain more than 100 MetricDefinition objects".
	maxMetrics = 100
	// maxValues: "Numeric array metric targets MUST NOT have more than 100 members".
	maxValues = 100
	// maxDimensionValue: a dimension target's value "MUST NOT contain more than 1024 characters".
	maxDimensionValue = 1024
)

// schemaURL names the embedded schema for the compiler; nothing is fetched.
const schemaURL = "urn:agent-output-verifier:testemf:emf.schema.json"

//go:embed testdata/emf.schema.json
var schemaText []byte

var (
	compileOnce sync.Once
	schema      *jsonschema.Schema
	compileErr  error
)

// compiled is the specification's schema, compiled once as draft-07 (the text names no draft;
// its "$id" members are written the draft-07 way).
func compiled() (*jsonschema.Schema, error) {
	compileOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaText))
		if err != nil {
			compileErr = fmt.Errorf("EMF schema: %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft7)
		if err := c.AddResource(schemaURL, doc); err != nil {
			compileErr = fmt.Errorf("EMF schema: %w", err)
			return
		}
		schema, compileErr = c.Compile(schemaURL)
	})
	return schema, compileErr
}

// directive and definition are the members the specification defines for a MetricDirective and a
// MetricDefinition; "unless otherwise noted, objects defined by this specification MUST NOT
// contain any additional members".
var (
	directiveMembers  = map[string]bool{"Namespace": true, "Dimensions": true, "Metrics": true}
	definitionMembers = map[string]bool{"Name": true, "Unit": true, "StorageResolution": true}
)

// Check returns why doc, one log line, is not an EMF document CloudWatch extracts metrics from,
// or nil. It never stops at the first problem: every one found is in the joined error.
func Check(doc []byte) error {
	sch, err := compiled()
	if err != nil {
		return err
	}
	if len(doc) > maxDocument {
		return fmt.Errorf("%d bytes, over the %d-byte limit of a log event", len(doc), maxDocument)
	}
	// "The LogEvent message MUST be a valid JSON object with no additional data at the beginning
	// or end": UnmarshalJSON refuses trailing data.
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not one JSON value: %w", err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("not valid against the EMF specification's schema: %w", err)
	}
	// The schema passed, so the shapes below are the ones it describes.
	var root map[string]json.RawMessage
	if err := json.Unmarshal(doc, &root); err != nil {
		return fmt.Errorf("root: %w", err)
	}
	var meta struct {
		CloudWatchMetrics []map[string]json.RawMessage
	}
	if err := json.Unmarshal(root["_aws"], &meta); err != nil {
		return fmt.Errorf("_aws: %w", err)
	}
	var errs []error
	for i, d := range meta.CloudWatchMetrics {
		for k := range d {
			if !directiveMembers[k] {
				errs = append(errs, fmt.Errorf("CloudWatchMetrics[%d]: member %q is not one the specification defines", i, k))
			}
		}
		var dims [][]string
		var metrics []map[string]json.RawMessage
		json.Unmarshal(d["Dimensions"], &dims)
		json.Unmarshal(d["Metrics"], &metrics)
		for _, set := range dims {
			for _, key := range set {
				var s string
				if err := json.Unmarshal(root[key], &s); err != nil {
					errs = append(errs, fmt.Errorf("CloudWatchMetrics[%d]: dimension %q has no string member on the root node", i, key))
				} else if utf8.RuneCountInString(s) > maxDimensionValue {
					errs = append(errs, fmt.Errorf("CloudWatchMetrics[%d]: dimension %q is longer than %d characters", i, key, maxDimensionValue))
				}
			}
		}
		if len(metrics) > maxMetrics {
			errs = append(errs, fmt.Errorf("CloudWatchMetrics[%d]: %d metrics, over %d", i, len(metrics), maxMetrics))
		}
		for j, m := range metrics {
			for k := range m {
				if !definitionMembers[k] {
					errs = append(errs, fmt.Errorf("CloudWatchMetrics[%d].Metrics[%d]: member %q is not one the specification defines", i, j, k))
				}
			}
			var name string
			json.Unmarshal(m["Name"], &name)
			if err := metricTarget(root[name]); err != nil {
				errs = append(errs, fmt.Errorf("CloudWatchMetrics[%d].Metrics[%d]: metric %q: %w", i, j, name, err))
			}
			if r, ok := m["StorageResolution"]; ok && string(r) != "1" && string(r) != "60" {
				errs = append(errs, fmt.Errorf("CloudWatchMetrics[%d].Metrics[%d]: StorageResolution %s, want 1 or 60", i, j, r))
			}
		}
	}
	return errors.Join(errs...)
}

// metricTarget checks a metric's root member: "a numeric value or an array of numeric values",
// the array of at most maxValues.
func metricTarget(raw json.RawMessage) error {
	if raw == nil {
		return errors.New("no member on the root node")
	}
	var n float64
	if json.Unmarshal(raw, &n) == nil {
		return nil
	}
	var ns []float64
	if err := json.Unmarshal(raw, &ns); err != nil {
		return fmt.Errorf("value %s is neither a number nor an array of numbers", raw)
	}
	if len(ns) > maxValues {
		return fmt.Errorf("%d values, over %d", len(ns), maxValues)
	}
	return nil
}

// Documents returns the EMF documents of stream, a log written line by line: each line that
// holds an "_aws" member, from its first "{" (Lambda's runtime may put a prefix before a line).
// Other lines (request logs, the runtime's own) are left out.
func Documents(stream string) [][]byte {
	var docs [][]byte
	for line := range strings.Lines(stream) {
		i := strings.IndexByte(line, '{')
		if i < 0 || !strings.Contains(line, `"_aws"`) {
			continue
		}
		docs = append(docs, []byte(strings.TrimSpace(line[i:])))
	}
	return docs
}
