package plugins_test

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/plugins"
)

// samples runs fn at least min times (b.N when larger) and reports the
// median and the 90th percentile in unit (ms or µs), and the mean as
// ns/op: make bench runs each benchmark once, so the spread comes from
// the samples.
func samples(b *testing.B, min int, unit string, fn func()) {
	n := max(b.N, min)
	ds := make([]time.Duration, n)
	b.ResetTimer()
	for i := range n {
		start := time.Now()
		fn()
		ds[i] = time.Since(start)
	}
	b.StopTimer()
	slices.Sort(ds)
	var total time.Duration
	for _, d := range ds {
		total += d
	}
	div := float64(time.Microsecond)
	if unit == "ms" {
		div = float64(time.Millisecond)
	}
	b.ReportMetric(float64(ds[n/2])/div, "p50-"+unit)
	b.ReportMetric(float64(ds[n*9/10])/div, "p90-"+unit)
	b.ReportMetric(float64(total)/float64(n), "ns/op")
}

// BenchmarkColdStart: discover a plugin, start its process (under a
// keeper), handshake and Describe it, set its types in a registry.
func BenchmarkColdStart(b *testing.B) {
	coldStart(b, plugins.Config{}, pluginDir(b, "test"))
}

// BenchmarkColdStartChecked: the same for a plugin checked against a lock
// file: its binary is read once into a sealed image and hashed, and runs
// from that image.
func BenchmarkColdStartChecked(b *testing.B) {
	dir := pluginDir(b, "test")
	lock := filepath.Join(b.TempDir(), "plugins.lock")
	if _, err := plugins.WriteLock(lock, []plugins.Binary{{Name: "test", Path: filepath.Join(dir, plugins.Prefix+"test")}}); err != nil {
		b.Fatal(err)
	}
	coldStart(b, plugins.Config{LockFile: lock}, dir)
}

func coldStart(b *testing.B, cfg plugins.Config, dir string) {
	var hosts []*plugins.Host
	samples(b, 20, "ms", func() {
		h, _ := newHost(b, cfg, dir)
		if problems := h.Load(context.Background(), agenttypes.NewRegistry()); len(problems) > 0 {
			b.Fatal(problems)
		}
		hosts = append(hosts, h)
		if len(hosts) > 4 {
			b.StopTimer()
			for _, h := range hosts {
				_ = h.Close()
			}
			hosts = hosts[:0]
			b.StartTimer()
		}
	})
}

// BenchmarkToolCall: one call of a plugin's tool, round trip.
func BenchmarkToolCall(b *testing.B) {
	h, _ := newHost(b, plugins.Config{}, pluginDir(b, "test"))
	reg := agenttypes.NewRegistry()
	if problems := h.Load(context.Background(), reg); len(problems) > 0 {
		b.Fatal(problems)
	}
	tool, _ := reg.Tool("pid")
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{AgentID: "bench", Dir: b.TempDir()})
	samples(b, 2000, "µs", func() {
		if _, err := tool.Call(ctx, []byte(`{}`)); err != nil {
			b.Fatal(err)
		}
	})
}

// fastSession answers a loop's model calls at once.
type fastSession struct{ agenttypes.Session }

func (fastSession) Generate(context.Context, agenttypes.GenerateRequest) (*agenttypes.GenerateResponse, error) {
	return &agenttypes.GenerateResponse{Text: "ok", Usage: agenttypes.Usage{InputTokens: 1, OutputTokens: 1}}, nil
}

// BenchmarkLoopStep: one model call of a plugin's own loop, from the
// plugin through the broker to the host's Session and back.
func BenchmarkLoopStep(b *testing.B) {
	h, _ := newHost(b, plugins.Config{}, pluginDir(b, "test"))
	reg := agenttypes.NewRegistry()
	if problems := h.Load(context.Background(), reg); len(problems) > 0 {
		b.Fatal(problems)
	}
	typ, err := reg.Type("stepper")
	if err != nil {
		b.Fatal(err)
	}
	// Warm the broker connection.
	if _, err := typ.Loop.Run(context.Background(), fastSession{}, "1"); err != nil {
		b.Fatal(err)
	}
	n := max(b.N, 2000)
	b.ResetTimer()
	start := time.Now()
	out, err := typ.Loop.Run(context.Background(), fastSession{}, strconv.Itoa(n))
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil || out != strconv.Itoa(n) {
		b.Fatal(out, err)
	}
	b.ReportMetric(float64(elapsed)/float64(n)/float64(time.Microsecond), "µs/step")
	b.ReportMetric(float64(elapsed)/float64(n), "ns/op")
}
