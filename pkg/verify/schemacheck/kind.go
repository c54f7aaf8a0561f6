package schemacheck

import (
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
)

// Kind is what one failure found: a small value per sort of failure holding the schema's
// expectation and what the instance had there, as data. The walker makes one only for a failure
// it keeps, and nothing is written as text until the report asks (Texts), as santhosh-tekuri's
// kinds hold their values until a ValidationError is printed.
type Kind interface {
	// Keyword is the assertion that failed ("type", "required", "false" for a false schema,
	// "$ref" for a reference cycle); empty for the undeclared-property check, which is one
	// check of its own.
	Keyword() string
	// Texts says what failed in words: what the schema expects and what was found, each
	// shortened to jsonvalue.ShownChars (found shows at most that much of the caller's value),
	// and one sentence of detail without the location.
	Texts() (expected, found, detail string)
}

// shortened shortens a kind's expected and found texts, as every Texts answers them.
func shortened(expected, found, detail string) (string, string, string) {
	return jsonvalue.Shorten(expected), jsonvalue.Shorten(found), detail
}

// FalseSchema: the schema false allows no value where Value is.
type FalseSchema struct{ Value any }

func (FalseSchema) Keyword() string { return "false" }
func (k FalseSchema) Texts() (string, string, string) {
	return shortened("no value here (the schema is false)", jsonvalue.Describe(k.Value), "the schema allows no value at this location")
}

// RefCycle: the schema refers to itself at one location without consuming any of the value.
type RefCycle struct{}

func (RefCycle) Keyword() string { return "$ref" }
func (RefCycle) Texts() (string, string, string) {
	return shortened("a schema without a reference cycle", "reference cycle", "the schema refers to itself without consuming any of the value")
}

// NotJSON: Value is no JSON value at all (only possible from a Go caller).
type NotJSON struct{ Value any }

func (NotJSON) Keyword() string { return "type" }
func (NotJSON) Texts() (string, string, string) {
	return shortened("a JSON value", "unsupported value", "the value is not JSON")
}

// Type: Value is not of the types Want (a number is shown with its literal when Want includes
// integer).
type Type struct {
	Want  jsonschema.Types
	Value any
}

func (Type) Keyword() string { return "type" }
func (k Type) Texts() (string, string, string) {
	wants := k.Want.ToStrings()
	want := strings.Join(wants, " or ")
	got := schJSONType(k.Value)
	found := got
	if lit, isNum := jsonvalue.NumberLiteral(k.Value); isNum && slices.Contains(wants, "integer") {
		found = "number " + jsonvalue.Clip(lit, 40)
	}
	return shortened("type "+want, found, "the value is "+schemaArticle(got)+", but the schema requires "+want)
}

// Const: Value differs from the constant Want.
type Const struct{ Want, Value any }

func (Const) Keyword() string { return "const" }
func (k Const) Texts() (string, string, string) {
	return shortened("the constant "+jsonvalue.Brief(k.Want), "value "+jsonvalue.Brief(k.Value), "the value differs from the required constant")
}

// Enum: Value is none of Want.
type Enum struct {
	Want  []any
	Value any
}

func (Enum) Keyword() string { return "enum" }
func (k Enum) Texts() (string, string, string) {
	return shortened(jsonvalue.Clip("one of "+jsonvalue.BriefList(k.Want), jsonvalue.ShownChars), "value "+jsonvalue.Brief(k.Value),
		fmt.Sprintf("the value is not one of the %d allowed values", len(k.Want)))
}

// Format: Value is not valid in the format Want.
type Format struct {
	Want  string
	Value any
}

func (Format) Keyword() string { return "format" }
func (k Format) Texts() (string, string, string) {
	name := jsonvalue.Clip(k.Want, 40)
	return shortened("format "+name, "value "+jsonvalue.Brief(k.Value), "the value is not a valid "+name)
}

// Not: the value matches the subschema of not.
type Not struct{}

func (Not) Keyword() string { return "not" }
func (Not) Texts() (string, string, string) {
	return shortened("a value that does not match the not subschema", "matches it", "the value matches the subschema it must not match")
}

// AnyOf: the value matches none of the Of subschemas of anyOf.
type AnyOf struct{ Of int }

func (AnyOf) Keyword() string { return "anyOf" }
func (k AnyOf) Texts() (string, string, string) {
	return shortened(fmt.Sprintf("a match for at least one of %d anyOf subschemas", k.Of), "matches none",
		"the value matches none of the anyOf subschemas")
}

// OneOf: the value matches none of the Of subschemas of oneOf (First is -1), or both First and
// Second.
type OneOf struct{ Of, First, Second int }

func (OneOf) Keyword() string { return "oneOf" }
func (k OneOf) Texts() (string, string, string) {
	found := "matches none"
	if k.First >= 0 {
		found = fmt.Sprintf("matches subschemas %d and %d", k.First, k.Second)
	}
	return shortened(fmt.Sprintf("a match for exactly one of %d oneOf subschemas", k.Of), found,
		"the value must match exactly one of the oneOf subschemas")
}

// Count is a failed minProperties, maxProperties, minItems, maxItems, minLength or maxLength, or
// an items (additionalItems before 2020-12) false past Want prefix items: the value has Got
// where the schema allows at least or at most Want.
type Count struct {
	Assertion string
	Want, Got int
}

func (k Count) Keyword() string { return k.Assertion }
func (k Count) Texts() (string, string, string) {
	one, many := "item", "items"
	switch k.Assertion {
	case "minProperties", "maxProperties":
		one, many = "property", "properties"
	case "minLength", "maxLength":
		one, many = "character", "characters"
	}
	bound := "at most "
	if strings.HasPrefix(k.Assertion, "min") {
		bound = "at least "
	}
	return shortened(bound+jsonvalue.Plural(k.Want, one, many), jsonvalue.Plural(k.Got, one, many), countDetail[k.Assertion])
}

// countDetail is the detail of each assertion a Count fails; items and additionalItems are the
// prefixItems limit.
var countDetail = map[string]string{
	"minProperties":   "the object has fewer properties than the minimum",
	"maxProperties":   "the object has more properties than the maximum",
	"minItems":        "the array has fewer items than the minimum",
	"maxItems":        "the array has more items than the maximum",
	"minLength":       "the string is shorter than the minimum length",
	"maxLength":       "the string is longer than the maximum length",
	"items":           "the array has more items than the schema allows",
	"additionalItems": "the array has more items than the schema allows",
}

// Required: the object lacks Missing of the properties Want requires (Missing holds the first
// of them, enough to show; NMissing counts them all).
type Required struct {
	Want, Missing []string
	NMissing      int
}

func (Required) Keyword() string { return "required" }
func (k Required) Texts() (string, string, string) {
	return shortened("required properties "+schNames(k.Want), "missing "+schNames(k.Missing),
		jsonvalue.Plural(k.NMissing, "required property is", "required properties are")+" missing")
}

// Dependent: the object holds Property without Missing of the properties Want it requires
// (dependentRequired, or dependencies before 2019-09, as Assertion says).
type Dependent struct {
	Assertion     string
	Property      string
	Want, Missing []string
}

func (k Dependent) Keyword() string { return k.Assertion }
func (k Dependent) Texts() (string, string, string) {
	return shortened("properties "+schNames(k.Want)+" when "+jsonvalue.Clip(k.Property, 30)+" is present", "missing "+schNames(k.Missing),
		"a property that requires others is present without them")
}

// AdditionalProperties: the object holds Names, which additionalProperties false forbids.
type AdditionalProperties struct{ Names []string }

func (AdditionalProperties) Keyword() string { return "additionalProperties" }
func (k AdditionalProperties) Texts() (string, string, string) {
	return shortened("no properties beyond those declared",
		jsonvalue.Plural(len(k.Names), "undeclared property", "undeclared properties")+" "+schNames(k.Names),
		jsonvalue.Plural(len(k.Names), "property is", "properties are")+" not allowed by the schema")
}

// Undeclared: the object holds Names, which no schema at its location declares (the
// undeclared-property check of strict_content_check).
type Undeclared struct{ Names []string }

func (Undeclared) Keyword() string { return "" }
func (k Undeclared) Texts() (string, string, string) {
	return shortened("only properties the schema declares",
		jsonvalue.Plural(len(k.Names), "undeclared property", "undeclared properties")+" "+schNames(k.Names),
		jsonvalue.Plural(len(k.Names), "property is", "properties are")+" not declared by the schema at this location")
}

// PropertyNames: the property name Name is not valid against propertyNames.
type PropertyNames struct{ Name string }

func (PropertyNames) Keyword() string { return "propertyNames" }
func (k PropertyNames) Texts() (string, string, string) {
	return shortened("property names valid against propertyNames", "invalid name "+jsonvalue.Brief(k.Name),
		"a property name does not satisfy propertyNames")
}

// UnevaluatedProperties: the object holds Names, which no subschema evaluates.
type UnevaluatedProperties struct{ Names []string }

func (UnevaluatedProperties) Keyword() string { return "unevaluatedProperties" }
func (k UnevaluatedProperties) Texts() (string, string, string) {
	return shortened("no properties beyond those the schema evaluates",
		jsonvalue.Plural(len(k.Names), "unevaluated property", "unevaluated properties")+" "+schNames(k.Names),
		jsonvalue.Plural(len(k.Names), "property is", "properties are")+" not evaluated by any subschema")
}

// UnevaluatedItems: the array holds Extra items no subschema evaluates.
type UnevaluatedItems struct{ Extra int }

func (UnevaluatedItems) Keyword() string { return "unevaluatedItems" }
func (k UnevaluatedItems) Texts() (string, string, string) {
	return shortened("no items beyond those the schema evaluates", jsonvalue.Plural(k.Extra, "unevaluated item", "unevaluated items"),
		"some items are not evaluated by any subschema")
}

// UniqueItems: items First and Second of the array are equal.
type UniqueItems struct{ First, Second int }

func (UniqueItems) Keyword() string { return "uniqueItems" }
func (k UniqueItems) Texts() (string, string, string) {
	return shortened("unique items", fmt.Sprintf("items %d and %d are equal", k.First, k.Second), "the array has equal items")
}

// Contains: Matched items match contains, outside minContains..maxContains (nil: absent).
type Contains struct {
	Min, Max *int
	Matched  int
}

func (Contains) Keyword() string { return "contains" }
func (k Contains) Texts() (string, string, string) {
	want := "at least 1 item matching contains"
	switch {
	case k.Min != nil && k.Max != nil:
		want = fmt.Sprintf("between %d and %d items matching contains", *k.Min, *k.Max)
	case k.Min != nil:
		want = fmt.Sprintf("at least %s matching contains", jsonvalue.Plural(*k.Min, "item", "items"))
	case k.Max != nil:
		want = fmt.Sprintf("at least 1 and at most %d items matching contains", *k.Max)
	}
	return shortened(want, jsonvalue.Plural(k.Matched, "matching item", "matching items"),
		"the number of items matching contains is outside the allowed range")
}

// Pattern: the string Value does not match the pattern Want.
type Pattern struct {
	Want  jsonschema.Regexp
	Value string
}

func (Pattern) Keyword() string { return "pattern" }
func (k Pattern) Texts() (string, string, string) {
	return shortened("a string matching "+k.Want.String(), "value "+jsonvalue.Brief(k.Value), "the string does not match the required pattern")
}

// ContentEncoding: the string is not valid in the encoding Want.
type ContentEncoding struct{ Want string }

func (ContentEncoding) Keyword() string { return "contentEncoding" }
func (k ContentEncoding) Texts() (string, string, string) {
	name := jsonvalue.Clip(k.Want, 30)
	return shortened(name+"-encoded content", "not valid "+name, "the string is not valid "+name)
}

// ContentMediaType: the string's content is not valid as the media type Want.
type ContentMediaType struct{ Want string }

func (ContentMediaType) Keyword() string { return "contentMediaType" }
func (k ContentMediaType) Texts() (string, string, string) {
	name := jsonvalue.Clip(k.Want, 40)
	return shortened("content of type "+name, "not valid "+name, "the content is not valid "+name)
}

// ContentSchema: the string's decoded content is not valid against contentSchema.
type ContentSchema struct{}

func (ContentSchema) Keyword() string { return "contentSchema" }
func (ContentSchema) Texts() (string, string, string) {
	return shortened("content valid against contentSchema", "invalid content", "the decoded content does not satisfy contentSchema")
}

// Bound: the number Value (its literal) is not within the bound Want of Assertion (minimum,
// maximum, exclusiveMinimum or exclusiveMaximum).
type Bound struct {
	Assertion string
	Want      *big.Rat
	Value     string
}

func (k Bound) Keyword() string { return k.Assertion }
func (k Bound) Texts() (string, string, string) {
	want := boundWords[k.Assertion] + schRatText(k.Want)
	return shortened(want, "value "+jsonvalue.Clip(k.Value, 60), "the value is not "+want)
}

// boundWords says what each numeric bound requires, before its number.
var boundWords = map[string]string{
	"minimum":          "at least ",
	"maximum":          "at most ",
	"exclusiveMinimum": "greater than ",
	"exclusiveMaximum": "less than ",
}

// MultipleOf: the number Value (its literal) is not a multiple of Want.
type MultipleOf struct {
	Want  *big.Rat
	Value string
}

func (MultipleOf) Keyword() string { return "multipleOf" }
func (k MultipleOf) Texts() (string, string, string) {
	want := schRatText(k.Want)
	return shortened("a multiple of "+want, "value "+jsonvalue.Clip(k.Value, 60), "the value is not a multiple of "+want)
}

// schRatText shows a schema number compactly (decimal when exact, else a fraction).
func schRatText(r *big.Rat) string {
	if r.IsInt() {
		return jsonvalue.Clip(r.Num().String(), 40)
	}
	if d, exact := r.FloatPrec(); exact {
		return jsonvalue.Clip(r.FloatString(d), 40)
	}
	return jsonvalue.Clip(r.RatString(), 40)
}

// schNames joins property names for a message, each clipped, the whole kept short.
func schNames(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		if b.Len() > jsonvalue.ShownChars {
			b.WriteString("…")
			break
		}
		b.WriteString(jsonvalue.Clip(n, 40))
	}
	return b.String()
}
