package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startTroupe starts the built command as a user would, in an isolated
// home, with the test's environment (its OTEL_* variables among it)
// and env over it.
func startTroupe(t *testing.T, bin string, env map[string]string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	isolate(t)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TROUPE_RUNS_DIR="+filepath.Join(t.TempDir(), "runs"), "TROUPE_MODEL=",
		"OPENAI_API_KEY=", "OPENAI_BASE_URL=", "ANTHROPIC_API_KEY=", "NO_COLOR=1")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, &stdout, &stderr
}

// runTroupe runs the built command to its end; see startTroupe.
func runTroupe(t *testing.T, bin string, env map[string]string, args ...string) outcome {
	t.Helper()
	cmd, stdout, stderr := startTroupe(t, bin, env, args...)
	err := cmd.Wait()
	if exit := (*exec.ExitError)(nil); err != nil && !errors.As(err, &exit) {
		require.NoError(t, err)
	}
	return outcome{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

// spansNamed returns the spans called name.
func spansNamed(spans []received, name string) []received {
	var out []received
	for _, s := range spans {
		if s.name == name {
			out = append(out, s)
		}
	}
	return out
}

func sumAttr(t *testing.T, spans []received, key string) int {
	t.Helper()
	sum := 0
	for _, s := range spans {
		n, err := strconv.Atoi(s.attrs[key])
		require.NoError(t, err, "%s on %s: %v", key, s.name, s.attrs)
		sum += n
	}
	return sum
}

// TestRunExportsItsTrace: a run of the command, with OTEL_* pointing
// at a collector, arrives there as one trace: the agent's invoke_agent
// span at its root, a chat span for each turn and an execute_tool span
// for each tool call under it, with the tokens the run counted, and
// the manager's metrics beside it. Prompts and tool results are on the
// spans only when the user opts in.
func TestRunExportsItsTrace(t *testing.T) {
	bin := troupeBinary(t)
	for _, content := range []bool{false, true} {
		t.Run("content "+strconv.FormatBool(content), func(t *testing.T) {
			r := newOTLPReceiver(t)
			otelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL, envCaptureContent: strconv.FormatBool(content)})
			o := runTroupe(t, bin, nil, "run", "explore", "--repo", shop, "--progress", "none", "--json", "where is the discount applied?")
			require.Equal(t, 0, o.code, o.stderr)
			assert.Empty(t, o.stderr)
			var res jsonResult
			require.NoError(t, json.Unmarshal([]byte(o.stdout), &res), o.stdout)

			spans, metrics := r.got()
			roots := spansNamed(spans, "invoke_agent explore")
			require.Len(t, roots, 1, "spans: %v", names(spans))
			root := roots[0]
			assert.Empty(t, root.parent)
			assert.Equal(t, res.ID, root.attrs["gen_ai.agent.id"])
			assert.Equal(t, root.trace, res.TraceID, "the result names the run's trace")
			assert.Equal(t, "troupe", root.resource["service.name"])
			var chats, tools []received
			for _, s := range spans {
				assert.Equal(t, root.trace, s.trace, "%s is in the run's trace", s.name)
				switch {
				case strings.HasPrefix(s.name, "chat "):
					chats = append(chats, s)
				case strings.HasPrefix(s.name, "execute_tool "):
					tools = append(tools, s)
				}
				if s.id != root.id {
					assert.Equal(t, root.id, s.parent, "%s is under the agent's span", s.name)
				}
			}
			assert.Len(t, chats, res.Turns)
			assert.Len(t, tools, res.ToolCalls)
			assert.Equal(t, res.Usage.InputTokens, sumAttr(t, chats, "gen_ai.usage.input_tokens"))
			assert.Equal(t, res.Usage.OutputTokens, sumAttr(t, chats, "gen_ai.usage.output_tokens"))
			assert.NotEmpty(t, spansNamed(spans, "execute_tool grep"))
			for _, c := range chats {
				_, recorded := c.attrs["gen_ai.input.messages"]
				assert.Equal(t, content, recorded, "the prompt is on the chat span only on request")
			}
			assert.Contains(t, names(metrics), "gen_ai.client.token.usage over http")
		})
	}
}

// TestRunExportsItsTraceWhenItFailsOrIsInterrupted: the spans are
// flushed at exit however the command ends: a run its budget stopped
// (exit 1), whose summary names the trace, and one interrupted while its
// model call was on its way (exit 130).
func TestRunExportsItsTraceWhenItFailsOrIsInterrupted(t *testing.T) {
	bin := troupeBinary(t)
	t.Run("failed", func(t *testing.T) {
		r := newOTLPReceiver(t)
		otelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL})
		o := runTroupe(t, bin, nil, "run", "explore", "--repo", shop, "--progress", "plain", "--max-turns", "1", "where is the discount applied?")
		require.Equal(t, 1, o.code, o.stderr)
		spans, _ := r.got()
		roots := spansNamed(spans, "invoke_agent explore")
		require.Len(t, roots, 1, "spans: %v", names(spans))
		assert.Contains(t, o.stderr, "\n  trace: "+roots[0].trace, "the summary names the run's trace")
		assert.Equal(t, "budget_turns", roots[0].attrs["troupe.agent.reason"])
	})
	t.Run("interrupted", func(t *testing.T) {
		r := newOTLPReceiver(t)
		model, received := holdingServer(t)
		otelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + r.grpcAddr, envProtocol: "grpc"})
		cmd, _, stderr := startTroupe(t, bin, map[string]string{"OPENAI_BASE_URL": model.URL + "/v1"},
			"run", "explore", "--repo", shop, "--model", "openai:slow", "--progress", "none", "anything")
		select {
		case <-received:
		case <-time.After(time.Minute):
			t.Fatal("the model was never called")
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		_ = cmd.Wait()
		require.Equal(t, 130, cmd.ProcessState.ExitCode(), stderr.String())
		spans, _ := r.got()
		roots := spansNamed(spans, "invoke_agent explore")
		require.Len(t, roots, 1, "spans: %v", names(spans))
		assert.Equal(t, "grpc", roots[0].protocol)
		assert.Equal(t, "cancelled", roots[0].attrs["troupe.agent.reason"])
		assert.Len(t, spansNamed(spans, "chat slow"), 1, "the model call cut short is a span too: %v", names(spans))
	})
}

// TestRunWithTheCollectorDown: with nothing at the endpoint the run
// goes on and exits as it would, and stderr has one line about it, over
// either protocol: not a line per export, nor the SDK's own logs.
func TestRunWithTheCollectorDown(t *testing.T) {
	bin := troupeBinary(t)
	dead := closedPort(t)
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			otelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + dead, envProtocol: protocol})
			o := runTroupe(t, bin, nil, "run", "explore", "--repo", shop, "--progress", "none", "--json", "where is the discount applied?")
			require.Equal(t, 0, o.code, o.stderr)
			assert.NotEmpty(t, o.stdout)
			require.Equal(t, 1, strings.Count(o.stderr, "\n"), o.stderr)
			assert.True(t, strings.HasPrefix(o.stderr, "troupe: warning: telemetry: not all spans and metrics were exported: "), o.stderr)
			assert.Contains(t, o.stderr, "connection refused")
		})
	}
}

// TestTelemetryOfARunNeverPrintsAVariablesValue: an OTLP exporter
// variable the exporters cannot read (a header written with a colon or
// a bad %-escape, a timeout with a unit, an endpoint that is not a URL),
// whose value may hold a credential, costs a run one line naming it;
// its value is printed nowhere on stderr, nor are the SDK's own logs of
// it, and what can be sent still is.
func TestTelemetryOfARunNeverPrintsAVariablesValue(t *testing.T) {
	bin := troupeBinary(t)
	const secret = "sk-SECRET123"
	r := newOTLPReceiver(t)
	for _, tt := range []struct {
		name, variable string
		env            map[string]string
	}{
		{"a header with a colon", "OTEL_EXPORTER_OTLP_HEADERS", map[string]string{
			"OTEL_EXPORTER_OTLP_HEADERS": "Authorization: Bearer " + secret}},
		{"a header with a bad escape", "OTEL_EXPORTER_OTLP_HEADERS", map[string]string{
			"OTEL_EXPORTER_OTLP_HEADERS": "x-team=tools,Authorization=Bearer%zz" + secret}},
		{"a signal's header over grpc", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + r.grpcAddr, envProtocol: "grpc",
			"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "api-key:" + secret}},
		{"a timeout with a unit", "OTEL_EXPORTER_OTLP_TIMEOUT", map[string]string{
			"OTEL_EXPORTER_OTLP_TIMEOUT": "10s" + secret}},
		{"an endpoint that is not a URL", "OTEL_EXPORTER_OTLP_ENDPOINT", map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT":         "http://user:" + secret + "@[::1",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":  r.httpURL + "/v1/traces",
			"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": r.httpURL + "/v1/metrics"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL}
			for k, v := range tt.env {
				env[k] = v
			}
			otelEnv(t, env)
			before, _ := r.got()
			o := runTroupe(t, bin, nil, "run", "explore", "--repo", shop, "--progress", "none", "--json", "where is the discount applied?")
			require.Equal(t, 0, o.code, o.stderr)
			assert.NotContains(t, o.stderr, secret)
			assert.NotContains(t, o.stderr, "10s")
			require.Equal(t, 1, strings.Count(o.stderr, "\n"), o.stderr)
			assert.True(t, strings.HasPrefix(o.stderr, telemetryWarnPrefix+tt.variable+": "), o.stderr)
			after, _ := r.got()
			assert.Greater(t, len(after), len(before), "the run's spans are sent without what could not be read")
		})
	}
}
