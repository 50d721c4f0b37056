package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oldTranscript writes a transcript last modified eight days ago, past
// the retention period.
func oldTranscript(t *testing.T, runs string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(runs, 0o700))
	path := filepath.Join(runs, "00000000-old.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"seq":1,"kind":"spawned","type":"explore","text":"long ago"}`+"\n"), 0o600))
	then := time.Now().Add(-8 * 24 * time.Hour)
	require.NoError(t, os.Chtimes(path, then, then))
	return path
}

func TestRefusedRunPrunesNothing(t *testing.T) {
	for _, args := range [][]string{
		{"run", "explore", "--repo", shop, "  "},
		{"run", "nosuch", "--repo", shop, "task"},
		{"run", "explore", "--repo", shop, "--max-turns", "0", "task"},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			runs := filepath.Join(t.TempDir(), "runs")
			old := oldTranscript(t, runs)
			o := runIn(t, runs, args...)
			require.Equal(t, 2, o.code, o.stderr)
			assert.FileExists(t, old, "a refused command changes nothing on disk")
		})
	}
}

func TestAcceptedRunPrunesOldTranscripts(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	old := oldTranscript(t, runs)
	o := runIn(t, runs, "run", "explore", "--repo", shop, "--progress", "none", "ChargeWithRetry")
	require.Equal(t, 0, o.code, o.stderr)
	assert.NoFileExists(t, old)
}

// runIn runs the command with transcripts going to runs.
func runIn(t *testing.T, runs string, args ...string) outcome {
	t.Helper()
	isolate(t)
	for _, k := range []string{"TROUPE_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"} {
		t.Setenv(k, "")
	}
	t.Setenv("TROUPE_RUNS_DIR", runs)
	return execCapture(args...)
}

func TestUnwritableRunsDirRunsWithoutTranscript(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	cases := map[string]string{"below a file": filepath.Join(file, "runs")}
	if os.Geteuid() != 0 { // root may write anywhere
		ro := filepath.Join(t.TempDir(), "ro")
		require.NoError(t, os.Mkdir(ro, 0o500))
		cases["read-only"] = filepath.Join(ro, "runs")
	}
	for name, runs := range cases {
		t.Run(name, func(t *testing.T) {
			o := runIn(t, runs, "run", "explore", "--repo", shop, "--json", "--progress", "none", "ChargeWithRetry")
			require.Equal(t, 0, o.code, o.stderr)
			assert.Equal(t, 1, strings.Count(o.stderr, "\n"), "one line: %s", o.stderr)
			assert.Contains(t, o.stderr, "troupe: warning: cannot write transcripts to "+runs)
			assert.Contains(t, o.stderr, "TROUPE_RUNS_DIR")
			assert.NotContains(t, o.stderr, "level=")
			var res map[string]any
			require.NoError(t, json.Unmarshal([]byte(o.stdout), &res))
			assert.Equal(t, "completed", res["state"])
			assert.NotContains(t, res, "transcript", "no transcript was written, so none is named")
		})
	}
}

func execCapture(args ...string) outcome {
	var out, errb bytes.Buffer
	code := execute(context.Background(), args, &out, &errb)
	return outcome{code, out.String(), errb.String()}
}
