package agenttypes_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/agenttypes"
)

// findings is an answer of n findings of four fields.
func findings(n int) string {
	return `{"findings": [` + strings.Repeat(`{"severity": "high", "text": "something is off", "path": "a/b.go", "line": 12},`, n-1) +
		`{"severity": "high", "text": "something is off", "path": "a/b.go", "line": 12}]}`
}

const findingsOfFour = `{"type": "object", "required": ["findings"], "properties": {"findings": {"type": "array", "items": {
	"type": "object", "required": ["severity", "text", "path", "line"], "properties": {
		"severity": {"enum": ["high", "medium", "low"]}, "text": {"type": "string", "minLength": 1},
		"path": {"type": "string"}, "line": {"type": "integer", "minimum": 1}}}}}}`

// BenchmarkOutputParse checks answers against output schemas: a typical
// one, and answers whose checks spend the whole work budget, on an
// ordinary schema (an answer far larger than a model writes) and on one
// whose cost explodes with the answer's nesting. The last two show what
// the budget costs in time.
func BenchmarkOutputParse(b *testing.B) {
	for _, bc := range []struct {
		name, schema, answer string
		tooLong              bool
	}{
		{"a thousand findings", findingsOfFour, findings(1000), false},
		{"budget spent on findings", findingsOfFour, findings(60_000), true},
		{"budget spent on nesting", explosive, explosiveAnswer, true},
	} {
		out := agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(bc.schema)}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				_, err := out.Parse(b.Context(), bc.answer)
				if tooLong := err != nil && strings.Contains(err.Error(), "too long"); tooLong != bc.tooLong {
					b.Fatalf("got %v", err)
				}
			}
		})
	}
}
