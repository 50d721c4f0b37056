package outline

import (
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// parseGoWhole is parseGo without blanking the bodies first.
func parseGoWhole(src []byte) []Decl {
	saved := blankBodies
	blankBodies = func(b []byte) []byte { return b }
	defer func() { blankBodies = saved }()
	return parseGo(src)
}

// TestBlankedBodiesKeepTheOutline: blanking the function bodies changes
// nothing of the outline of the files of Go's go and net/http packages
// that parse (those of testdata that do not are not code).
func TestBlankedBodiesKeepTheOutline(t *testing.T) {
	n := 0
	walk := func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if _, err := parser.ParseFile(token.NewFileSet(), p, src, parser.SkipObjectResolution); err != nil {
			return nil
		}
		n++
		if got, want := parseGo(src), parseGoWhole(src); !reflect.DeepEqual(got, want) {
			for i := range min(len(got), len(want)) {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("%s: blanked %+v\nwhole %+v", p, got[i], want[i])
					break
				}
			}
			if len(got) != len(want) {
				t.Errorf("%s: %d declarations blanked, %d whole", p, len(got), len(want))
			}
		}
		return nil
	}
	for _, dir := range []string{"go", "net/http"} {
		if err := filepath.WalkDir(filepath.Join(build.Default.GOROOT, "src", dir), walk); err != nil {
			t.Fatal(err)
		}
	}
	if n < 100 {
		t.Fatalf("only %d files of Go's sources compared; is GOROOT/src there?", n)
	}
}

func benchGoFiles(b *testing.B) [][]byte {
	var srcs [][]byte
	files, _ := filepath.Glob(filepath.Join(build.Default.GOROOT, "src", "net", "http", "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		srcs = append(srcs, src)
	}
	return srcs
}

// BenchmarkParseGo outlines the Go files of net/http, with their bodies
// blanked (as Parse does) and whole.
func BenchmarkParseGo(b *testing.B) {
	srcs := benchGoFiles(b)
	b.Run("blanked", func(b *testing.B) {
		for b.Loop() {
			for _, src := range srcs {
				parseGo(src)
			}
		}
	})
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			for _, src := range srcs {
				parseGoWhole(src)
			}
		}
	})
}
