package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
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
