//go:build unix

package manager_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// transcriptLossBound is how many bytes of the most recent lines a kill
// may lose: the writer's buffer bound (1 MiB, stated in the package
// documentation), and one line being added.
const transcriptLossBound = 1<<20 + 64<<10

// transcriptLossAge is how old an event lost by a kill may be: the writer
// appends what gathered as soon as it can, so only events of the last
// moments are lost (a few milliseconds on an idle machine; this bound
// leaves room for a loaded one running the race detector). A writer that
// waited for a timer or a fuller buffer would lose older ones.
const transcriptLossAge = time.Second

// TestHelperBusyRun is the child process of TestTranscriptSurvivesSIGKILL:
// a manager with transcripts on, busy with many agents, printing every
// event's seq and agent as it is published, until it is killed.
func TestHelperBusyRun(t *testing.T) {
	dir := os.Getenv("TROUPE_TEST_TRANSCRIPT_DIR")
	if dir == "" {
		t.Skip("runs only as the child of TestTranscriptSurvivesSIGKILL")
	}
	steps := make([]scripted.Step, 200)
	for i := range steps {
		steps[i] = scripted.Step{Text: fmt.Sprint("turn ", i), Calls: []scripted.Call{{Name: "echo", Args: `{"text":"x"}`}, {Name: "echo", Args: `{"text":"y"}`}}}
	}
	model := scripted.New(steps...).WithoutRecording()
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterTool(echoTool("echo")))
	require.NoError(t, reg.RegisterType(agenttypes.Type{Name: "busy", Description: "busy", Tools: []string{"echo"}}))
	mgr, err := manager.New(manager.Config{
		Registry: reg, DefaultModel: "m", TranscriptDir: dir, MaxConcurrent: 50, Logger: slog.New(slog.DiscardHandler),
		Models: manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
	})
	require.NoError(t, err)
	out := bufio.NewWriter(os.Stdout)
	sub := mgr.Subscribe()
	go func() {
		for e := range sub.C() {
			line, _ := json.Marshal(e)
			fmt.Fprintf(out, "%d %s %d %d\n", e.Seq, e.AgentID, len(line)+1, e.Time.UnixNano())
			if len(sub.C()) == 0 {
				_ = out.Flush()
			}
		}
	}()
	fmt.Fprintln(out, "path", mgr.TranscriptPath())
	_ = out.Flush()
	for range 200 {
		if _, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "busy", Task: "spin"}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Minute) // killed long before
}

// TestTranscriptSurvivesSIGKILL kills a busy process with SIGKILL, again
// and again, and checks its transcript: every line on disk parses (but a
// last one cut short), each agent's events are in Seq order, and what is
// missing of the events it published is the most recent and at most
// transcriptLossBound bytes.
func TestTranscriptSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	for round := range 8 {
		t.Run(fmt.Sprint("round ", round), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBusyRun$", "-test.count=1")
			cmd.Env = append(os.Environ(), "TROUPE_TEST_TRANSCRIPT_DIR="+dir)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

			type seen struct {
				agent string
				size  int
				at    time.Time
			}
			var mu sync.Mutex
			published := map[uint64]seen{}
			var path string
			ready := make(chan struct{})
			go func() {
				// A line the kill cut short is no line: it could parse as
				// one with its last number cut.
				br := bufio.NewReader(stdout)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					line = strings.TrimSuffix(line, "\n")
					if p, ok := strings.CutPrefix(line, "path "); ok {
						path = p
						close(ready)
						continue
					}
					f := strings.Fields(line)
					if len(f) != 4 {
						continue
					}
					seq, err1 := strconv.ParseUint(f[0], 10, 64)
					size, err2 := strconv.Atoi(f[2])
					at, err3 := strconv.ParseInt(f[3], 10, 64)
					if err1 == nil && err2 == nil && err3 == nil {
						mu.Lock()
						published[seq] = seen{f[1], size, time.Unix(0, at)}
						mu.Unlock()
					}
				}
			}()
			select {
			case <-ready:
			case <-time.After(30 * time.Second):
				t.Fatal("the child never started")
			}
			// Let it get busy, a different time each round.
			time.Sleep(time.Duration(150+40*round) * time.Millisecond)
			killed := time.Now()
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			_ = cmd.Wait()

			data, err := os.ReadFile(path)
			if !os.IsNotExist(err) { // no file: nothing reached the disk
				require.NoError(t, err)
			}
			lines := strings.Split(string(data), "\n")
			onDisk := map[uint64]bool{}
			last := map[string]uint64{}
			for i, line := range lines {
				if line == "" {
					continue
				}
				var e manager.Event
				if err := json.Unmarshal([]byte(line), &e); err != nil {
					require.Equal(t, len(lines)-1, i, "only the very last line may be cut short (line %d of %d): %v", i+1, len(lines), err)
					continue
				}
				require.Greater(t, e.Seq, last[e.AgentID], "agent %s goes back in Seq at line %d", e.AgentID, i+1)
				last[e.AgentID] = e.Seq
				onDisk[e.Seq] = true
			}
			mu.Lock()
			defer mu.Unlock()
			// What is missing is the most recent: per agent, nothing on disk
			// comes after a missing event; and all of it fits the bound.
			lostBytes, lost := 0, 0
			var oldest time.Duration
			for seq, p := range published {
				if onDisk[seq] {
					continue
				}
				lost++
				lostBytes += p.size
				oldest = max(oldest, killed.Sub(p.at))
				assert.Less(t, last[p.agent], seq, "agent %s: event %d is missing but a later one is on disk", p.agent, seq)
			}
			assert.LessOrEqual(t, lostBytes, transcriptLossBound, "%d events (%d bytes) published before the kill are missing from %s (%d published, %d on disk)",
				lost, lostBytes, filepath.Base(path), len(published), len(onDisk))
			assert.LessOrEqual(t, oldest, transcriptLossAge, "an event published %s before the kill is missing", oldest)
			t.Logf("%d of %d events lost (%d bytes), the oldest published %s before the kill", lost, len(published), lostBytes, oldest)
		})
	}
}
