//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
)

const (
	rootID = "aaaaaaaa-root"
	secID  = "bbbbbbbb-security"
	corID  = "cccccccc-correctness"
	refID  = "dddddddd-refactor"
)

func child(kind manager.EventKind, id, label string) manager.Event {
	return manager.Event{Kind: kind, AgentID: id, ParentID: rootID, Type: "explore", Label: label, Group: "g1", Depth: 1}
}

// review is a parent delegating three reviews: the events a manager
// publishes, in stages.
func review() [][]manager.Event {
	root := func(kind manager.EventKind) manager.Event {
		return manager.Event{Kind: kind, AgentID: rootID, Type: "general"}
	}
	spawned := root(manager.EventSpawned)
	running := root(manager.EventState)
	running.State, running.From = manager.Running, manager.Pending
	call := root(manager.EventModelCall)
	call.Usage = manager.Usage{InputTokens: 3100, OutputTokens: 420}
	delegate := root(manager.EventToolCall)
	delegate.Tool, delegate.ToolCallID = "delegate", "call-1"
	delegate.Args = `{"tasks":[{"label":"security","prompt":"x"},{"label":"correctness","prompt":"y"},{"label":"refactor","prompt":"z"}]}`

	var kids []manager.Event
	for _, c := range []struct{ id, label string }{{secID, "security"}, {corID, "correctness"}, {refID, "refactor"}} {
		e := child(manager.EventSpawned, c.id, c.label)
		kids = append(kids, e)
		e = child(manager.EventState, c.id, c.label)
		e.State = manager.Running
		kids = append(kids, e)
	}
	secRead := child(manager.EventToolCall, secID, "security")
	secRead.Tool, secRead.ToolCallID, secRead.Args = "grep", "s1", `{"pattern":"password"}`
	corRead := child(manager.EventToolCall, corID, "correctness")
	corRead.Tool, corRead.ToolCallID, corRead.Args = "read", "c1", `{"path":"src/lib.rs"}`
	corCall := child(manager.EventModelCall, corID, "correctness")
	corCall.Usage = manager.Usage{InputTokens: 23000, OutputTokens: 890}
	secCall := child(manager.EventModelCall, secID, "security")
	secCall.Usage = manager.Usage{InputTokens: 45000, OutputTokens: 2100}
	secDone := child(manager.EventCompleted, secID, "security")
	secDone.State, secDone.Reason, secDone.Usage = manager.Completed, manager.ReasonDone, secCall.Usage
	refDone := child(manager.EventCompleted, refID, "refactor")
	refDone.State, refDone.Reason = manager.Failed, manager.ReasonBudgetTokens
	return [][]manager.Event{
		{spawned, running, call, delegate},
		kids,
		{secRead, corCall, corRead},
		{secCall, secDone, refDone},
	}
}

var reviewScreen = []string{
	"general          → delegate 3 tasks (in=3.1k out=420)",
	"  [security]     ✓ complete (in=45k out=2.1k)",
	"  [correctness]  → read src/lib.rs (in=23k out=890)",
	"  [refactor]     ⚠ partial: budget_tokens",
}

// TestLiveTreeRedrawsInPlaceOnATerminal renders a delegation through the
// live display onto a real pseudo-terminal, in stages far enough apart
// for several redraws, and reads the screen back: one line per agent,
// the earlier drawings replaced, not piled up.
func TestLiveTreeRedrawsInPlaceOnATerminal(t *testing.T) {
	p := openPTY(t, 80)
	fmt.Fprint(p.tty, "using model m\n")
	events := make(chan manager.Event)
	prog := showEvents(events, progressLive, p.tty, progressOptions{every: 5 * time.Millisecond, width: func() int { return termWidth(p.tty, 0) }})
	for _, stage := range review() {
		for _, e := range stage {
			events <- e
		}
		time.Sleep(30 * time.Millisecond)
	}
	close(events)
	prog.wait(context.Background())
	fmt.Fprint(p.tty, "✓ general completed\n")
	out := p.output(t)

	assert.Greater(t, strings.Count(out, eraseBelow), 3, "drawn once per stage at least")
	s := newScreen(t, 80)
	s.write(out)
	want := append(append([]string{"using model m"}, reviewScreen...), "✓ general completed")
	assert.Equal(t, want, s.text())
	// A colour or style is an SGR sequence (ESC [ … m); a redraw's moves
	// up ("\x1b[3F") are not.
	assert.NotRegexp(t, `\x1b\[[0-9;]*m`, out, "no colour was asked for")
}

// TestLiveTreeFitsANarrowTerminal: a line longer than the terminal would
// wrap and throw off the redraw; the screen fails the test on any.
func TestLiveTreeFitsANarrowTerminal(t *testing.T) {
	p := openPTY(t, 40)
	events := make(chan manager.Event)
	prog := showEvents(events, progressLive, p.tty, progressOptions{every: time.Millisecond, colour: true, width: func() int { return termWidth(p.tty, 0) }})
	for _, stage := range review() {
		for _, e := range stage {
			events <- e
		}
	}
	long := child(manager.EventToolCall, corID, "correctness")
	long.Tool, long.ToolCallID, long.Args = "read", "c2", `{"path":"`+strings.Repeat("deep/", 30)+`file.go"}`
	events <- long
	close(events)
	prog.wait(context.Background())
	s := newScreen(t, 40)
	s.write(p.output(t))
	lines := s.text()
	require.Len(t, lines, 4)
	assert.Equal(t, "  [correctness]  → read deep/deep/deep…", lines[2], "the usage gives way to the status")
	for _, l := range lines {
		assert.LessOrEqual(t, len([]rune(l)), 39, l)
	}
}

// TestLiveTreeRespectsNO_COLOR runs the command itself with stderr on a
// pseudo-terminal: the live tree appears, drawn in place, in colour
// unless NO_COLOR is set.
func TestLiveTreeRespectsNO_COLOR(t *testing.T) {
	for _, noColor := range []string{"", "1"} {
		t.Run("NO_COLOR="+noColor, func(t *testing.T) {
			isolate(t)
			t.Setenv("TROUPE_RUNS_DIR", t.TempDir())
			t.Setenv("TROUPE_MODEL", "")
			t.Setenv("NO_COLOR", noColor)
			t.Setenv("TERM", "xterm")
			p := openPTY(t, 200)
			var stdout bytes.Buffer
			a := newApp(&stdout, p.tty)
			a.stdin = strings.NewReader("")
			code := a.execute(context.Background(), []string{"run", "explore", "--repo", shop, "where is the discount applied?"})
			out := p.output(t)
			require.Equal(t, 0, code, out)
			assert.Contains(t, out, eraseBelow, "drawn in place")
			s := newScreen(t, 200)
			s.write(out)
			lines := s.text()
			require.GreaterOrEqual(t, len(lines), 4, out)
			assert.True(t, strings.HasPrefix(lines[0], "using model offline"), lines[0])
			assert.True(t, strings.HasPrefix(lines[1], "working in "), lines[1])
			assert.Regexp(t, `^explore  ✓ complete \(in=\d+(\.\d)?k? out=\d+(\.\d)?k?\)$`, lines[2])
			assert.True(t, strings.HasPrefix(lines[3], "✓ explore completed (done)"), lines[3])
			if noColor == "" {
				assert.Contains(t, out, green+"✓"+reset)
			} else {
				assert.NotContains(t, out, "\x1b[32m")
				assert.NotContains(t, out, "\x1b[2m")
			}
		})
	}
}

// countingWriter counts the redraws written to it.
type countingWriter struct {
	mu    sync.Mutex
	draws int
	buf   bytes.Buffer
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draws += bytes.Count(p, []byte(eraseBelow))
	return c.buf.Write(p)
}

func TestLiveTreeRedrawsAtMostEveryInterval(t *testing.T) {
	w := &countingWriter{}
	events := make(chan manager.Event)
	prog := showEvents(events, progressLive, w, progressOptions{every: 100 * time.Millisecond})
	start := time.Now()
	for i := range 3000 {
		e := manager.Event{Kind: manager.EventToolCall, AgentID: rootID, Type: "general", Tool: "read", Args: fmt.Sprintf(`{"path":"f%d"}`, i)}
		events <- e
		if i%100 == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	elapsed := time.Since(start)
	close(events)
	prog.wait(context.Background())
	allowed := int(elapsed/(100*time.Millisecond)) + 2 // the ticks, and the last drawing
	assert.LessOrEqual(t, w.draws, allowed, "3000 events in %s", elapsed)
	assert.Positive(t, w.draws)
	assert.Contains(t, w.buf.String(), "→ read f2999", "the last drawing shows the last state")
}

func TestLiveTreeShowsAtMostTwentyAgents(t *testing.T) {
	v := newTreeView(&bytes.Buffer{}, progressOptions{})
	v.apply(manager.Event{Kind: manager.EventSpawned, AgentID: rootID, Type: "general", State: manager.Running})
	for i := range 30 {
		id := fmt.Sprintf("child-%02d", i)
		v.apply(child(manager.EventSpawned, id, fmt.Sprintf("task%02d", i)))
		if i < 25 {
			done := child(manager.EventCompleted, id, fmt.Sprintf("task%02d", i))
			done.State = manager.Completed
			v.apply(done)
		}
	}
	lines := v.lines(100)
	require.Len(t, lines, 21)
	assert.Equal(t, "… 11 more", lines[20])
	assert.True(t, strings.HasPrefix(lines[0], "general"), "the top-level agent stays")
	shown := strings.Join(lines, "\n")
	for i := 25; i < 30; i++ {
		assert.Contains(t, shown, fmt.Sprintf("[task%02d]", i), "running agents are shown before ended ones")
	}
	assert.Contains(t, shown, "[task00]", "then ended ones, in tree order")
	assert.NotContains(t, shown, "[task24]")
}

func TestLiveTreePlacesAnAgentWhoseSpawnWasDropped(t *testing.T) {
	v := newTreeView(&bytes.Buffer{}, progressOptions{})
	for _, stage := range review() {
		for _, e := range stage {
			if e.Kind == manager.EventSpawned && e.AgentID == corID {
				continue
			}
			v.apply(e)
		}
	}
	v.apply(manager.Event{Kind: manager.EventDropped, Dropped: 7})
	assert.Equal(t, reviewScreen, v.lines(100))
}

func TestPlainLinesIndentChildrenAndNameTheirLabel(t *testing.T) {
	var buf bytes.Buffer
	events := make(chan manager.Event)
	prog := showEvents(events, progressPlain, &buf, progressOptions{})
	for _, stage := range review() {
		for _, e := range stage {
			events <- e
		}
	}
	q := child(manager.EventQuestion, corID, "correctness")
	q.Text = "which edition?"
	events <- q
	close(events)
	prog.wait(context.Background())
	out := buf.String()
	assert.Contains(t, out, "▸ general#aaaaaaaa started")
	assert.Contains(t, out, "\n  ▸ [security] explore#bbbbbbbb started")
	assert.Contains(t, out, "\n    [correctness] explore#cccccccc → read {\"path\":\"src/lib.rs\"}")
	assert.Contains(t, out, "\n  ✗ [refactor] explore#dddddddd failed (budget_tokens)")
	assert.Contains(t, out, "\n    [correctness] explore#cccccccc ? asks: which edition?")
	assert.NotContains(t, out, "\x1b[")
}

func TestCompactCounts(t *testing.T) {
	for n, want := range map[int]string{0: "0", 420: "420", 1000: "1k", 3100: "3.1k", 45_000: "45k", 999_999: "999k", 1_200_000: "1.2M", 12_000_000: "12M"} {
		assert.Equal(t, want, compact(n), "%d", n)
	}
}

func TestProgressShowsTheFilesEachAgentChanged(t *testing.T) {
	v := newTreeView(&bytes.Buffer{}, progressOptions{})
	for _, stage := range review() {
		for _, e := range stage {
			v.apply(e)
		}
	}
	write := func(id, call, tool, path, errText string) {
		c := child(manager.EventToolCall, id, "correctness")
		c.Tool, c.ToolCallID, c.Args = tool, call, fmt.Sprintf(`{"path":%q,"content":"x"}`, path)
		v.apply(c)
		r := child(manager.EventToolResult, id, "correctness")
		r.Tool, r.ToolCallID, r.Error = tool, call, errText
		v.apply(r)
	}
	write(corID, "w1", "write", "a.go", "")
	write(corID, "w2", "edit", "b.go", "")
	write(corID, "w3", "edit", "./a.go", "") // the same file again
	write(corID, "w4", "write", "../x", "path leaves the workspace")
	assert.Contains(t, v.lines(100)[2], "· 2 files changed", "while it runs: the paths its writes and edits changed")

	done := child(manager.EventCompleted, corID, "correctness")
	done.State, done.Reason = manager.Completed, manager.ReasonDone
	done.Changes = &agenttypes.Changes{Added: []string{"a.go", "new.go"}, Modified: []string{"b.go"}}
	v.apply(done)
	assert.Contains(t, v.lines(100)[2], "· 3 files changed", "at its end: its recorded changes")
	assert.Contains(t, progressLine(done, false), "✓ [correctness] explore#cccccccc completed · 3 files changed")
}
