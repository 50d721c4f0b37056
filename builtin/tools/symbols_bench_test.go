package tools_test

import (
	"context"
	"encoding/json"
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/tools"
)

// BenchmarkSymbols outlines Go's net/http (its packages below too, about
// fifty files and two thousand declarations) for a query of four words,
// as an agent asking where request bodies are limited would.
//
//	go test -run ^$ -bench Symbols ./builtin/tools
func BenchmarkSymbols(b *testing.B) {
	dir := filepath.Join(build.Default.GOROOT, "src", "net", "http")
	if _, err := os.Stat(filepath.Join(dir, "server.go")); err != nil {
		b.Skipf("Go's sources are not installed: %v", err)
	}
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: dir})
	args := json.RawMessage(`{"query":"limit request body size","max_results":50}`)
	sym := tools.Symbols()
	out, err := sym.Call(ctx, args)
	if err != nil {
		b.Fatal(err)
	}
	if !strings.Contains(out, "request.go:") {
		b.Fatalf("no declaration of request.go among:\n%s", out)
	}
	for b.Loop() {
		if _, err := sym.Call(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}
