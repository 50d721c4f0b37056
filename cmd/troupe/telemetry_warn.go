package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/go-logr/logr"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// sayFromSDK says what the SDK logged, in one line, unless that was
// said already.
func (t *telemetry) sayFromSDK() {
	if what, ok := t.sdk.take(); ok {
		t.warnf("the OpenTelemetry SDK reported %s (the details are left out: they can hold a variable's value, credentials and all; check the OTEL_* variables)", what)
	}
}

// sdkLog takes what the OpenTelemetry SDK logs and the errors it has
// no one to return to, in place of its default logger and handler,
// which print them to stderr as they come: a variable's value and all,
// once for each exporter. It keeps the first, without its values, to
// be said once.
type sdkLog struct {
	mu      sync.Mutex
	first   string // what the first said, for a warning; "" for none
	settled bool   // it was said, or troupe's own warnings said it
}

func (l *sdkLog) keep(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.first == "" {
		l.first = what
	}
}

// take returns what to say of the SDK's logs, the first time there is
// something to say.
func (l *sdkLog) take() (string, bool) {
	if l == nil {
		return "", false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.first == "" || l.settled {
		return "", false
	}
	l.settled = true
	return l.first, true
}

// settle leaves the SDK's logs unsaid: troupe's own warnings said it.
func (l *sdkLog) settle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.settled = true
}

// Handle takes an error the SDK has no one to return to: its text may
// quote a value, so it is not kept.
func (l *sdkLog) Handle(error) { l.keep("an error") }

// The logr.LogSink the SDK logs to. Only its errors are taken: its
// warnings and information are about what troupe sets itself.
func (l *sdkLog) Init(logr.RuntimeInfo)    {}
func (l *sdkLog) Enabled(int) bool         { return false }
func (l *sdkLog) Info(int, string, ...any) {}
func (l *sdkLog) Error(_ error, msg string, _ ...any) {
	l.keep(quoted(msg)) // the message alone: the error and values quote what it could not read
}
func (l *sdkLog) WithValues(...any) logr.LogSink { return l }
func (l *sdkLog) WithName(string) logr.LogSink   { return l }

// Bounds of what a warning quotes, so that it stays one short line: an
// error's text (an HTTP exporter's holds the collector's whole reply)
// and a variable's value.
const (
	warnErrorMax = 300
	warnValueMax = 60
)

// warnf says one line on stderr: the line breaks, tabs and other
// control characters that its arguments hold (a collector's reply, say)
// become spaces.
func (t *telemetry) warnf(format string, args ...any) {
	t.warned = true
	fmt.Fprintf(t.stderr, "%s%s\n", telemetryWarnPrefix, oneLine(fmt.Sprintf(format, args...)))
}

// errorText is err's text for a warning: on one line, and cut.
func errorText(err error) string {
	return cut(oneLine(err.Error()), warnErrorMax)
}

// quoted is a variable's value for a warning: cut, and quoted, so that
// what it holds shows as it is and cannot pass for a line of its own.
func quoted(v string) string {
	return strconv.Quote(cut(v, warnValueMax))
}

// oneLine is s with each run of white space and control or format
// characters (a terminal's escapes among them) made one space.
func oneLine(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	gap := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			gap = true
			continue
		}
		if gap && b.Len() > 0 {
			b.WriteByte(' ')
		}
		gap = false
		b.WriteRune(r)
	}
	return b.String()
}

// cut is s cut to at most limit bytes, at a character's start, with "…"
// when it was.
func cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	i := limit
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// exportGate is what the exporters share: it keeps the first failure
// (the SDK would log every one), and at exit aborts the exports still on
// their way, so none outlives the command's bound.
type exportGate struct {
	life  context.Context
	abort context.CancelFunc

	mu          sync.Mutex
	closed      bool
	inflight    sync.WaitGroup
	first       error
	firstSignal string // whose export failed first
}

func newExportGate() *exportGate {
	life, abort := context.WithCancel(context.Background())
	return &exportGate{life: life, abort: abort}
}

// do runs an export of signal under the gate: with ctx cut short when
// the gate closes, and its error kept rather than returned. After close
// it does nothing.
func (g *exportGate) do(ctx context.Context, signal string, export func(context.Context) error) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.inflight.Add(1)
	g.mu.Unlock()
	defer g.inflight.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(g.life, cancel)
	defer stop()
	g.fail(signal, export(ctx))
}

// fail keeps err, of signal's exporter, if it is the first.
func (g *exportGate) fail(signal string, err error) {
	if err == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.first == nil {
		g.first, g.firstSignal = err, signal
	}
}

// close aborts the exports on their way, waits for them to return, and
// returns the first failure and the signal whose it was.
func (g *exportGate) close() (string, error) {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.abort()
	g.inflight.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.firstSignal, g.first
}

// spanExporter hands a span exporter's failures to the gate.
type spanExporter struct {
	sdktrace.SpanExporter
	gate *exportGate
}

func (e spanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.gate.do(ctx, signalTraces, func(ctx context.Context) error { return e.SpanExporter.ExportSpans(ctx, spans) })
	return nil
}

func (e spanExporter) Shutdown(ctx context.Context) error {
	e.gate.fail(signalTraces, e.SpanExporter.Shutdown(ctx))
	return nil
}

// metricExporter hands a metric exporter's failures to the gate.
type metricExporter struct {
	sdkmetric.Exporter
	gate *exportGate
}

// Export sends rm, unless it holds no metric: a command that ran no
// agent (types list, with a plugin host that counts restarts) sends
// nothing.
func (e metricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	for _, sm := range rm.ScopeMetrics {
		if len(sm.Metrics) > 0 {
			e.gate.do(ctx, signalMetrics, func(ctx context.Context) error { return e.Exporter.Export(ctx, rm) })
			return nil
		}
	}
	return nil
}

func (e metricExporter) Shutdown(ctx context.Context) error {
	e.gate.fail(signalMetrics, e.Exporter.Shutdown(ctx))
	return nil
}
