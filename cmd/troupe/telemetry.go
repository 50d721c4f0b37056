package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/troupe-dev/troupe/manager"
)

// telemetry is what a command exports of its agents, as the standard
// OpenTelemetry variables ask. With none of them set it is the zero
// value: no providers, so the manager makes no spans and no metrics.
type telemetry struct {
	tracerProvider trace.TracerProvider // nil: no traces
	meterProvider  metric.MeterProvider // nil: no metrics
	// recordContent puts prompts, completions and tool arguments and
	// results on the spans: they may hold secrets, so only on request.
	recordContent bool

	// flushBound is how long shutdown waits for the last exports.
	flushBound time.Duration
	stderr     io.Writer
	stops      []func(context.Context)
	gate       *exportGate
	// closeIdle has, for each HTTP exporter, what closes its idle
	// connections.
	closeIdle []func()
	// destinations say where each signal exported goes.
	destinations []destination
	// sdk takes what the OpenTelemetry SDK logs, to say one line of it.
	sdk *sdkLog
	// warned is set once a warning was said.
	warned bool
}

// newManager makes a command's manager from cfg, with what every
// command's manager shares: the telemetry the OTEL_* variables ask for.
func (a *app) newManager(ctx context.Context, cfg manager.Config) (*manager.Manager, error) {
	tel := a.telemetry(ctx)
	cfg.TracerProvider, cfg.MeterProvider, cfg.RecordContent = tel.tracerProvider, tel.meterProvider, tel.recordContent
	return manager.New(cfg)
}

// telemetry sets up, once for the command, what the OTEL_* variables
// ask for; execute shuts it down when the command ends, however it
// ends.
func (a *app) telemetry(ctx context.Context) *telemetry {
	if a.tel == nil {
		a.tel = newTelemetry(ctx, os.Environ(), a.stderr)
	}
	return a.tel
}

// telemetryFlushBound is how long a command waits at exit for its last
// spans and metrics to be exported: a collector that is slow or gone
// must not hold the command up for longer.
const telemetryFlushBound = 3 * time.Second

// Names of the variables read here; the OTLP exporters read the rest
// (endpoints, headers, timeouts, certificates, compression) themselves,
// some checked here first (checkExporterVars).
const (
	envSDKDisabled      = "OTEL_SDK_DISABLED"
	envTracesExporter   = "OTEL_TRACES_EXPORTER"
	envMetricsExporter  = "OTEL_METRICS_EXPORTER"
	envProtocol         = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envCaptureContent   = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
	protocolHTTP        = "http/protobuf"
	protocolHTTPJSON    = "http/json"
	protocolGRPC        = "grpc"
	signalTraces        = "traces"
	signalMetrics       = "metrics"
	defaultServiceName  = "troupe"
	exporterOTLP        = "otlp"
	exporterNone        = "none"
	supportedExporters  = "otlp or none"
	supportedProtocols  = "grpc or http/protobuf"
	telemetryWarnPrefix = "troupe: warning: telemetry: "
)

// newTelemetry reads the OTEL_* variables of environ (as os.Environ
// gives them) and sets up what they ask for. Nothing in them fails the
// command: a value troupe does not support is warned of on stderr and
// left out, as the OpenTelemetry specification asks of an SDK. With no
// OTEL_* variable set it does nothing at all; with any set, the
// specification's defaults apply (both signals over OTLP, http/protobuf,
// to the default endpoint) to what is not.
func newTelemetry(ctx context.Context, environ []string, stderr io.Writer) *telemetry {
	t := &telemetry{flushBound: telemetryFlushBound, stderr: stderr}
	vars := otelVars(environ)
	if len(vars) == 0 || strings.EqualFold(vars[envSDKDisabled], "true") {
		return t
	}
	t.recordContent = strings.EqualFold(vars[envCaptureContent], "true")
	traces := t.exporterWanted(vars, envTracesExporter, signalTraces)
	metrics := t.exporterWanted(vars, envMetricsExporter, signalMetrics)
	if !traces && !metrics {
		return t
	}
	// In place of the SDK's logger and error handler, which print to
	// stderr what they are given: a variable's value among it.
	t.sdk = &sdkLog{}
	otel.SetLogger(logr.New(t.sdk))
	otel.SetErrorHandler(t.sdk)
	t.checkExporterVars(vars, traces, metrics)
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(defaultServiceName), semconv.ServiceVersion(version())),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, over the defaults
	)
	if err != nil {
		// What could be read of the resource is kept.
		t.warnf("OTEL_RESOURCE_ATTRIBUTES: %s (write it as key=value pairs, comma-separated; the rest is used)", errorText(err))
	}
	t.gate = newExportGate()
	tracesProtocol, metricsProtocol := t.protocols(vars, traces, metrics)
	if traces {
		t.startTraces(ctx, vars, res, tracesProtocol)
	}
	if metrics {
		t.startMetrics(ctx, vars, res, metricsProtocol)
	}
	if t.warned {
		// What the SDK logged while troupe read the same variables
		// would only say again, more vaguely, what was said.
		t.sdk.settle()
	}
	t.sayFromSDK()
	return t
}

// otelVars returns environ's OTEL_* variables that have a value: the
// specification treats an empty one as unset.
func otelVars(environ []string) map[string]string {
	var vars map[string]string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "OTEL_") {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		if vars == nil {
			vars = map[string]string{}
		}
		vars[k] = v
	}
	return vars
}

// exporterWanted reports whether the signal's exporter variable (a
// comma-separated list, otlp when unset) asks for OTLP.
func (t *telemetry) exporterWanted(vars map[string]string, name, signal string) bool {
	v, set := vars[name]
	if !set {
		return true
	}
	otlp := false
	for _, e := range strings.Split(v, ",") {
		switch e = strings.ToLower(strings.TrimSpace(e)); e {
		case exporterOTLP:
			otlp = true
		case exporterNone, "":
		default:
			t.warnf("%s: %s is not an exporter troupe has; set %s to %s (no %s are exported through it)", name, quoted(e), name, supportedExporters, signal)
		}
	}
	return otlp
}

// protocols returns the OTLP protocol of each signal wanted: its own
// variable, else the general one, else http/protobuf as the
// specification has it. A value troupe does not support is warned of
// once, naming each signal it was read for.
func (t *telemetry) protocols(vars map[string]string, traces, metrics bool) (tracesProtocol, metricsProtocol string) {
	var badNames []string
	badFor := map[string][]string{} // variable → the signals it fails
	protocol := func(signal, what string) string {
		name := "OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"
		p, set := vars[name]
		if !set {
			name = envProtocol
			p, set = vars[name]
		}
		switch {
		case !set:
			return protocolHTTP
		case p == protocolHTTP, p == protocolGRPC:
			return p
		case p == protocolHTTPJSON && signal == "TRACES":
			return p // the trace exporter speaks it, reading the variable itself
		}
		if badFor[name] == nil {
			badNames = append(badNames, name)
		}
		badFor[name] = append(badFor[name], what)
		return protocolHTTP
	}
	if traces {
		tracesProtocol = protocol("TRACES", signalTraces)
	}
	if metrics {
		metricsProtocol = protocol("METRICS", signalMetrics)
	}
	for _, name := range badNames {
		t.warnf("%s=%s is not supported for %s; set it to %s (sending %s meanwhile)",
			name, quoted(vars[name]), strings.Join(badFor[name], " and "), supportedProtocols, protocolHTTP)
	}
	return tracesProtocol, metricsProtocol
}

// startTraces sets up the tracer provider, batching spans to an OTLP
// exporter. A failed export is not retried: at a command's exit there
// is no time to back off, and the warning says what was lost.
func (t *telemetry) startTraces(ctx context.Context, vars map[string]string, res *resource.Resource, protocol string) {
	var exp sdktrace.SpanExporter
	var err error
	if protocol == protocolGRPC {
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}))
	} else {
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}),
			otlptracehttp.WithHTTPClient(t.otlpHTTPClient(vars, signalTraces)))
	}
	if err != nil {
		t.warnf("no traces are exported: %s", errorText(err))
		return
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(spanExporter{exp, t.gate}))
	t.tracerProvider = tp
	t.stops = append(t.stops, func(ctx context.Context) { t.gate.fail(signalTraces, tp.Shutdown(ctx)) })
	t.destinations = append(t.destinations, newDestination(vars, signalTraces, protocol))
}

// startMetrics sets up the meter provider, read periodically (and at
// exit) into an OTLP exporter.
func (t *telemetry) startMetrics(ctx context.Context, vars map[string]string, res *resource.Resource, protocol string) {
	var exp sdkmetric.Exporter
	var err error
	if protocol == protocolGRPC {
		exp, err = otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: false}))
	} else {
		exp, err = otlpmetrichttp.New(ctx, otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}),
			otlpmetrichttp.WithHTTPClient(t.otlpHTTPClient(vars, signalMetrics)))
	}
	if err != nil {
		t.warnf("no metrics are exported: %s", errorText(err))
		return
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metricExporter{exp, t.gate})))
	t.meterProvider = mp
	t.stops = append(t.stops, func(ctx context.Context) { t.gate.fail(signalMetrics, mp.Shutdown(ctx)) })
	t.destinations = append(t.destinations, newDestination(vars, signalMetrics, protocol))
}

// shutdown exports what is left, waiting at most flushBound, and then
// gives up on what is still on its way. If anything could not be
// exported, during the run or now, it says so in one line on stderr.
func (t *telemetry) shutdown() {
	if t.gate == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.flushBound)
	defer cancel()
	var wg sync.WaitGroup
	for _, stop := range t.stops {
		wg.Go(func() { stop(ctx) })
	}
	wg.Wait()
	signal, err := t.gate.close()
	for _, closeIdle := range t.closeIdle {
		closeIdle()
	}
	t.sayFromSDK()
	if err != nil {
		text := errorText(err)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			text = fmt.Sprintf("the collector did not take it within %s", t.flushBound)
		}
		t.warnf("not all spans and metrics were exported: %s (%s)", text, t.whereTo(signal))
	}
}

// otlpHTTPClient is the client of signal's HTTP exporter. The
// exporter's own would share a transport with every other exporter of
// the process, whose idle connections outlive them all; this one's are
// closed at shutdown. Given a client, the exporter no longer reads the
// timeout and certificate variables, so they are read here as it would.
func (t *telemetry) otlpHTTPClient(vars map[string]string, signal string) *http.Client {
	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       otlpTLS(vars, signal),
	}
	t.closeIdle = append(t.closeIdle, transport.CloseIdleConnections)
	return &http.Client{Transport: transport, Timeout: otlpTimeout(vars, signal)}
}

// otlpTimeout is how long an export of signal may take: its own
// variable's, else the general one's, else 10 seconds.
func otlpTimeout(vars map[string]string, signal string) time.Duration {
	timeout := otlpDefaultTimeout
	for _, prefix := range otlpPrefixes(signal) {
		if ms, err := strconv.Atoi(vars[prefix+"TIMEOUT"]); err == nil {
			timeout = time.Duration(ms) * time.Millisecond
		}
	}
	return timeout
}

// otlpTLS is the TLS configuration of signal's exporter: the
// collector's certificate to trust and the client's to show, as the
// certificate variables have them, a signal's own over the general
// ones; nil when none is set. A file that cannot be read is left out,
// as the exporters leave it out (logging that they did, which is said).
func otlpTLS(vars map[string]string, signal string) *tls.Config {
	var cfg tls.Config
	for _, prefix := range otlpPrefixes(signal) {
		if file, set := vars[prefix+"CERTIFICATE"]; set {
			certs, err := readCredential(file)
			if pool := x509.NewCertPool(); err == nil && pool.AppendCertsFromPEM(certs) {
				cfg.RootCAs = pool
			}
		}
		certFile, certSet := vars[prefix+"CLIENT_CERTIFICATE"]
		keyFile, keySet := vars[prefix+"CLIENT_KEY"]
		if certSet && keySet {
			cert, certErr := readCredential(certFile)
			key, keyErr := readCredential(keyFile)
			if pair, err := tls.X509KeyPair(cert, key); certErr == nil && keyErr == nil && err == nil {
				cfg.Certificates = []tls.Certificate{pair}
			}
		}
	}
	if cfg.RootCAs == nil && cfg.Certificates == nil {
		return nil
	}
	return &cfg
}

// otlpPrefixes are the prefixes of the OTLP exporter variables of
// signal, the general ones first, as a signal's own win.
func otlpPrefixes(signal string) []string {
	return []string{"OTEL_EXPORTER_OTLP_", "OTEL_EXPORTER_OTLP_" + strings.ToUpper(signal) + "_"}
}

// readCredential reads a certificate or key file, refusing one larger
// than any such file is.
func readCredential(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, credentialMax+1))
	if err == nil && len(b) > credentialMax {
		err = fmt.Errorf("larger than %d bytes", credentialMax)
	}
	return b, err
}

// Of the OTLP exporter variables read here: the specification's default
// timeout, and the most read of a certificate or key file (a chain of
// a few certificates is a few kilobytes).
const (
	otlpDefaultTimeout = 10 * time.Second
	credentialMax      = 1 << 20
)

// destination is where a signal's exports go: the endpoint variable
// that names it, or the specification's default.
type destination struct {
	signal      string // signalTraces or signalMetrics
	endpointVar string // "" for the default endpoint
	defaultPort string // the default endpoint's, by protocol
}

// newDestination is where the exporter of signal, over protocol, sends
// as vars have it: to the signal's own endpoint variable, else the
// general one, else the default. A variable that is not a URL is left
// out, as the exporters leave it out.
func newDestination(vars map[string]string, signal, protocol string) destination {
	d := destination{signal: signal, defaultPort: "4318"}
	if protocol == protocolGRPC {
		d.defaultPort = "4317"
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_" + strings.ToUpper(signal) + "_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if v, set := vars[name]; set && endpointProblem(v) == "" {
			d.endpointVar = name
			break
		}
	}
	return d
}

// whereTo says where the exports of the signal that failed went, and
// where the other signal's go when that is elsewhere: an endpoint
// variable set for traces alone leaves the metrics at the default.
func (t *telemetry) whereTo(failed string) string {
	var at destination
	for _, d := range t.destinations {
		if d.signal == failed {
			at = d
		}
	}
	says := "is the collector at " + at.endpointVar + " running?"
	if at.endpointVar == "" {
		says = at.goesTo() + ": is a collector running there?"
	}
	for _, d := range t.destinations {
		if d.signal != failed && (d.endpointVar != at.endpointVar || d.endpointVar == "" && d.defaultPort != at.defaultPort) {
			says += " " + d.goesTo()
		}
	}
	return says
}

func (d destination) goesTo() string {
	if d.endpointVar != "" {
		return d.signal + " go to " + d.endpointVar
	}
	return fmt.Sprintf("%s go to the default endpoint, localhost:%s, as neither OTEL_EXPORTER_OTLP_ENDPOINT nor OTEL_EXPORTER_OTLP_%s_ENDPOINT is set",
		d.signal, d.defaultPort, strings.ToUpper(d.signal))
}

// checkExporterVars warns of each OTLP exporter variable, general or of
// a signal wanted, that the exporters cannot read: they would log its
// value (a header's credentials and all) and go on without it. The
// warning names the variable and never shows its value.
func (t *telemetry) checkExporterVars(vars map[string]string, traces, metrics bool) {
	prefixes := []string{"OTEL_EXPORTER_OTLP_"}
	if traces {
		prefixes = append(prefixes, "OTEL_EXPORTER_OTLP_TRACES_")
	}
	if metrics {
		prefixes = append(prefixes, "OTEL_EXPORTER_OTLP_METRICS_")
	}
	for _, prefix := range prefixes {
		for _, c := range exporterVarChecks {
			v, set := vars[prefix+c.suffix]
			if !set {
				continue
			}
			if problem := c.problem(v); problem != "" {
				t.warnf("%s%s: %s (its value is not shown); %s; the exporters go on without it", prefix, c.suffix, problem, c.advice)
			}
		}
	}
}

// exporterVarChecks are the OTLP exporter variables whose value the
// exporters log when they cannot read it: what is wrong with a value
// ("" for nothing), and how to write it.
var exporterVarChecks = []struct {
	suffix  string
	problem func(string) string
	advice  string
}{
	{"ENDPOINT", endpointProblem, "write it as http://host:port"},
	{"HEADERS", headersProblem, "write it as name=value pairs, comma-separated, %-escaping what needs it"},
	{"TIMEOUT", timeoutProblem, "write 10 s as 10000"},
}

func endpointProblem(v string) string {
	if _, err := url.Parse(v); err != nil {
		return "not a URL"
	}
	return ""
}

func timeoutProblem(v string) string {
	if _, err := strconv.Atoi(v); err != nil {
		return "not a whole number of milliseconds"
	}
	return ""
}

// headersProblem reads v as the exporters do: name=value pairs,
// comma-separated, each name a header's and each value %-escaped.
func headersProblem(v string) string {
	pairs := strings.Split(v, ",")
	for i, pair := range pairs {
		name, value, ok := strings.Cut(pair, "=")
		switch {
		case !ok:
			return fmt.Sprintf("pair %d of %d has no \"=\"", i+1, len(pairs))
		case !isHeaderName(strings.TrimSpace(name)):
			return fmt.Sprintf("the name of pair %d of %d is not a header's", i+1, len(pairs))
		}
		if _, err := url.PathUnescape(value); err != nil {
			return fmt.Sprintf("the value of pair %d of %d has a %% that is not an escape such as %%20", i+1, len(pairs))
		}
	}
	return ""
}

// isHeaderName reports whether s is an HTTP header's name: a token of
// RFC 9110.
func isHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		isLetterOrDigit := r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r))
		if !isLetterOrDigit && !strings.ContainsRune("!#$%&'*+-.^_`|~", r) {
			return false
		}
	}
	return true
}

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
