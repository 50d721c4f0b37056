//go:build unix

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunShowsTheLiveTreeOfADelegation runs a delegation with stderr on a
// pseudo-terminal: the screen ends with one line per agent, the children
// under the parent by label, each with its usage.
func TestRunShowsTheLiveTreeOfADelegation(t *testing.T) {
	requireDelegate(t)
	d := &delegation{holdFirst: 250 * time.Millisecond}
	srv := d.serve(t)
	t.Setenv("NO_COLOR", "1")
	t.Setenv("TERM", "xterm")
	isolate(t)
	t.Setenv("TROUPE_RUNS_DIR", filepath.Join(t.TempDir(), "runs"))
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("TROUPE_MODEL", "")
	p := openPTY(t, 200)
	var stdout bytes.Buffer
	a := newApp(&stdout, p.tty)
	a.stdin = strings.NewReader("")
	repo := shopCopy(t)
	code := a.execute(context.Background(), []string{"run", "general", "--yes", "--model", "openai:M", "--repo", repo, "review the cart package"})
	out := p.output(t)
	require.Equal(t, 0, code, out)
	assert.Equal(t, "all three reviewed\n", stdout.String())

	s := newScreen(t, 200)
	s.write(out)
	lines := s.text()
	require.GreaterOrEqual(t, len(lines), 7, strings.Join(lines, "\n"))
	assert.Equal(t, []string{
		"using model openai:M (--model)",
		"working in " + repo + " (--repo)",
		"general          ✓ complete (in=200 out=20)",
		"  [security]     ✓ complete (in=100 out=10)",
		"  [correctness]  ✓ complete (in=100 out=10)",
		"  [refactor]     ✓ complete (in=100 out=10)",
	}, lines[:6])
	assert.True(t, strings.HasPrefix(lines[6], "✓ general completed (done)"), lines[6])
	assert.Contains(t, lines[6], "500 tokens in / 50 out in all (own 200 in / 20 out)")
}
