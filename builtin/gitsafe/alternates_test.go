package gitsafe

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The check reads alternates the way git does, so that no entry git
// follows escapes it.
func TestAlternateEntries(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"lines", "/a/objects\n../../b/objects\n", []string{"/a/objects", "../../b/objects"}},
		{"no final newline", "/a", []string{"/a"}},
		{"comments and empty lines", "# /c\n\n/a\n#/d\n", []string{"/a"}},
		{"a comment only at the start of a line", "/a #x\n", []string{"/a #x"}},
		{"spaces and carriage returns are kept", " /a\r\n", []string{" /a\r"}},
		{"quoted", `"/a b/objects"` + "\n/c\n", []string{"/a b/objects", "/c"}},
		{"quoted escapes", `"/a\tb\\c\"d\101\n"` + "\n", []string{"/a\tb\\c\"dA\n"}},
		{"quoted spans a line", "\"/a\n/b\"\n", []string{"/a\n/b"}},
		{"one character after the closing quote is skipped", `"x"X/outside` + "\n", []string{"x", "/outside"}},
		{"the closing quote ends the file", `"x"`, []string{"x"}},
		{"unterminated quote is literal", "\"/a\n/b\n", []string{"\"/a", "/b"}},
		{"bad escape is literal", `"/a\q"` + "\n", []string{`"/a\q"`}},
		{"octal needs three digits", `"/a\10"` + "\n", []string{`"/a\10"`}},
		{"octal above \\377 is literal", `"\400"` + "\n", []string{`"\400"`}},
		{"a NUL ends the file", "/a\n\x00/b\n", []string{"/a"}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, gitAlternateEntries(tt.in))
		})
	}
}
