//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/troupe-dev/troupe/manager"
)

func eventLine(t *testing.T, e manager.Event) string {
	t.Helper()
	b, err := json.Marshal(e)
	require.NoError(t, err)
	return string(b) + "\n"
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func next(t *testing.T, c <-chan manager.Event) (manager.Event, bool) {
	t.Helper()
	select {
	case e, ok := <-c:
		return e, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no event from the follower")
		return manager.Event{}, false
	}
}

// TestFollowerSendsEventsAsTheyAreWritten: a line written in two pieces
// is one event, sent once its end is written; the follower ends at the
// end of the file once the run has ended, having sent every line.
func TestFollowerSendsEventsAsTheyAreWritten(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	path := filepath.Join(t.TempDir(), "run.jsonl")
	first := eventLine(t, manager.Event{Seq: 1, Kind: manager.EventSpawned, AgentID: "a1", Type: "explore"})
	second := eventLine(t, manager.Event{Seq: 2, Kind: manager.EventModelCall, AgentID: "a1", Text: "thinking"})
	third := eventLine(t, manager.Event{Seq: 3, Kind: manager.EventCompleted, AgentID: "a1", Text: "done"})
	appendTo(t, path, first+second[:10])
	var alive atomic.Bool
	alive.Store(true)
	events, errc := follower{path: path, alive: func(string) bool { return alive.Load() }, every: time.Millisecond}.follow(context.Background())

	e, ok := next(t, events)
	require.True(t, ok)
	assert.Equal(t, uint64(1), e.Seq)
	select {
	case e := <-events:
		t.Fatalf("an unfinished line was sent: %+v", e)
	default:
	}
	appendTo(t, path, second[10:])
	e, _ = next(t, events)
	assert.Equal(t, "thinking", e.Text)
	appendTo(t, path, third)
	alive.Store(false)
	e, _ = next(t, events)
	assert.Equal(t, "done", e.Text)
	_, ok = next(t, events)
	assert.False(t, ok, "the run ended and every line was sent: following ends")
	assert.NoError(t, <-errc)
}

// TestFollowerReadsWhatAnEndedRunWroteLast: lines written just before the
// run ended are sent, and a torn last line of a run that died is not.
func TestFollowerReadsWhatAnEndedRunWroteLast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	appendTo(t, path, eventLine(t, manager.Event{Seq: 1, AgentID: "a1"}))
	var once sync.Once
	alive := func(string) bool {
		// The run writes its last line and ends while the follower is at
		// the end of the file.
		once.Do(func() { appendTo(t, path, eventLine(t, manager.Event{Seq: 2, AgentID: "a1"})+`{"seq":3,"age`) })
		return false
	}
	events, errc := follower{path: path, alive: alive, every: time.Millisecond}.follow(context.Background())
	var seqs []uint64
	for e := range events {
		seqs = append(seqs, e.Seq)
	}
	assert.Equal(t, []uint64{1, 2}, seqs)
	assert.NoError(t, <-errc)
}

func TestFollowerStopsAtALineThatIsNotAnEvent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	appendTo(t, path, eventLine(t, manager.Event{Seq: 1, AgentID: "a1"})+"not json\n")
	events, errc := follower{path: path, alive: func(string) bool { return true }, every: time.Millisecond}.follow(context.Background())
	for range events {
	}
	err := <-errc
	require.Error(t, err)
	assert.Contains(t, err.Error(), "run.jsonl:2:")
}

func TestFollowerEndsWithItsContext(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	path := filepath.Join(t.TempDir(), "run.jsonl")
	appendTo(t, path, eventLine(t, manager.Event{Seq: 1, AgentID: "a1"}))
	ctx, cancel := context.WithCancel(context.Background())
	events, errc := follower{path: path, alive: func(string) bool { return true }, every: time.Hour}.follow(ctx)
	_, ok := next(t, events)
	require.True(t, ok)
	cancel()
	_, ok = next(t, events)
	assert.False(t, ok, "a run still going on is followed until the context ends")
	assert.NoError(t, <-errc)
}

func TestFollowerRefusesAFileThatIsNotRegular(t *testing.T) {
	dir := t.TempDir()
	events, errc := follower{path: dir, alive: func(string) bool { return true }}.follow(context.Background())
	for range events {
	}
	err := <-errc
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a regular file")
}

func TestSubtreeEventsKeepsTheRunAndWhatItDelegated(t *testing.T) {
	in := make(chan manager.Event, 8)
	for _, e := range []manager.Event{
		{Seq: 1, Kind: manager.EventSpawned, AgentID: "root"},
		{Seq: 2, Kind: manager.EventSpawned, AgentID: "child", ParentID: "root"},
		{Seq: 3, Kind: manager.EventSpawned, AgentID: "other"},
		{Seq: 4, Kind: manager.EventSpawned, AgentID: "grandchild", ParentID: "child"},
		{Seq: 5, Kind: manager.EventModelCall, AgentID: "other"},
		{Seq: 6, Kind: manager.EventCompleted, AgentID: "grandchild"},
	} {
		in <- e
	}
	close(in)
	var seqs []uint64
	for e := range subtreeEvents(in, "child") {
		seqs = append(seqs, e.Seq)
	}
	assert.Equal(t, []uint64{2, 4, 6}, seqs)
}

// liveScreen reads a pseudo-terminal as a program writes to it, so a test
// can wait until the screen shows something.
type liveScreen struct {
	mu      sync.Mutex
	out     []byte
	changed chan struct{}
	done    chan struct{}
}

// openLivePTY opens a pseudo-terminal of the given width whose output is
// read as it comes; tty is the program's side.
func openLivePTY(t *testing.T, cols int) (tty *os.File, s *liveScreen) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	require.NoError(t, pty.Setsize(ptmx, &pty.Winsize{Cols: uint16(cols), Rows: 50}))
	s = &liveScreen{changed: make(chan struct{}, 1), done: make(chan struct{})}
	t.Cleanup(func() {
		tty.Close()
		ptmx.Close()
		<-s.done
	})
	go func() {
		defer close(s.done)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			s.mu.Lock()
			s.out = append(s.out, buf[:n]...)
			s.mu.Unlock()
			select {
			case s.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return tty, s
}

// waitFor returns the screen's lines once cond holds of them.
func (s *liveScreen) waitFor(t *testing.T, cols int, what string, cond func([]string) bool) []string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		s.mu.Lock()
		out := string(s.out)
		s.mu.Unlock()
		sc := newScreen(t, cols)
		sc.write(out)
		if lines := sc.text(); cond(lines) {
			return lines
		}
		select {
		case <-s.changed:
		case <-deadline:
			t.Fatalf("the screen never showed %s:\n%s", what, strings.Join(sc.text(), "\n"))
		}
	}
}

func hasLine(lines []string, prefix, part string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) && strings.Contains(l, part) {
			return true
		}
	}
	return false
}

// TestRunsWatchShowsARunGoingOnInAnotherProcess: while a delegating run
// goes on in another troupe process, runs watch on a terminal draws its
// tree as the run has it (the first child still running, the others
// done), follows it to the end, and ends with the run.
func TestRunsWatchShowsARunGoingOnInAnotherProcess(t *testing.T) {
	requireDelegate(t)
	bin := troupeBinary(t)
	t.Setenv("NO_COLOR", "1")
	t.Setenv("TERM", "xterm")
	run := startHeldDelegation(t, bin)

	const cols = 160
	tty, live := openLivePTY(t, cols)
	var stderr syncBuffer
	a := newApp(tty, &stderr)
	watched := make(chan int, 1)
	go func() { watched <- a.execute(context.Background(), []string{"runs", "watch"}) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("runs watch said: %s", stderr.String())
		}
	})

	lines := live.waitFor(t, cols, "the run as it is", func(l []string) bool {
		return hasLine(l, "general", "delegate 3 tasks") && hasLine(l, "  [security]", "thinking") &&
			hasLine(l, "  [correctness]", "complete") && hasLine(l, "  [refactor]", "complete")
	})
	assert.NotContains(t, strings.Join(lines, "\n"), "✓ general", "the run is not over")
	close(run.gate)
	select {
	case <-run.proc.done:
		require.NoError(t, run.proc.err, run.out.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end")
	}
	select {
	case code := <-watched:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("runs watch did not end with the run")
	}
	lines = live.waitFor(t, cols, "the ended run", func(l []string) bool {
		return hasLine(l, "general", "✓ complete") && hasLine(l, "  [security]", "✓ complete")
	})
	assert.Len(t, lines, 4, "one line per agent:\n%s", strings.Join(lines, "\n"))
	assert.Contains(t, stderr.String(), "watching general#")
}

// TestRunsShowFollowPrintsARunAsItGoes: show --follow prints the events
// of a run going on in another process as they are written, then its
// output once it ends.
func TestRunsShowFollowPrintsARunAsItGoes(t *testing.T) {
	requireDelegate(t)
	bin := troupeBinary(t)
	run := startHeldDelegation(t, bin)
	entries, err := os.ReadDir(run.runs)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	id := strings.TrimSuffix(entries[0].Name(), ".jsonl")

	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	a := newApp(pw, &bytes.Buffer{})
	shown := make(chan int, 1)
	go func() {
		shown <- a.execute(context.Background(), []string{"runs", "show", "--follow", id})
		pw.Close()
	}()
	got := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		_, _ = b.ReadFrom(pr)
		got <- b.String()
	}()
	// The run's output is written only after the gate opens: a show that
	// did not follow the run to its end cannot print it.
	close(run.gate)
	<-run.proc.done
	require.NoError(t, run.proc.err, run.out.String())
	assert.Equal(t, 0, <-shown)
	out := <-got
	assert.Contains(t, out, "[security]")
	assert.True(t, strings.HasSuffix(strings.TrimSpace(strings.SplitN(out, "\n\nsubagents", 2)[0]), "all three reviewed"), out)
}

// runningProcess is a process started by a test; done is closed once it has
// ended, and err is then what Wait returned.
type runningProcess struct {
	done chan struct{}
	err  error
}

// heldDelegation is the delegating review going on in another troupe
// process, its first child's model call held until gate is closed.
type heldDelegation struct {
	runs string // the runs directory
	gate chan struct{}
	proc *runningProcess
	out  *syncBuffer
}

// startHeldDelegation starts the run against a fake provider, in an
// isolated home, and returns once the first child's call is held; the
// process is killed and waited for when the test ends.
func startHeldDelegation(t *testing.T, bin string) *heldDelegation {
	t.Helper()
	h := &heldDelegation{runs: filepath.Join(t.TempDir(), "runs"), gate: make(chan struct{}), out: &syncBuffer{}}
	d := &delegation{gate: h.gate, held: make(chan struct{}, 1)}
	srv := d.serve(t)
	isolate(t)
	t.Setenv("TROUPE_RUNS_DIR", h.runs)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("TROUPE_MODEL", "")
	run := exec.Command(bin, "run", "general", "--yes", "--model", "openai:M", "--repo", shopCopy(t), "--progress", "none", "review the cart package")
	run.Stdout, run.Stderr = h.out, h.out
	require.NoError(t, run.Start())
	h.proc = &runningProcess{done: make(chan struct{})}
	go func() {
		h.proc.err = run.Wait()
		close(h.proc.done)
	}()
	t.Cleanup(func() {
		_ = run.Process.Kill()
		<-h.proc.done
	})
	select {
	case <-d.held:
	case <-h.proc.done:
		t.Fatalf("the run ended before its first child asked its model: %v\n%s", h.proc.err, h.out.String())
	}
	return h
}

// TestRunsWatchWithNothingGoingOnSaysWhatToDo: no run is going on, so
// there is nothing to watch; the message says how to see past runs. A past
// run, named, is replayed to its end.
func TestRunsWatchWithNothingGoingOnSaysWhatToDo(t *testing.T) {
	isolate(t)
	t.Setenv("TROUPE_RUNS_DIR", filepath.Join(t.TempDir(), "runs"))
	t.Setenv("TROUPE_MODEL", "")
	cli := func(args ...string) outcome {
		var out, errb bytes.Buffer
		code := execute(context.Background(), args, &out, &errb)
		return outcome{code, out.String(), errb.String()}
	}
	o := cli("run", "explore", "--repo", shop, "--json", "--progress", "none", "ChargeWithRetry")
	require.Equal(t, 0, o.code, o.stderr)
	var res jsonResult
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &res))

	o = cli("runs", "watch")
	assert.Equal(t, 2, o.code)
	assert.Contains(t, o.stderr, "no run is going on")
	assert.Contains(t, o.stderr, "troupe runs list")

	o = cli("runs", "watch", res.ID)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "→ grep")
	assert.Contains(t, o.stdout, "✓ explore#"+shortID(res.ID)+" completed")
}
