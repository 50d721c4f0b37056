package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/outline"
)

// TestSymbolsCapFiles checks the caps of a call on trees too large to
// write in a test: the files are taken in path order, whatever order the
// walk found them in, up to symbolsMaxFiles files and symbolsMaxBytes.
func TestSymbolsCapFiles(t *testing.T) {
	var sc symbolScan
	for i := symbolsMaxFiles + 9; i >= 0; i-- {
		sc.files = append(sc.files, sourceFile{rel: fmt.Sprintf("f%05d.go", i), size: 10})
	}
	sc.capFiles()
	require.Len(t, sc.files, symbolsMaxFiles)
	assert.Equal(t, "f00000.go", sc.files[0].rel)
	assert.Equal(t, fmt.Sprintf("f%05d.go", symbolsMaxFiles-1), sc.files[symbolsMaxFiles-1].rel)
	assert.Equal(t, 10, sc.overCap)
	assert.Contains(t, sc.notes(symbolsMaxFiles), "... stopped at 5000 files (a call reads at most 5000 files or 64 MiB): 10 more not scanned; give a narrower path")

	sc = symbolScan{}
	for _, name := range []string{"c.go", "a.go", "b.go"} {
		sc.files = append(sc.files, sourceFile{rel: name, size: symbolsMaxBytes / 2})
	}
	sc.capFiles()
	assert.Equal(t, []sourceFile{{rel: "a.go", size: symbolsMaxBytes / 2}, {rel: "b.go", size: symbolsMaxBytes / 2}}, sc.files)
	assert.Equal(t, 1, sc.overCap)
}

// TestSymbolsCancelledWhileWalking: a call whose context ends during
// its walk returns the context's error, not a partial outline.
func TestSymbolsCancelledWhileWalking(t *testing.T) {
	root := walkTree(t, 200)
	ctx, cancel := context.WithCancel(agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: root.Dir()}))
	defer cancel()
	walkDirHook = func(rel string) {
		if rel == "d1" {
			cancel()
		}
	}
	t.Cleanup(func() { walkDirHook = nil })
	_, err := Symbols().Call(ctx, json.RawMessage(`{}`))
	require.ErrorIs(t, err, context.Canceled)
}

func TestQuoteName(t *testing.T) {
	for name, want := range map[string]string{
		"(*Server).Shutdown": "(*Server).Shutdown",
		"Parser::next":       "Parser::next",
		"odd name":           `"odd name"`,
		"":                   `""`,
		"\xff":               `"\xff"`,
		`"q`:                 `"\"q"`,
	} {
		assert.Equal(t, want, quoteName(name), name)
		if strings.HasPrefix(want, `"`) {
			got, rest, ok := unquoteName(want + " sig")
			assert.True(t, ok)
			assert.Equal(t, name, got)
			assert.Equal(t, " sig", rest)
		}
	}
}

// TestMatchBodiesLeavesOutDocs: a doc comment is no part of a body,
// above a declaration (with the annotations and attributes between) or,
// in Python, the docstring opening it; nor is the line holding its name.
// The lines are found in the file, whatever the doc text says.
func TestMatchBodiesLeavesOutDocs(t *testing.T) {
	tests := []struct {
		name string
		lang outline.Lang
		src  string
		want []uint16 // the body's count of "cookie" for each declaration
	}{
		{"a Python docstring", outline.Python, "def clear():\n    \"\"\"Forget every cookie.\"\"\"\n    jar.cookie = None\n", []uint16{1}},
		{"a Go field's doc inside its struct", outline.Go, "package p\n\ntype Jar struct {\n\t// Cookie is the last cookie.\n\tLast int\n}\n", nil},
		{"the line of the name", outline.Go, "package p\n\nfunc cookie() {\n\treturn\n}\n", nil},
		{"a Python comment above, no docstring", outline.Python, "# Helper for the cookie\n# jar, documented above.\ndef worker():\n    cookie_jar = 3\n    return cookie_jar\n", []uint16{2}},
		{"a multi-line Python docstring after a long header", outline.Python, "def clear(\n    jar,\n):\n    \"\"\"Forget\n    every cookie.\n    \"\"\"\n    jar.cookie = None\n", []uint16{1}},
		{"a Javadoc and an annotation inside a class", outline.Java, "class Holder {\n    /** Bakes a cookie.\n     * Twice. */\n    @Override\n    public int bake() {\n        return 1;\n    }\n}\n", nil},
		{"a Go group's doc, not its spec's", outline.Go, "package p\n\n// Handlers of the cookie\n// jar.\nvar (\n\thandleA = func() {\n\t\tcookie()\n\t}\n\thandleB = 2\n)\n", []uint16{1}},
		{"a Rust attribute between doc and item", outline.Rust, "/// A cookie jar.\n#[derive(Debug)]\npub struct Jar {\n    n: u32,\n}\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decls := outline.Parse(tt.lang, []byte(tt.src))
			require.NotEmpty(t, decls)
			got := matchBodies(tt.lang, []byte(tt.src), decls, parseQuery("cookie"))
			var counts []uint16
			for _, m := range got {
				if m.tf != nil {
					counts = append(counts, m.tf[0])
				}
			}
			assert.Equal(t, tt.want, counts)
		})
	}
}

func TestTrimEnding(t *testing.T) {
	for w, want := range map[string]string{
		"validated":   "validat",
		"connections": "connection",
		"parsing":     "pars",
		"retries":     "retr",
		"stopped":     "stop",
		"running":     "runn",
		"matches":     "match",
		"boxes":       "boxe",
		"files":       "file",
		"types":       "type",
		"class":       "class",
		"status":      "status",
		"used":        "used",
		"bus":         "bus",
		"apis":        "apis",
		"timeout":     "timeout",
		"called":      "call",
		"bodies":      "bodie",
		"http2":       "http2",
	} {
		assert.Equal(t, want, trimEnding(w), w)
	}
}
