package agenttypes

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hangAfter is far more than any definition should take to read, even
// under the race detector on a loaded machine.
const hangAfter = 10 * time.Second

// parseWatched parses under a watchdog: the fuzzer notices no hang on its
// own, but it does notice a worker that crashes, and records the input.
func parseWatched(path string, data []byte, mode Mode) (Type, Diagnostics) {
	wd := time.AfterFunc(hangAfter, func() {
		panic(fmt.Sprintf("ParseDefinition(%q, mode %s) still running after %s on %q", path, mode, hangAfter, data))
	})
	defer wd.Stop()
	return ParseDefinition(path, data, LoadOptions{Mode: mode})
}

// Run with make fuzz, or one target at a time:
//
//	go test ./agenttypes -run '^$' -fuzz '^FuzzYAMLDefinition$' -fuzztime 60s
//	go test ./agenttypes -run '^$' -fuzz '^FuzzMarkdownDefinition$' -fuzztime 60s

// fixtureSeeds returns the definition fixtures with the given extensions.
func fixtureSeeds(t interface{ Fatal(...any) }, exts ...string) [][]byte {
	var out [][]byte
	for _, pattern := range []string{"*/*", "*/*/*"} {
		files, err := filepath.Glob(filepath.Join("..", "testdata", "agents", pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			for _, ext := range exts {
				if strings.HasSuffix(f, ext) {
					data, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, data)
				}
			}
		}
	}
	return out
}

// checkLoad holds for any input: no panic, diagnostics that point into the
// file, and a type exactly when there is no error, a valid one.
func checkLoad(t *testing.T, path string, data []byte, typ Type, diags Diagnostics) {
	t.Helper()
	// Lines as YAML counts them: after \n, a lone \r, NEL, LS and PS.
	norm := bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	lines := 1 + bytes.Count(norm, []byte{'\n'}) + bytes.Count(norm, []byte{'\r'}) +
		strings.Count(string(norm), "\u0085") + strings.Count(string(norm), "\u2028") + strings.Count(string(norm), "\u2029")
	for _, d := range diags {
		if d.File != path || d.Message == "" || d.Line < 0 || d.Line > lines || d.Col < 0 {
			t.Fatalf("bad diagnostic %#v for a file of %d lines", d, lines)
		}
		if d.Severity != SeverityError && d.Severity != SeverityWarning {
			t.Fatalf("bad severity %#v", d)
		}
	}
	if diags.HasErrors() {
		if typ.Name != "" {
			t.Fatalf("a type %q despite errors:\n%s", typ.Name, diags)
		}
		return
	}
	if err := typ.Validate(); err != nil {
		t.Fatalf("loaded an invalid type: %v\n%s", err, data)
	}
	if typ.Source != path {
		t.Fatalf("source %q, want %q", typ.Source, path)
	}
	for _, tool := range typ.Tools {
		if !typeName.MatchString(tool) {
			t.Fatalf("tool name %q", tool)
		}
	}
}

func FuzzYAMLDefinition(f *testing.F) {
	recoverPanics = false
	f.Cleanup(func() { recoverPanics = true })
	for _, seed := range fixtureSeeds(f, ".yaml", ".yml") {
		f.Add(seed)
	}
	for _, seed := range []string{
		"", "~", "[]", "name: x\ndescription: d\n", "name: &a x\ndescription: *a\n",
		"name: x\ndescription: d\noutput:\n  format: json\n  schema: {type: object, properties: {a: {$ref: '#/$defs/b'}}}\n",
		"name: x\ndescription: d\nbudget: {max_time: 1h, max_tokens: 9999999999999999999}\n",
		"<<: {name: x}\n", "name: x\ndescription: d\ntools: Read, Agent(a, b), mcp__x\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, path := range []string{"agents/fuzz.yaml", ".claude/agents/fuzz.yml"} {
			for _, mode := range []Mode{ModeAuto, ModeStrict, ModeLenient} {
				typ, diags := parseWatched(path, data, mode)
				checkLoad(t, path, data, typ, diags)
			}
		}
	})
}

// bodyMarker is put in every body; the front matter must never read it.
const bodyMarker = "fuzz-body-marker"

func FuzzMarkdownDefinition(f *testing.F) {
	recoverPanics = false
	f.Cleanup(func() { recoverPanics = true })
	for _, seed := range fixtureSeeds(f, ".md") {
		front, body, _ := strings.Cut(strings.TrimPrefix(string(seed), "---\n"), "\n---\n")
		f.Add(front, body)
	}
	f.Add("name: x\ndescription: a: b\ntools: Read", "body")
	f.Add("name: x\ndescription: |\n  line\n   more\ntools:\n  - Read\n  - Bash", "")
	f.Add("description: \"unterminated\ntools: [Read, Grep", "{{ .Values }}")
	f.Add("name: x\ndescription: >\n\n\n", "---\n---\n")
	f.Fuzz(func(t *testing.T, front, body string) {
		data := []byte("---\n" + front + "\n---\n" + body + "\nname: " + bodyMarker + "\ndescription: " + bodyMarker + "\ntools: Bash\n")
		closesEarly := false
		for _, l := range strings.Split(front, "\n") {
			if t := strings.TrimRight(l, " \t\r"); t == "---" || t == "..." {
				closesEarly = true
			}
		}
		for _, path := range []string{"agents/fuzz.md", ".claude/agents/fuzz.md"} {
			for _, mode := range []Mode{ModeAuto, ModeLenient} {
				typ, diags := parseWatched(path, data, mode)
				checkLoad(t, path, data, typ, diags)
				if closesEarly || strings.Contains(front, bodyMarker) || diags.HasErrors() {
					continue
				}
				if typ.Name == bodyMarker || strings.Contains(typ.Description, bodyMarker) {
					t.Fatalf("the front matter read a key from the body:\n%s", data)
				}
			}
		}
	})
}
