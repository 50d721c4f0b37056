package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// received is one span or metric a loopback collector was sent: its
// name, the protocol it came by, its resource's attributes and, for a
// span, its IDs and attributes.
type received struct {
	name, protocol    string
	resource          map[string]string
	trace, id, parent string
	attrs             map[string]string
}

// otlpReceiver is a collector on loopback: it decodes the OTLP export
// requests sent to it over HTTP (/v1/traces, /v1/metrics, protobuf) and
// over gRPC, and keeps what they carried.
type otlpReceiver struct {
	mu       sync.Mutex
	requests int
	spans    []received
	metrics  []received

	httpURL  string // http://127.0.0.1:PORT
	grpcAddr string // 127.0.0.1:PORT
	http     http.Handler
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		var in coltracepb.ExportTraceServiceRequest
		if !readProto(w, req, &in) {
			return
		}
		r.addSpans(&in, "http")
		writeProto(w, &coltracepb.ExportTraceServiceResponse{})
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		var in colmetricpb.ExportMetricsServiceRequest
		if !readProto(w, req, &in) {
			return
		}
		r.addMetrics(&in, "http")
		writeProto(w, &colmetricpb.ExportMetricsServiceResponse{})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	r.httpURL, r.http = srv.URL, mux

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, grpcTraces{r: r})
	colmetricpb.RegisterMetricsServiceServer(gs, grpcMetrics{r: r})
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = gs.Serve(ln)
	}()
	t.Cleanup(func() {
		gs.Stop()
		<-served
	})
	r.grpcAddr = ln.Addr().String()
	return r
}

// serveTLS serves the receiver's HTTP side over TLS too, asking for a
// client's certificate signed by clientCA if it is not nil. It returns
// the server's URL and a file holding its certificate.
func (r *otlpReceiver) serveTLS(t *testing.T, clientCA *x509.Certificate) (url, certFile string) {
	t.Helper()
	srv := httptest.NewUnstartedServer(r.http)
	if clientCA != nil {
		pool := x509.NewCertPool()
		pool.AddCert(clientCA)
		srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	certFile = filepath.Join(t.TempDir(), "collector.pem")
	writePEM(t, certFile, "CERTIFICATE", srv.Certificate().Raw)
	return srv.URL, certFile
}

// clientCertificate makes a client's certificate and its key, in files,
// the certificate its own issuer.
func clientCertificate(t *testing.T) (cert *x509.Certificate, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "troupe test client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err = x509.ParseCertificate(der)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	return cert, certFile, keyFile
}

func writePEM(t *testing.T, file, kind string, der []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600))
}

func readProto(w http.ResponseWriter, req *http.Request, m proto.Message) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, 4<<20))
	if err == nil {
		err = proto.Unmarshal(body, m)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeProto(w http.ResponseWriter, m proto.Message) {
	b, _ := proto.Marshal(m)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.GetKey()] = stringValue(kv.GetValue())
	}
	return out
}

func stringValue(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	}
	return v.String()
}

func (r *otlpReceiver) addSpans(in *coltracepb.ExportTraceServiceRequest, protocol string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	for _, rs := range in.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, received{
					name: s.GetName(), protocol: protocol, resource: attrs(rs.GetResource().GetAttributes()),
					trace: hex.EncodeToString(s.GetTraceId()), id: hex.EncodeToString(s.GetSpanId()),
					parent: hex.EncodeToString(s.GetParentSpanId()), attrs: attrs(s.GetAttributes()),
				})
			}
		}
	}
}

func (r *otlpReceiver) addMetrics(in *colmetricpb.ExportMetricsServiceRequest, protocol string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	for _, rm := range in.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				r.metrics = append(r.metrics, received{name: m.GetName(), protocol: protocol, resource: attrs(rm.GetResource().GetAttributes())})
			}
		}
	}
}

// all returns the spans and metrics received so far.
func (r *otlpReceiver) all() []received {
	spans, metrics := r.got()
	return append(spans, metrics...)
}

// got returns what was received so far.
func (r *otlpReceiver) got() (spans, metrics []received) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.spans...), append([]received(nil), r.metrics...)
}

type grpcTraces struct {
	coltracepb.UnimplementedTraceServiceServer
	r *otlpReceiver
}

func (g grpcTraces) Export(_ context.Context, in *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.r.addSpans(in, "grpc")
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

type grpcMetrics struct {
	colmetricpb.UnimplementedMetricsServiceServer
	r *otlpReceiver
}

func (g grpcMetrics) Export(_ context.Context, in *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	g.r.addMetrics(in, "grpc")
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

// otelEnv sets the OTEL_* variables to env and every other one the
// process has to empty, which the specification and the exporters read
// as unset.
func otelEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") {
			t.Setenv(k, "")
		}
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
}

// record makes one span and one metric point through those of tel's
// providers that are set, as the manager would.
func record(t *testing.T, tel *telemetry) {
	t.Helper()
	if tel.tracerProvider != nil {
		_, span := tel.tracerProvider.Tracer("test").Start(context.Background(), "invoke_agent explore")
		span.End()
	}
	if tel.meterProvider != nil {
		tokens, err := tel.meterProvider.Meter("test").Int64Counter("test.tokens")
		require.NoError(t, err)
		tokens.Add(context.Background(), 7)
	}
}

// emit records one span and metric and shuts tel down, as a command
// does at exit.
func emit(t *testing.T, tel *telemetry) {
	t.Helper()
	record(t, tel)
	tel.shutdown()
}

func names(rs []received) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.name+" over "+r.protocol)
	}
	return out
}

// TestTelemetryExportsOverEachProtocol: the spans and metrics made
// through the providers reach a real collector, over the protocol the
// variables name (the signal's own first), at the endpoint they name.
func TestTelemetryExportsOverEachProtocol(t *testing.T) {
	for _, tt := range []struct {
		name                   string
		env                    func(r *otlpReceiver) map[string]string
		spansOver, metricsOver string
	}{
		{"no protocol: http/protobuf", func(r *otlpReceiver) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL}
		}, "http", "http"},
		{"http/protobuf", func(r *otlpReceiver) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL, envProtocol: "http/protobuf"}
		}, "http", "http"},
		{"grpc", func(r *otlpReceiver) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + r.grpcAddr, envProtocol: "grpc"}
		}, "grpc", "grpc"},
		{"traces by their own variables", func(r *otlpReceiver) map[string]string {
			return map[string]string{
				envProtocol: "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + r.grpcAddr,
				"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": r.httpURL + "/v1/traces",
			}
		}, "http", "grpc"},
		{"metrics by their own variables", func(r *otlpReceiver) map[string]string {
			return map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT":         r.httpURL,
				"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://" + r.grpcAddr,
			}
		}, "http", "grpc"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newOTLPReceiver(t)
			otelEnv(t, tt.env(r))
			var stderr bytes.Buffer
			tel := newTelemetry(context.Background(), os.Environ(), &stderr)
			require.NotNil(t, tel.tracerProvider)
			require.NotNil(t, tel.meterProvider)
			emit(t, tel)
			spans, metrics := r.got()
			assert.Equal(t, []string{"invoke_agent explore over " + tt.spansOver}, names(spans))
			assert.Equal(t, []string{"test.tokens over " + tt.metricsOver}, names(metrics))
			for _, got := range append(spans, metrics...) {
				assert.Equal(t, "troupe", got.resource["service.name"])
				assert.Equal(t, version(), got.resource["service.version"])
			}
			assert.Empty(t, stderr.String())
		})
	}
}

// TestTelemetryResourceFromTheEnvironment: OTEL_SERVICE_NAME names the
// service in place of troupe, and OTEL_RESOURCE_ATTRIBUTES adds to it.
func TestTelemetryResourceFromTheEnvironment(t *testing.T) {
	r := newOTLPReceiver(t)
	otelEnv(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL,
		"OTEL_SERVICE_NAME":           "reviewer",
		"OTEL_RESOURCE_ATTRIBUTES":    "deployment.environment.name=ci,team=tools",
	})
	var stderr bytes.Buffer
	emit(t, newTelemetry(context.Background(), os.Environ(), &stderr))
	spans, _ := r.got()
	require.Len(t, spans, 1)
	assert.Equal(t, "reviewer", spans[0].resource["service.name"])
	assert.Equal(t, "ci", spans[0].resource["deployment.environment.name"])
	assert.Equal(t, "tools", spans[0].resource["team"])
	assert.Equal(t, "opentelemetry", spans[0].resource["telemetry.sdk.name"])
	assert.Empty(t, stderr.String())

	// Attributes that do not parse are said, and those that do are kept.
	r = newOTLPReceiver(t)
	otelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL, "OTEL_RESOURCE_ATTRIBUTES": "team=tools,oops", envMetricsExporter: "none"})
	stderr.Reset()
	emit(t, newTelemetry(context.Background(), os.Environ(), &stderr))
	spans, _ = r.got()
	require.Len(t, spans, 1)
	assert.Equal(t, "tools", spans[0].resource["team"])
	assert.Equal(t, "troupe", spans[0].resource["service.name"])
	assert.Contains(t, stderr.String(), "troupe: warning: telemetry: OTEL_RESOURCE_ATTRIBUTES: ")
	assert.Contains(t, stderr.String(), "oops")
	assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), stderr.String())
}

// TestTelemetryOff: with no OTEL_* variable set, with the SDK disabled
// and with both exporters none, there are no providers, so nothing can
// be made or sent; the collector the endpoint names gets nothing.
func TestTelemetryOff(t *testing.T) {
	r := newOTLPReceiver(t)
	for _, tt := range []struct {
		name string
		env  map[string]string
	}{
		{"unset", nil},
		{"empty", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "", envTracesExporter: " "}},
		{"SDK disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL, envSDKDisabled: "TRUE", envCaptureContent: "true"}},
		{"exporters none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL, envTracesExporter: "none", envMetricsExporter: "none"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			otelEnv(t, tt.env)
			var stderr bytes.Buffer
			tel := newTelemetry(context.Background(), os.Environ(), &stderr)
			assert.Nil(t, tel.tracerProvider)
			assert.Nil(t, tel.meterProvider)
			assert.False(t, tel.recordContent)
			tel.shutdown()
			assert.Empty(t, stderr.String())
		})
	}
	spans, metrics := r.got()
	assert.Empty(t, spans)
	assert.Empty(t, metrics)
}

// TestTelemetryWithNothingMadeSendsNothing: set up, but with no span
// made and no metric recorded (a meter and an instrument made, as a
// plugin host makes its restart counter), shutdown sends the collector
// no request at all.
func TestTelemetryWithNothingMadeSendsNothing(t *testing.T) {
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			r := newOTLPReceiver(t)
			endpoint := r.httpURL
			if protocol == "grpc" {
				endpoint = "http://" + r.grpcAddr
			}
			otelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, envProtocol: protocol})
			var stderr bytes.Buffer
			tel := newTelemetry(context.Background(), os.Environ(), &stderr)
			_, err := tel.meterProvider.Meter("test").Int64Counter("test.restarts")
			require.NoError(t, err)
			_ = tel.tracerProvider.Tracer("test")
			tel.shutdown()
			r.mu.Lock()
			defer r.mu.Unlock()
			assert.Zero(t, r.requests)
			assert.Empty(t, stderr.String())
		})
	}
}

// TestTelemetryOneSignalOff: each exporter variable turns its own
// signal off, and only it.
func TestTelemetryOneSignalOff(t *testing.T) {
	r := newOTLPReceiver(t)
	otelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL, envTracesExporter: "none"})
	tel := newTelemetry(context.Background(), os.Environ(), io.Discard)
	assert.Nil(t, tel.tracerProvider)
	require.NotNil(t, tel.meterProvider)
	tel.shutdown()

	otelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL, envMetricsExporter: "none"})
	tel = newTelemetry(context.Background(), os.Environ(), io.Discard)
	require.NotNil(t, tel.tracerProvider)
	assert.Nil(t, tel.meterProvider)
	tel.shutdown()
}

// TestTelemetryUnsupportedValuesWarn: an exporter or protocol troupe
// does not have is said on stderr, with what it does have, and left
// out: the signal is not exported, or goes by http/protobuf.
func TestTelemetryUnsupportedValuesWarn(t *testing.T) {
	r := newOTLPReceiver(t)
	otelEnv(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL,
		envTracesExporter:             "zipkin",
		envProtocol:                   "http/thrift",
	})
	var stderr bytes.Buffer
	tel := newTelemetry(context.Background(), os.Environ(), &stderr)
	assert.Nil(t, tel.tracerProvider, "zipkin is not exported to")
	require.NotNil(t, tel.meterProvider)
	out := stderr.String()
	assert.Contains(t, out, `troupe: warning: telemetry: OTEL_TRACES_EXPORTER: "zipkin" is not an exporter troupe has; set OTEL_TRACES_EXPORTER to otlp or none`)
	assert.Contains(t, out, `troupe: warning: telemetry: OTEL_EXPORTER_OTLP_PROTOCOL="http/thrift" is not supported for metrics; set it to grpc or http/protobuf`)
	assert.Equal(t, 2, strings.Count(out, "\n"), out)
	stderr.Reset()
	emit(t, tel)
	_, metrics := r.got()
	assert.Equal(t, []string{"test.tokens over http"}, names(metrics))
	assert.Empty(t, stderr.String())

	// A list may name otlp beside one troupe does not have.
	otelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL, envTracesExporter: "console, otlp", envMetricsExporter: "none"})
	stderr.Reset()
	tel = newTelemetry(context.Background(), os.Environ(), &stderr)
	assert.NotNil(t, tel.tracerProvider)
	assert.Contains(t, stderr.String(), `"console" is not an exporter troupe has`)
	tel.shutdown()
}

// TestTelemetryABadProtocolWarnsOnce: the general protocol variable,
// read for both signals, is warned of in one line naming both; one
// that only the metrics lack (http/json) names them alone.
func TestTelemetryABadProtocolWarnsOnce(t *testing.T) {
	r := newOTLPReceiver(t)
	for _, tt := range []struct{ protocol, want string }{
		{"http/thrift", `OTEL_EXPORTER_OTLP_PROTOCOL="http/thrift" is not supported for traces and metrics; set it to grpc or http/protobuf (sending http/protobuf meanwhile)`},
		{"http/json", `OTEL_EXPORTER_OTLP_PROTOCOL="http/json" is not supported for metrics; set it to grpc or http/protobuf (sending http/protobuf meanwhile)`},
	} {
		t.Run(tt.protocol, func(t *testing.T) {
			otelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL, envProtocol: tt.protocol})
			var stderr bytes.Buffer
			tel := newTelemetry(context.Background(), os.Environ(), &stderr)
			require.NotNil(t, tel.tracerProvider)
			require.NotNil(t, tel.meterProvider)
			tel.shutdown()
			assert.Equal(t, telemetryWarnPrefix+tt.want+"\n", stderr.String())
		})
	}
}

// TestTelemetryExporterVariablesAreCheckedAsTheExportersReadThem: each
// way an OTLP exporter variable can fail the exporters is said, naming
// the variable and where in it, never its value; a general one is said
// once, a signal's only when that signal is exported.
func TestTelemetryExporterVariablesAreCheckedAsTheExportersReadThem(t *testing.T) {
	r := newOTLPReceiver(t)
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string // "" for no warning
	}{
		{"headers", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=b, x-key = c%20d"}, ""},
		{"no =", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=b,SECRET"}, `OTEL_EXPORTER_OTLP_HEADERS: pair 2 of 2 has no "="`},
		{"a trailing comma", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_HEADERS": "a=SECRET,"}, `OTEL_EXPORTER_OTLP_METRICS_HEADERS: pair 2 of 2 has no "="`},
		{"not a header's name", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "Bearer SECRET=x"}, "OTEL_EXPORTER_OTLP_TRACES_HEADERS: the name of pair 1 of 1 is not a header's"},
		{"a bad escape", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=SECRET%g0"}, "OTEL_EXPORTER_OTLP_HEADERS: the value of pair 1 of 1 has a % that is not an escape such as %20"},
		{"a timeout", map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "2500"}, ""},
		{"a timeout in seconds", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT": "2.5SECRET"}, "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT: not a whole number of milliseconds"},
		{"not a URL", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://SECRET@[::1"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: not a URL"},
		{"a signal not exported", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "SECRET", envTracesExporter: "none"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL}
			for k, v := range tt.env {
				env[k] = v
			}
			otelEnv(t, env)
			var stderr bytes.Buffer
			tel := newTelemetry(context.Background(), os.Environ(), &stderr)
			tel.shutdown()
			out := stderr.String()
			assert.NotContains(t, out, "SECRET")
			if tt.want == "" {
				assert.Empty(t, out)
				return
			}
			assert.Equal(t, 1, strings.Count(out, "\n"), out)
			assert.True(t, strings.HasPrefix(out, telemetryWarnPrefix+tt.want+" (its value is not shown); "), out)
		})
	}
}

// TestTelemetrySaysTheSDKsLogsOnceWithoutValues: what the SDK logs of a
// variable troupe does not check itself is said in one line, its
// message alone, however often the SDK logged it.
func TestTelemetrySaysTheSDKsLogsOnceWithoutValues(t *testing.T) {
	r := newOTLPReceiver(t)
	otelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL, "OTEL_METRIC_EXPORT_INTERVAL": "5sSECRET"})
	var stderr bytes.Buffer
	tel := newTelemetry(context.Background(), os.Environ(), &stderr)
	emit(t, tel)
	out := stderr.String()
	assert.Equal(t, telemetryWarnPrefix+`the OpenTelemetry SDK reported "parse duration" (the details are left out: they can hold a variable's value, credentials and all; check the OTEL_* variables)`+"\n", out)
	_, metrics := r.got()
	assert.NotEmpty(t, metrics)
}

// TestTelemetryContentCaptureIsOptIn: prompts and completions go on the
// spans only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT is
// true.
func TestTelemetryContentCaptureIsOptIn(t *testing.T) {
	for value, want := range map[string]bool{"": false, "false": false, "yes": false, "true": true, "True": true} {
		t.Run(value, func(t *testing.T) {
			otelEnv(t, map[string]string{envTracesExporter: "none", envMetricsExporter: "none", envCaptureContent: value})
			tel := newTelemetry(context.Background(), os.Environ(), io.Discard)
			assert.Equal(t, want, tel.recordContent)
		})
	}
}

// TestTelemetryRefusedCollectorWarnsOnce: with nothing listening at the
// endpoint, over either protocol, shutdown returns and one line on
// stderr says what was lost.
func TestTelemetryRefusedCollectorWarnsOnce(t *testing.T) {
	dead := closedPort(t)
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			otelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + dead, envProtocol: protocol})
			var stderr bytes.Buffer
			tel := newTelemetry(context.Background(), os.Environ(), &stderr)
			// Bound far beyond any test's patience: a refused connection
			// must end the flush, not the bound.
			tel.flushBound = time.Hour
			for range 3 {
				record(t, tel)
			}
			tel.shutdown()
			out := stderr.String()
			assert.Equal(t, 1, strings.Count(out, "\n"), out)
			assert.Contains(t, out, "troupe: warning: telemetry: not all spans and metrics were exported: ")
			assert.Contains(t, out, "connection refused")
		})
	}
}

// TestTelemetryCollectorsReplyIsOneLine: a collector that answers with
// a page of its own (a 404 with a multi-line HTML body, as a web server
// at the wrong path gives) costs one short line on stderr, its
// reply's lines joined and cut.
func TestTelemetryCollectorsReplyIsOneLine(t *testing.T) {
	page := "<!DOCTYPE html>\n<html>\r\n<head>\n\t<title>404 Not Found</title>\n</head>\n<body>\n" +
		strings.Repeat("<p>\x1b[31mnothing\x1b[0m here</p>\n", 200) + "</body>\n</html>\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 4<<20))
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, page)
	}))
	t.Cleanup(srv.Close)
	otelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
	var stderr bytes.Buffer
	tel := newTelemetry(context.Background(), os.Environ(), &stderr)
	record(t, tel)
	shutdownWithin(t, tel, 30*time.Second)
	out := stderr.String()
	require.Equal(t, 1, strings.Count(out, "\n"), out)
	assert.True(t, strings.HasPrefix(out, "troupe: warning: telemetry: not all spans and metrics were exported: "), out)
	assert.Contains(t, out, "404 Not Found")
	assert.Contains(t, out, "<!DOCTYPE html> <html> <head> <title>404 Not Found</title>", "the reply's lines are joined")
	assert.NotContains(t, out, "\x1b", "nor does the reply's terminal escape get through")
	assert.NotContains(t, out, "\r")
	assert.Less(t, len(out), 600, "the reply is cut: %s", out)
}

// TestTelemetryValuesAreQuoted: a variable's value that a warning
// quotes is quoted (a newline in it cannot start a line of its own)
// and cut when long.
func TestTelemetryValuesAreQuoted(t *testing.T) {
	r := newOTLPReceiver(t)
	otelEnv(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":         r.httpURL,
		envTracesExporter:                     "zipkin\ntroupe: forged line",
		"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "thrift\n" + strings.Repeat("x", 4000),
	})
	var stderr bytes.Buffer
	tel := newTelemetry(context.Background(), os.Environ(), &stderr)
	tel.shutdown()
	out := stderr.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 2, out)
	for _, line := range lines {
		assert.True(t, strings.HasPrefix(line, "troupe: warning: telemetry: "), line)
		assert.Less(t, len(line), 400, line)
	}
	assert.Contains(t, lines[0], `OTEL_TRACES_EXPORTER: "zipkin\ntroupe: forged line" is not an exporter troupe has`)
	assert.Contains(t, lines[1], `OTEL_EXPORTER_OTLP_METRICS_PROTOCOL="thrift\nxxxx`)
	assert.Contains(t, lines[1], "…", "the long value is cut")
}

// TestTelemetryDeadCollectorWarningNamesItsEndpoint: the warning of
// exports that failed names the variable of the endpoint they went to,
// the signal's own when it is set.
func TestTelemetryDeadCollectorWarningNamesItsEndpoint(t *testing.T) {
	otelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://" + closedPort(t) + "/v1/traces", envMetricsExporter: "none"})
	var stderr bytes.Buffer
	tel := newTelemetry(context.Background(), os.Environ(), &stderr)
	record(t, tel)
	shutdownWithin(t, tel, 30*time.Second)
	out := stderr.String()
	assert.Equal(t, 1, strings.Count(out, "\n"), out)
	assert.True(t, strings.HasSuffix(out, "connection refused (is the collector at OTEL_EXPORTER_OTLP_TRACES_ENDPOINT running?)\n"), out)
}

// TestTelemetryWhereExportsWent: the warning of exports that failed
// says where they went, by the variable that named it or as the
// specification's default, and where the other signal's went when
// that is elsewhere (one endpoint variable set for traces alone leaves
// the metrics at the default).
func TestTelemetryWhereExportsWent(t *testing.T) {
	const (
		tracesVar  = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
		metricsVar = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
		general    = "OTEL_EXPORTER_OTLP_ENDPOINT"
	)
	for _, tt := range []struct {
		name     string
		vars     map[string]string
		protocol string
		failed   string
		want     string
	}{
		{"the general variable", map[string]string{general: "http://collector:4318"}, protocolHTTP, "metrics",
			"is the collector at OTEL_EXPORTER_OTLP_ENDPOINT running?"},
		{"the signal's own over the general", map[string]string{general: "http://a:4318", metricsVar: "http://b:4318/v1/metrics"}, protocolHTTP, "metrics",
			"is the collector at OTEL_EXPORTER_OTLP_METRICS_ENDPOINT running? traces go to OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"traces' alone, traces failed", map[string]string{tracesVar: "http://jaeger:4318/v1/traces"}, protocolHTTP, "traces",
			"is the collector at OTEL_EXPORTER_OTLP_TRACES_ENDPOINT running? metrics go to the default endpoint, localhost:4318, as neither OTEL_EXPORTER_OTLP_ENDPOINT nor OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is set"},
		{"traces' alone, metrics failed", map[string]string{tracesVar: "http://jaeger:4318/v1/traces"}, protocolHTTP, "metrics",
			"metrics go to the default endpoint, localhost:4318, as neither OTEL_EXPORTER_OTLP_ENDPOINT nor OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is set: is a collector running there? traces go to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{"none, over grpc", map[string]string{"OTEL_SERVICE_NAME": "x"}, protocolGRPC, "traces",
			"traces go to the default endpoint, localhost:4317, as neither OTEL_EXPORTER_OTLP_ENDPOINT nor OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set: is a collector running there?"},
		{"one that is not a URL is not used", map[string]string{general: "http://[::1"}, protocolHTTP, "traces",
			"traces go to the default endpoint, localhost:4318, as neither OTEL_EXPORTER_OTLP_ENDPOINT nor OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set: is a collector running there?"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tel := &telemetry{destinations: []destination{
				newDestination(tt.vars, "traces", tt.protocol), newDestination(tt.vars, "metrics", tt.protocol),
			}}
			assert.Equal(t, tt.want, tel.whereTo(tt.failed))
		})
	}
}

// TestTelemetryLeavesNoGoroutine: once shut down, the exporters leave
// nothing running, connections to a collector that is still up among
// it.
func TestTelemetryLeavesNoGoroutine(t *testing.T) {
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			r := newOTLPReceiver(t)
			endpoint := r.httpURL
			if protocol == "grpc" {
				endpoint = "http://" + r.grpcAddr
			}
			otelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, envProtocol: protocol})
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			var stderr bytes.Buffer
			tel := newTelemetry(context.Background(), os.Environ(), &stderr)
			record(t, tel)
			shutdownWithin(t, tel, 30*time.Second)
			spans, metrics := r.got()
			assert.Len(t, spans, 1)
			assert.Len(t, metrics, 1)
			assert.Empty(t, stderr.String())
		})
	}
}

// TestTelemetryTLSFromTheEnvironment: over HTTP, the exporters trust
// the collector's certificate and show their own as the certificate
// variables say, a signal's own over the general ones; without them a
// collector's certificate no one signed is refused.
func TestTelemetryTLSFromTheEnvironment(t *testing.T) {
	r := newOTLPReceiver(t)
	clientCA, clientCert, clientKey := clientCertificate(t)
	plainURL, plainCert := r.serveTLS(t, nil)
	mutualURL, mutualCert := r.serveTLS(t, clientCA)
	otherCert := clientCert // a certificate, not the collector's
	for _, tt := range []struct {
		name string
		env  map[string]string
		sent int // spans and metrics
	}{
		{"the collector's certificate", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": plainURL, "OTEL_EXPORTER_OTLP_CERTIFICATE": plainCert}, 2},
		{"a signal's own", map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": plainURL, "OTEL_EXPORTER_OTLP_CERTIFICATE": otherCert, "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": plainCert,
		}, 1},
		{"and the client's", map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": mutualURL, "OTEL_EXPORTER_OTLP_CERTIFICATE": mutualCert,
			"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": clientCert, "OTEL_EXPORTER_OTLP_CLIENT_KEY": clientKey,
		}, 2},
		{"none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": plainURL}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			otelEnv(t, tt.env)
			before := len(r.all())
			var stderr bytes.Buffer
			tel := newTelemetry(context.Background(), os.Environ(), &stderr)
			record(t, tel)
			shutdownWithin(t, tel, 30*time.Second)
			assert.Len(t, r.all(), before+tt.sent)
			if tt.sent == 2 {
				assert.Empty(t, stderr.String())
			} else {
				assert.Contains(t, stderr.String(), "certificate signed by unknown authority")
			}
		})
	}
}

// TestTelemetryTimeoutFromTheEnvironment: over HTTP, an export waits
// for the collector as long as the timeout variables say, a signal's
// own over the general one, however long shutdown would wait.
func TestTelemetryTimeoutFromTheEnvironment(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 4<<20))
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(srv.CloseClientConnections)
	otelEnv(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, envMetricsExporter: "none", "OTEL_BSP_EXPORT_TIMEOUT": "3600000",
		"OTEL_EXPORTER_OTLP_TIMEOUT": "3600000", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "50",
	})
	var stderr bytes.Buffer
	tel := newTelemetry(context.Background(), os.Environ(), &stderr)
	tel.flushBound = time.Hour
	record(t, tel)
	shutdownWithin(t, tel, 30*time.Second)
	out := stderr.String()
	assert.Equal(t, 1, strings.Count(out, "\n"), out)
	assert.Contains(t, out, "Client.Timeout exceeded")
	assert.NotContains(t, out, "within 1h", "the export's own timeout ended it, not shutdown's bound")
}

// TestTelemetryHungCollectorIsBounded: a collector that takes the
// request and never answers holds shutdown no longer than its bound,
// and the export still on its way is abandoned (the collector sees the
// client go), not left running.
func TestTelemetryHungCollectorIsBounded(t *testing.T) {
	abandoned := make(chan struct{}, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server sees the client go once the body is read.
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 4<<20))
		<-r.Context().Done()
		abandoned <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	// First, should shutdown not have abandoned its request: Close waits
	// for the requests on their way.
	t.Cleanup(srv.CloseClientConnections)
	// Left alone, the export would wait for an hour.
	otelEnv(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, envMetricsExporter: "none",
		"OTEL_EXPORTER_OTLP_TIMEOUT": "3600000", "OTEL_BSP_EXPORT_TIMEOUT": "3600000",
	})
	var stderr bytes.Buffer
	tel := newTelemetry(context.Background(), os.Environ(), &stderr)
	tel.flushBound = 50 * time.Millisecond
	record(t, tel)
	shutdownWithin(t, tel, 30*time.Second)
	select {
	case <-abandoned:
	case <-time.After(time.Minute):
		t.Fatal("the export shutdown gave up on is still waiting on the collector")
	}
	out := stderr.String()
	assert.Equal(t, "troupe: warning: telemetry: not all spans and metrics were exported: the collector did not take it within 50ms (is the collector at OTEL_EXPORTER_OTLP_ENDPOINT running?)\n", out)
}

// shutdownWithin shuts tel down as a command does at exit, and fails
// the test if that has not returned within limit: a limit far beyond
// the bound under test, so that a shutdown that does not keep its bound
// fails here, saying so, rather than at the test binary's timeout.
func shutdownWithin(t *testing.T, tel *telemetry, limit time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tel.shutdown()
	}()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("shutdown has not returned after %s: it does not keep its bound of %s", limit, tel.flushBound)
	}
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
