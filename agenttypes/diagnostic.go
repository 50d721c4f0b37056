package agenttypes

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Severity says whether a Diagnostic stops a definition from loading.
type Severity string

const (
	// SeverityError marks a problem that keeps the definition out of the
	// registry.
	SeverityError Severity = "error"
	// SeverityWarning marks something troupe ignored or changed; the
	// definition still loads.
	SeverityWarning Severity = "warning"
)

// Diagnostic is one problem found in a definition file. Line and Col are
// 1-based; Line is 0 when the problem concerns the file as a whole (it is
// too large, it cannot be read).
type Diagnostic struct {
	File     string   `json:"file"`
	Line     int      `json:"line,omitempty"`
	Col      int      `json:"col,omitempty"`
	Severity Severity `json:"severity"`
	// Message says what is wrong and what to write instead.
	Message string `json:"message"`
}

// String formats d as "FILE:LINE:COL: message", the form editors and
// `troupe types validate` use. Warnings read "FILE:LINE:COL: warning:
// message"; a diagnostic with no line reads "FILE: message".
func (d Diagnostic) String() string {
	var b strings.Builder
	if d.File != "" {
		b.WriteString(d.File)
		if d.Line > 0 {
			col := max(d.Col, 1)
			fmt.Fprintf(&b, ":%d:%d", d.Line, col)
		}
		b.WriteString(": ")
	}
	if d.Severity == SeverityWarning {
		b.WriteString("warning: ")
	}
	b.WriteString(d.Message)
	return b.String()
}

// Diagnostics is a list of problems, errors and warnings together.
type Diagnostics []Diagnostic

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	return slices.ContainsFunc(ds, func(d Diagnostic) bool { return d.Severity == SeverityError })
}

// Errors returns the diagnostics that are errors.
func (ds Diagnostics) Errors() Diagnostics {
	return ds.filter(SeverityError)
}

// Warnings returns the diagnostics that are warnings.
func (ds Diagnostics) Warnings() Diagnostics {
	return ds.filter(SeverityWarning)
}

func (ds Diagnostics) filter(s Severity) Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.Severity == s {
			out = append(out, d)
		}
	}
	return out
}

// Err returns a *DefinitionError holding the error diagnostics, or nil when
// there are none. Warnings are left out: they do not stop a load.
func (ds Diagnostics) Err() error {
	errs := ds.Errors()
	if len(errs) == 0 {
		return nil
	}
	return &DefinitionError{Diagnostics: errs}
}

// String joins the diagnostics, one per line.
func (ds Diagnostics) String() string {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// Sort orders the diagnostics by file, line and column, keeping the order
// of those at the same place.
func (ds Diagnostics) Sort() {
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
}

// DefinitionError is the error for definition files that cannot be
// loaded: every problem found, not only the first. It matches ErrInvalid
// with errors.Is.
type DefinitionError struct {
	Diagnostics Diagnostics
}

// Error joins the diagnostics, one "FILE:LINE:COL: message" per line.
func (e *DefinitionError) Error() string {
	return e.Diagnostics.String()
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *DefinitionError) Unwrap() error { return ErrInvalid }

// diagSink collects diagnostics for one file.
type diagSink struct {
	file  string
	diags Diagnostics
}

func (s *diagSink) errorf(line, col int, format string, args ...any) {
	s.diags = append(s.diags, Diagnostic{File: s.file, Line: line, Col: col, Severity: SeverityError, Message: fmt.Sprintf(format, args...)})
}

func (s *diagSink) warnf(line, col int, format string, args ...any) {
	s.diags = append(s.diags, Diagnostic{File: s.file, Line: line, Col: col, Severity: SeverityWarning, Message: fmt.Sprintf(format, args...)})
}

// problem reports an error in strict mode and a warning in lenient mode.
func (s *diagSink) problem(strict bool, line, col int, format string, args ...any) {
	if strict {
		s.errorf(line, col, format, args...)
	} else {
		s.warnf(line, col, format, args...)
	}
}
