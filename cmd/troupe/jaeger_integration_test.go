//go:build integration

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests send a run's trace to a real Jaeger (v2: the OpenTelemetry
// collector with Jaeger's storage and query extensions), built from
// .ci/jaeger by make integration, which names the binary in
// TROUPE_JAEGER_BIN, and read it back through Jaeger's query API as a
// user's tools would.

const (
	// jaegerTimeout bounds Jaeger's start up to its health answering, and
	// its stop.
	jaegerTimeout = 2 * time.Minute
	// maxJaegerAnswer bounds what one query API answer may hold.
	maxJaegerAnswer = 16 << 20
)

// jaegerConfig keeps Jaeger to loopback ports the test chose: OTLP over
// gRPC and HTTP in, traces kept in memory, the query API and the health
// check out, and nothing else (no self-tracing, no metrics endpoint).
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: %[1]s
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 1000
  jaeger_query:
    enable_tracing: false
    storage:
      traces: memstore
    http:
      endpoint: %[2]s
    grpc:
      endpoint: %[3]s
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %[4]s
      http:
        endpoint: %[5]s
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// jaeger is a Jaeger the test started; its addresses are host:port.
type jaeger struct {
	health, query, otlpGRPC, otlpHTTP string
}

// jaegerBin is the Jaeger binary make integration built.
func jaegerBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("TROUPE_JAEGER_BIN")
	if bin == "" {
		t.Skip("TROUPE_JAEGER_BIN is not set: run make integration, which builds Jaeger from .ci/jaeger")
	}
	_, err := os.Stat(bin)
	require.NoError(t, err, "TROUPE_JAEGER_BIN names no Jaeger: run make integration, which builds it")
	return bin
}

// loopbackPorts returns n loopback addresses free a moment ago.
func loopbackPorts(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	for _, ln := range lns {
		require.NoError(t, ln.Close())
	}
	return addrs
}

// startJaeger starts Jaeger in a process group of its own and returns
// once its health check says it is ready. When the test ends, the group
// is stopped (killed if it does not stop in time) and checked gone.
func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	bin := jaegerBin(t)
	ports := loopbackPorts(t, 5)
	j := &jaeger{health: ports[0], query: ports[1], otlpGRPC: ports[3], otlpHTTP: ports[4]}
	dir := t.TempDir()
	config := filepath.Join(dir, "jaeger.yaml")
	require.NoError(t, os.WriteFile(config, fmt.Appendf(nil, jaegerConfig, ports[0], ports[1], ports[2], ports[3], ports[4]), 0o644))
	logPath := filepath.Join(dir, "jaeger.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	defer logFile.Close()

	cmd := exec.Command(bin, "--config", config)
	// Nothing of the test's environment: no OTEL_* variable reaches it.
	cmd.Env = []string{"HOME=" + dir}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		stopGroup(t, cmd.Process.Pid, exited)
		if t.Failed() {
			log, _ := os.ReadFile(logPath)
			t.Logf("Jaeger's log:\n%s", lastBytes(log, 8<<10))
		}
	})
	j.waitHealthy(t, exited, logPath)
	return j
}

// stopGroup stops the process group led by pid: SIGTERM, then SIGKILL
// if its leader has not exited within jaegerTimeout; then checks that
// no process of the group is left.
func stopGroup(t *testing.T, pid int, exited <-chan struct{}) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(jaegerTimeout):
		t.Errorf("Jaeger did not stop within %s of SIGTERM; killed", jaegerTimeout)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		t.Errorf("a process of Jaeger's group outlived it (kill -0: %v)", err)
	}
}

func lastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// waitHealthy polls the health check until it answers 200, Jaeger exits,
// or jaegerTimeout passes.
func (j *jaeger) waitHealthy(t *testing.T, exited <-chan struct{}, logPath string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.After(jaegerTimeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := client.Get("http://" + j.health + "/status")
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			t.Fatalf("Jaeger exited before it was healthy:\n%s", lastBytes(log, 8<<10))
		case <-deadline:
			t.Fatalf("Jaeger's health check did not answer 200 within %s (last: %v)", jaegerTimeout, err)
		case <-tick.C:
		}
	}
}

// get fetches a query API path and decodes its JSON answer into out,
// returning the status.
func (j *jaeger) get(t *testing.T, path string, query url.Values, out any) int {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get("http://" + j.query + path + "?" + query.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJaegerAnswer))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(body, out), "%s: %s", path, lastBytes(body, 2000))
	return resp.StatusCode
}

// otlpJSONAttr is an attribute as OTLP's JSON encoding writes it.
type otlpJSONAttr struct {
	Key   string         `json:"key"`
	Value map[string]any `json:"value"`
}

// jaegerTraces is the query API's answer to a search (/api/v3/traces):
// OTLP's JSON encoding of the traces found, or an error.
type jaegerTraces struct {
	Result struct {
		ResourceSpans []struct {
			Resource struct {
				Attributes []otlpJSONAttr `json:"attributes"`
			} `json:"resource"`
			ScopeSpans []struct {
				Spans []struct {
					TraceID    string         `json:"traceId"`
					SpanID     string         `json:"spanId"`
					ParentID   string         `json:"parentSpanId"`
					Name       string         `json:"name"`
					Attributes []otlpJSONAttr `json:"attributes"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	} `json:"result"`
	Error struct {
		HTTPCode int    `json:"httpCode"`
		Message  string `json:"message"`
	} `json:"error"`
}

func jsonAttrs(kvs []otlpJSONAttr) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		// Strings are strings, and so are 64-bit integers in this
		// encoding; other kinds are kept as Go prints them.
		switch v := kv.Value; {
		case v["stringValue"] != nil:
			out[kv.Key] = fmt.Sprint(v["stringValue"])
		case v["intValue"] != nil:
			out[kv.Key] = fmt.Sprint(v["intValue"])
		default:
			out[kv.Key] = fmt.Sprint(v)
		}
	}
	return out
}

// findTraces searches the traces of service that started from since
// until now, and returns their spans and the answer's status.
func (j *jaeger) findTraces(t *testing.T, service string, since time.Time) ([]received, int, string) {
	t.Helper()
	var found jaegerTraces
	code := j.get(t, "/api/v3/traces", url.Values{
		"query.service_name":   {service},
		"query.num_traces":     {"100"},
		"query.start_time_min": {since.Add(-time.Minute).UTC().Format(time.RFC3339Nano)},
		"query.start_time_max": {time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)},
	}, &found)
	var spans []received
	for _, rs := range found.Result.ResourceSpans {
		resource := jsonAttrs(rs.Resource.Attributes)
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				spans = append(spans, received{name: s.Name, protocol: "jaeger", resource: resource,
					trace: s.TraceID, id: s.SpanID, parent: s.ParentID, attrs: jsonAttrs(s.Attributes)})
			}
		}
	}
	return spans, code, found.Error.Message
}

// services lists the services Jaeger holds traces of.
func (j *jaeger) services(t *testing.T) []string {
	t.Helper()
	var out struct {
		Services []string `json:"services"`
	}
	require.Equal(t, http.StatusOK, j.get(t, "/api/v3/services", nil, &out))
	return out.Services
}

// TestIntegrationJaegerHoldsATreeAsOneTrace: a run whose lead delegates
// to a middle agent that delegates to a leaf, each calling tools (a
// trusted plugin's among them), exported over OTLP/gRPC by the built
// command, is one trace in Jaeger of that shape, read back through its
// query API, with each model call's tokens as the model reported them.
func TestIntegrationJaegerHoldsATreeAsOneTrace(t *testing.T) {
	requireDelegate(t)
	bin := troupeBinary(t)
	j := startJaeger(t)
	since := time.Now()

	// Jaeger answers before anything was sent: no service, and no trace
	// of troupe's.
	assert.Empty(t, j.services(t))
	spans, code, msg := j.findTraces(t, "troupe", since)
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, "No traces found", msg)
	assert.Empty(t, spans)

	otelEnv(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + j.otlpGRPC, envProtocol: "grpc",
		// Jaeger takes traces only.
		envMetricsExporter: "none",
	})
	repo := treeProject(t, bin)
	model, srv := newTreeModel(t)
	res := runLeadTree(t, bin, repo, srv)

	spans, code, msg = j.findTraces(t, "troupe", since)
	require.Equal(t, http.StatusOK, code, msg)
	checkTreeTrace(t, spans, model.usage())
	for _, s := range spans {
		if s.name == "invoke_agent lead" {
			assert.Equal(t, res.ID, s.attrs["gen_ai.agent.id"])
		}
		assert.Equal(t, "troupe", s.resource["service.name"])
	}
	assert.Equal(t, []string{"troupe"}, j.services(t))
}
