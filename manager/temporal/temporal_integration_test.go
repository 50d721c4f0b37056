//go:build integration

package temporal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
	"github.com/troupe-dev/troupe/builtin/workspace"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
	"github.com/troupe-dev/troupe/manager/temporal/internal/devserver"
)

// cluster is a dev server and a client of it.
func cluster(t *testing.T) client.Client {
	t.Helper()
	srv := devserver.Start(t)
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Namespace: srv.Namespace(),
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// startWorker runs a worker in this process on queue, with a manager of
// model.
func startWorker(t *testing.T, c client.Client, queue, root string, model llms.Model) {
	t.Helper()
	w, err := NewWorker(c, WorkerConfig{Manager: newManager(t, registry(t), model, nil), TaskQueue: queue, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
}

func remoteManager(t *testing.T, c client.Client, queue, root string) *manager.Manager {
	t.Helper()
	b, err := New(Config{Client: c, TaskQueue: queue, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	return newManager(t, registry(t), nil, b)
}

func run(t *testing.T, m *manager.Manager, task string) manager.Result {
	t.Helper()
	a, err := m.Spawn(context.Background(), manager.SpawnRequest{Type: "lead", Task: task})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := a.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestIntegrationManagerRunsATreeOnTemporalAsInProcess(t *testing.T) {
	c := cluster(t)
	root := t.TempDir()
	startWorker(t, c, "tree", root, treeModel())
	m := remoteManager(t, c, "tree", root)
	sub := m.Subscribe()
	defer sub.Close()

	got := run(t, m, "look into it")
	want := run(t, newManager(t, registry(t), treeModel(), nil), "look into it")
	if got.State != manager.Completed || normal(got.Output) != normal(want.Output) {
		t.Fatalf("on Temporal: %s (%s) %q; in process: %q", got.State, got.Error, got.Output, want.Output)
	}
	if got.Usage != want.Usage || got.OwnUsage != want.OwnUsage || got.Turns != want.Turns || got.ToolCalls != want.ToolCalls {
		t.Errorf("on Temporal: usage %+v own %+v, %d turns, %d tool calls; in process: %+v own %+v, %d turns, %d tool calls",
			got.Usage, got.OwnUsage, got.Turns, got.ToolCalls, want.Usage, want.OwnUsage, want.Turns, want.ToolCalls)
	}

	// The subscriber saw the tree: each child spawned, ran and ended,
	// before the lead ended.
	ended := map[string]bool{}
	spawned := map[string]bool{}
	var seen []string
	for e := range sub.C() {
		seen = append(seen, fmt.Sprintf("%s:%s:%s", e.AgentID[:4], e.Kind, e.State))
		switch {
		case e.Kind == manager.EventSpawned && e.ParentID == got.ID:
			spawned[e.AgentID] = true
		case e.Kind == manager.EventCompleted && e.AgentID != got.ID:
			ended[e.AgentID] = spawned[e.AgentID] && e.State == manager.Completed
		}
		if e.Kind == manager.EventCompleted && e.AgentID == got.ID {
			break
		}
	}
	if len(spawned) != 2 || len(ended) != 2 {
		t.Errorf("the subscriber saw %d children spawned and %d ended, before the lead's end; want 2 and 2 (%v)", len(spawned), len(ended), seen)
	}
	for id, ok := range ended {
		if !ok {
			t.Errorf("child %s: its end came without its spawn, or it did not complete", id)
		}
	}
}

func TestIntegrationCancelReachesEveryChild(t *testing.T) {
	c := cluster(t)
	root := t.TempDir()
	startWorker(t, c, "cancel", root, blockingModel(t))
	m := remoteManager(t, c, "cancel", root)
	sub := m.Subscribe()
	defer sub.Close()
	a, err := m.Spawn(context.Background(), manager.SpawnRequest{Type: "lead", Task: "wait for them"})
	if err != nil {
		t.Fatal(err)
	}
	var children []string
	for e := range sub.C() {
		if e.Kind == manager.EventState && e.State == manager.Running && e.ParentID == a.ID() {
			children = append(children, e.AgentID)
		}
		if len(children) == 2 {
			break
		}
	}
	a.Cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := a.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != manager.Cancelled {
		t.Fatalf("the lead ended %s (%s), want cancelled", r.State, r.Error)
	}
	for _, id := range children {
		d, err := c.DescribeWorkflow(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		if st := d.RawResponse.WorkflowExecutionInfo.Status; st == enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Errorf("child %s is still running after its lead ended", id)
		}
	}
}

// workerProcess is a worker in a process of its own: the test binary.
type workerProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startWorkerProcess starts a worker process of the crash tree's types;
// with a state directory, of the tree that changes files, its workspaces
// there.
func startWorkerProcess(t testing.TB, hostPort, queue, root, log string, delay time.Duration, state string) *workerProcess {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	spec := []string{hostPort, queue, root, log, delay.String()}
	if state != "" {
		spec = append(spec, state)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = []string{workerEnv + "=" + strings.Join(spec, " "), "GORACE=atexit_sleep_ms=0",
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &workerProcess{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(w.done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-w.done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-w.done
		}
	})
	return w
}

// modelLog reads the crash model's log: the calls done, by key, and the
// calls started and not done, by the process that started them.
func modelLog(t *testing.T, path string) (done map[string]int, open map[string]int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	done, open = map[string]int{}, map[string]int{}
	started := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "start":
			pid, _ := strconv.Atoi(f[2])
			started[f[1]] = pid
		case len(f) == 2 && f[0] == "done":
			done[f[1]]++
			delete(started, f[1])
		}
	}
	for key, pid := range started {
		open[key] = pid
	}
	return done, open
}

func TestIntegrationTreeSurvivesAWorkerKilledMidCall(t *testing.T) {
	srv := devserver.Start(t)
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	root, log := t.TempDir(), filepath.Join(t.TempDir(), "model.log")
	workers := map[int]*workerProcess{}
	for range 3 {
		w := startWorkerProcess(t, srv.HostPort(), "crash", root, log, crashStepDelay, "")
		workers[w.cmd.Process.Pid] = w
	}
	reg, err := crashRegistry()
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Client: c, TaskQueue: "crash", Root: root, Heartbeat: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m, err := manager.New(manager.Config{Logger: slog.New(slog.DiscardHandler), Registry: reg, Backend: b, DefaultModel: "scripted", MaxDepth: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	budget := agenttypes.Budget{MaxTokens: 20000, MaxToolCalls: 12}
	a, err := m.Spawn(context.Background(), manager.SpawnRequest{Type: "lead", Task: "the whole", Budget: budget})
	if err != nil {
		t.Fatal(err)
	}

	killed := killOneMidCall(t, log, workers)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	killedAt := time.Now()
	got, err := a.Wait(ctx)
	t.Logf("the run ended %v after the kill", time.Since(killedAt))
	if err != nil {
		t.Fatal(err)
	}

	// The same tree in process, for the result and the calls it makes.
	inLog := filepath.Join(t.TempDir(), "model.log")
	model := crashModel(inLog, crashStepDelay, false)
	local, err := manager.New(manager.Config{Logger: slog.New(slog.DiscardHandler), Registry: reg, DefaultModel: "scripted", MaxDepth: 2,
		Models: manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil })})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close(context.Background())
	la, err := local.Spawn(context.Background(), manager.SpawnRequest{Type: "lead", Task: "the whole", Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	want, err := la.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if got.State != manager.Completed || normal(got.Output) != normal(want.Output) || got.Usage != want.Usage {
		t.Fatalf("after a worker was killed: %s (%s), usage %+v, %q\nin process: %s, usage %+v, %q",
			got.State, got.Error, got.Usage, got.Output, want.State, want.Usage, want.Output)
	}
	if got.Usage.Total() > budget.MaxTokens {
		t.Errorf("the tree spent %d tokens of its budget of %d", got.Usage.Total(), budget.MaxTokens)
	}
	n := checkEachCallOnce(t, log, inLog)
	t.Logf("killed worker %d mid-call; %d model calls, each completed once", killed, n)
}

// killOneMidCall waits until a few of the crash tree's model calls are
// done, then SIGKILLs the worker in the middle of one, and returns its
// PID.
func killOneMidCall(t *testing.T, log string, workers map[int]*workerProcess) int {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		done, open := modelLog(t, log)
		if len(done) < 3 {
			continue
		}
		for _, pid := range open {
			if w := workers[pid]; w != nil {
				if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				<-w.done
				return pid
			}
		}
	}
	t.Fatal("no worker was found in the middle of a model call to kill")
	return 0
}

// checkEachCallOnce checks that the model calls logged in log, on the
// cluster, are those logged in inLog, in process, each completed once,
// and returns how many there were.
func checkEachCallOnce(t *testing.T, log, inLog string) int {
	t.Helper()
	done, _ := modelLog(t, log)
	wantDone, _ := modelLog(t, inLog)
	for key := range wantDone {
		switch n := done[key]; {
		case n == 0:
			t.Errorf("model call %s was lost", key)
		case n > 1:
			t.Errorf("model call %s was completed %d times", key, n)
		}
	}
	if len(done) != len(wantDone) {
		t.Errorf("%d model calls were completed on the cluster, %d in process", len(done), len(wantDone))
	}
	return len(done)
}

// A tree whose agents change files, on three worker processes sharing a
// state directory, survives one of them killed mid-call: its agents'
// workspaces are reopened by the others, and the lead's changes hold
// every helper's file, as in process.
func TestIntegrationATreeThatChangesFilesSurvivesAWorkerKilledMidCall(t *testing.T) {
	srv := devserver.Start(t)
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	root, state, log := editRepo(t), t.TempDir(), filepath.Join(t.TempDir(), "model.log")
	workers := map[int]*workerProcess{}
	for range 3 {
		w := startWorkerProcess(t, srv.HostPort(), "crash-edits", root, log, crashStepDelay, state)
		workers[w.cmd.Process.Pid] = w
	}
	reg, err := crashEditRegistry()
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Client: c, TaskQueue: "crash-edits", Root: root, Heartbeat: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m, err := manager.New(manager.Config{Logger: slog.New(slog.DiscardHandler), Registry: reg, Backend: b, DefaultModel: "scripted", MaxDepth: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	req := manager.SpawnRequest{Type: "lead", Task: "the whole", Dir: root, Budget: agenttypes.Budget{MaxTokens: 40000, MaxToolCalls: 20}}
	sub := m.Subscribe()
	defer sub.Close()
	a, err := m.Spawn(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	killed := killOneMidCall(t, log, workers)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	killedAt := time.Now()
	got, err := a.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the run ended %v after the kill", time.Since(killedAt))

	inLog := filepath.Join(t.TempDir(), "model.log")
	model := crashModel(inLog, crashStepDelay, true)
	spaces, err := workspace.New(workspace.Config{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer spaces.Close()
	local, err := manager.New(manager.Config{Logger: slog.New(slog.DiscardHandler), Registry: reg, DefaultModel: "scripted", MaxDepth: 2, Workspaces: spaces,
		Models: manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil })})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close(context.Background())
	la, err := local.Spawn(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want, err := la.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if got.State != manager.Completed || want.State != manager.Completed || got.Usage != want.Usage {
		t.Fatalf("after a worker was killed: %s (%s), usage %+v\nin process: %s (%s), usage %+v\nthe tree on Temporal:\n%s",
			got.State, got.Error, got.Usage, want.State, want.Error, want.Usage, treeEnds(sub, got.ID))
	}
	if got.Changes == nil || want.Changes == nil || strings.Join(got.Changes.Added, " ") != strings.Join(want.Changes.Added, " ") || len(got.Changes.Added) != 4 {
		t.Fatalf("the lead's changes add %v; in process %v; want the four helpers' files", got.Changes, want.Changes)
	}
	for _, name := range got.Changes.Added {
		task := strings.TrimSuffix(strings.ReplaceAll(name, "_", " "), ".txt")
		if text := gitIn(t, root, "show", got.Changes.Head+":"+name); text != task {
			t.Errorf("%s on the lead's branch holds %q; want %q", name, text, task)
		}
	}
	if list := gitIn(t, root, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("workspaces are left open after the run:\n%s", list)
	}
	n := checkEachCallOnce(t, log, inLog)
	t.Logf("killed worker %d mid-call; %d model calls, each completed once; the lead's changes: %s", killed, n, got.Changes.Diffstat)
}

// recordEnv names a directory to write the replay test's histories to
// (testdata/histories holds the committed ones).
const recordEnv = "TROUPE_TEMPORAL_RECORD"

// history returns a workflow's history in the JSON form the SDK's
// replayer reads.
func history(t *testing.T, c client.Client, id string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := &historypb.History{}
	it := c.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, e)
	}
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: " "}.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	// Which process on which machine ran a step is no part of a run.
	return identityPattern.ReplaceAll(b, []byte(`"identity": "worker"`))
}

var identityPattern = regexp.MustCompile(`"identity": *"[^"]*"`)

func TestIntegrationHistoriesReplayThroughTheWorkflow(t *testing.T) {
	c := cluster(t)
	dir := t.TempDir()
	if out := os.Getenv(recordEnv); out != "" {
		dir = out
	}
	for _, tc := range []struct {
		name  string
		model llms.Model
	}{
		{"tree", treeModel()},                            // children delegated and waited for
		{"background", backgroundModel(t, false, false)}, // a background group, collected
		{"ask", askingModel()},                           // a child's question, signalled and answered
	} {
		root := t.TempDir()
		startWorker(t, c, "replay-"+tc.name, root, tc.model)
		m := remoteManager(t, c, "replay-"+tc.name, root)
		sub := m.Subscribe()
		lead := run(t, m, "look into it")
		if lead.State != manager.Completed {
			t.Fatalf("%s: the lead ended %s: %s", tc.name, lead.State, lead.Error)
		}
		var child string
		for e := range sub.C() {
			if e.Kind == manager.EventSpawned && e.ParentID == lead.ID {
				child = e.AgentID
				break
			}
		}
		sub.Close()
		histories := map[string][]byte{tc.name + "-lead.json": history(t, c, lead.ID), tc.name + "-child.json": history(t, c, child)}
		for name, b := range histories {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(agentWorkflow, workflow.RegisterOptions{Name: WorkflowName})
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, path); err != nil {
				t.Errorf("%s does not replay: %v", name, err)
			}
		}
	}
}

func TestIntegrationCancelOfARunNoWorkerServesIsBounded(t *testing.T) {
	c := cluster(t)
	b, err := New(Config{Client: c, TaskQueue: "nobody", Root: t.TempDir(), CancelWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m := newManager(t, registry(t), nil, b)
	sub := m.Subscribe()
	defer sub.Close()
	a, err := m.Spawn(context.Background(), manager.SpawnRequest{Type: "lead", Task: "nobody takes it"})
	if err != nil {
		t.Fatal(err)
	}
	for e := range sub.C() { // the run is the backend's once it runs
		if e.Kind == manager.EventState && e.State == manager.Running {
			break
		}
	}
	a.Cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := a.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != manager.Cancelled || !strings.Contains(r.Error, "did not end within 1s of its cancel") {
		t.Fatalf("ended %s (%s): %s; want it cancelled, and the backend to say it gave up waiting", r.State, r.Reason, r.Error)
	}
}

func TestIntegrationAChildsQuestionIsAnsweredByItsParent(t *testing.T) {
	c := cluster(t)
	root := t.TempDir()
	startWorker(t, c, "ask", root, askingModel())
	got := run(t, remoteManager(t, c, "ask", root), "look into it")
	want := run(t, newManager(t, registry(t), askingModel(), nil), "look into it")
	if got.State != manager.Completed || normal(got.Output) != normal(want.Output) || got.Usage != want.Usage {
		t.Fatalf("on Temporal: %s (%s) %+v %q\nin process: %+v %q", got.State, got.Error, got.Usage, got.Output, want.Usage, want.Output)
	}
	if !strings.Contains(got.Output, "gamma") {
		t.Errorf("the helper did not get its parent's answer: %q", got.Output)
	}
}

func TestIntegrationALongRunGoesOnInANewWorkflowRun(t *testing.T) {
	c := cluster(t)
	root := t.TempDir()
	startWorker(t, c, "long", root, treeModel())
	b, err := New(Config{Client: c, TaskQueue: "long", Root: root, HistoryEvents: 10})
	if err != nil {
		t.Fatal(err)
	}
	m := newManager(t, registry(t), nil, b)
	sub := m.Subscribe()
	defer sub.Close()
	got := run(t, m, "look into it")
	want := run(t, newManager(t, registry(t), treeModel(), nil), "look into it")
	if got.State != manager.Completed || normal(got.Output) != normal(want.Output) || got.Usage != want.Usage || got.Turns != want.Turns {
		t.Fatalf("on Temporal: %s (%s) %+v, %d turns, %q\nin process: %+v, %d turns, %q", got.State, got.Error, got.Usage, got.Turns, got.Output, want.Usage, want.Turns, want.Output)
	}
	runs := 0
	it, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: "WorkflowId = '" + got.ID + "'"})
	if err != nil {
		t.Fatal(err)
	}
	runs = len(it.Executions)
	if runs < 2 {
		t.Fatalf("the lead's workflow ran as %d workflow run(s); with a limit of 10 history events it should have gone on in a new one", runs)
	}
	// The lead's own events came through from every run: its two model
	// calls, the second in the run it went on in.
	calls := 0
	for e := range sub.C() {
		if e.Kind == manager.EventModelCall && e.AgentID == got.ID {
			calls++
		}
		if e.Kind == manager.EventCompleted && e.AgentID == got.ID {
			break
		}
	}
	if calls != 2 {
		t.Errorf("the subscriber saw %d of the lead's model calls, want 2", calls)
	}
}

func TestIntegrationAnAgentResumesAnEndedOnesConversation(t *testing.T) {
	resumeTwice := func(t *testing.T, m *manager.Manager) manager.Result {
		first := runType(t, m, manager.SpawnRequest{Type: "helper", Task: "say alpha"})
		return runType(t, m, manager.SpawnRequest{Type: "helper", Task: "now say beta", Resume: first.ID})
	}
	inModel := treeModel()
	want := resumeTwice(t, newManager(t, registry(t), inModel, nil))

	c := cluster(t)
	root := t.TempDir()
	model := treeModel()
	startWorker(t, c, "resume", root, model)
	got := resumeTwice(t, remoteManager(t, c, "resume", root))
	if got.State != manager.Completed || normal(got.Output) != normal(want.Output) || got.Usage != want.Usage {
		t.Fatalf("on Temporal: %s (%s) %+v %q\nin process: %+v %q", got.State, got.Error, got.Usage, got.Output, want.Usage, want.Output)
	}
	// The resumed agent's first model call was sent the first agent's
	// whole conversation, then its own task, as in process.
	gotReqs, wantReqs := model.Requests(), inModel.Requests()
	if len(gotReqs) != len(wantReqs) || len(gotReqs) < 3 {
		t.Fatalf("%d model calls on Temporal, %d in process", len(gotReqs), len(wantReqs))
	}
	g, w := gotReqs[2].Messages, wantReqs[2].Messages
	if len(g) != len(w) || scripted.Text(g[len(g)-1]) != "now say beta" || len(g) < 5 {
		t.Fatalf("the resumed agent's first call had %d messages (last %q); in process %d", len(g), scripted.Text(g[len(g)-1]), len(w))
	}
	for i := range w {
		if scripted.Text(g[i]) != scripted.Text(w[i]) || g[i].Role != w[i].Role {
			t.Errorf("message %d: %s %q on Temporal, %s %q in process", i, g[i].Role, scripted.Text(g[i]), w[i].Role, scripted.Text(w[i]))
		}
	}
}

func runType(t *testing.T, m *manager.Manager, req manager.SpawnRequest) manager.Result {
	t.Helper()
	a, err := m.Spawn(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := a.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var agentIDPattern = regexp.MustCompile(`Agent ID: ([0-9a-f-]{36})`)

// resumingLeadModel plays a lead that delegates a task, then a second
// one that resumes the first child's conversation, and reports; its
// helpers are treeModel's.
func resumingLeadModel() *scripted.Model {
	helper := treeModel()
	step := scripted.Step{Func: func(ctx context.Context, msgs []llms.MessageContent) scripted.Step {
		if !strings.Contains(scripted.Text(msgs[0]), "You lead.") {
			resp, err := helper.GenerateContent(ctx, msgs)
			if err != nil {
				return scripted.Step{Err: err}
			}
			c := resp.Choices[0]
			st := scripted.Step{Text: c.Content, InputTokens: 10, OutputTokens: 2}
			for _, tc := range c.ToolCalls {
				st.Calls = append(st.Calls, scripted.Call{Name: tc.FunctionCall.Name, Args: tc.FunctionCall.Arguments})
			}
			return st
		}
		results := scripted.ToolResults(msgs)
		switch len(results) {
		case 0:
			return scripted.Step{InputTokens: 100, OutputTokens: 20, Calls: []scripted.Call{{Name: "delegate", Args: scripted.JSON(map[string]any{
				"tasks": []map[string]any{{"label": "a", "type": "helper", "prompt": "say alpha"}}})}}}
		case 1:
			id := agentIDPattern.FindStringSubmatch(results[0].Content)
			if id == nil {
				return scripted.Step{Text: "no agent ID in " + results[0].Content}
			}
			return scripted.Step{InputTokens: 100, OutputTokens: 20, Calls: []scripted.Call{{Name: "delegate", Args: scripted.JSON(map[string]any{
				"tasks": []map[string]any{{"label": "b", "type": "helper", "prompt": "now say beta", "resume": id[1]}}})}}}
		}
		return scripted.Step{InputTokens: 300, OutputTokens: 30, Text: "summary: " + results[len(results)-1].Content}
	}}
	return scripted.New(step, step, step, step, step, step)
}

func TestIntegrationAChildResumesItsSiblingsConversation(t *testing.T) {
	want := run(t, newManager(t, registry(t), resumingLeadModel(), nil), "look into it")
	c := cluster(t)
	root := t.TempDir()
	startWorker(t, c, "resume-child", root, resumingLeadModel())
	got := run(t, remoteManager(t, c, "resume-child", root), "look into it")
	if got.State != manager.Completed || normal(got.Output) != normal(want.Output) || got.Usage != want.Usage {
		t.Fatalf("on Temporal: %s (%s) %+v %q\nin process: %s %+v %q", got.State, got.Error, got.Usage, got.Output, want.State, want.Usage, want.Output)
	}
	if strings.Contains(got.Output, "not an ended child") || !strings.Contains(got.Output, "[b] ok") {
		t.Fatalf("the second child did not resume the first: %q", got.Output)
	}
}

// lateOpen is a worker's workspaces whose Open finishes only once the
// step that asked for it has been cancelled: the workflow may never hear
// of the workspace it opened.
type lateOpen struct {
	*workspace.Provider
	entered, opened chan struct{}
}

func (l *lateOpen) Open(ctx context.Context, req agenttypes.WorkspaceRequest) (agenttypes.Workspace, error) {
	close(l.entered)
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		return nil, errors.New("the step was never cancelled")
	}
	ws, err := l.Provider.Open(context.WithoutCancel(ctx), req)
	close(l.opened)
	return ws, err
}

func TestIntegrationAWorkspaceOpenedAsItsStartWasCancelledIsClosed(t *testing.T) {
	c := cluster(t)
	repo, state := editRepo(t), t.TempDir()
	reg := agenttypes.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatal(err)
	}
	spaces, err := workspace.New(workspace.Config{StateDir: state, ExcludesFile: filepath.Join(state, "no-excludes")})
	if err != nil {
		t.Fatal(err)
	}
	defer spaces.Close()
	late := &lateOpen{Provider: spaces, entered: make(chan struct{}), opened: make(chan struct{})}
	wm, err := manager.New(manager.Config{
		Logger: slog.New(slog.DiscardHandler), Registry: reg, Workspaces: late, DefaultModel: "scripted", MaxDepth: 1,
		Models: manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return editingModel(), nil }),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer wm.Close(context.Background())
	w, err := NewWorker(c, WorkerConfig{Manager: wm, TaskQueue: "late", Root: repo})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	b, err := New(Config{Client: c, TaskQueue: "late", Root: repo})
	if err != nil {
		t.Fatal(err)
	}
	m := newManager(t, reg, nil, b)
	a, err := m.Spawn(context.Background(), manager.SpawnRequest{Type: "general", Task: "fix both ends", Dir: repo})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-late.entered:
	case <-time.After(time.Minute):
		t.Fatal("the start step never opened the workspace")
	}
	if err := m.Cancel(a.ID()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := a.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.State != manager.Cancelled {
		t.Fatalf("the run ended %s (%s); want cancelled", res.State, res.Error)
	}
	select {
	case <-late.opened:
	default:
		t.Fatal("the run ended before its workspace's Open did: the test did not test its case")
	}
	if list := gitIn(t, repo, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("the workspace opened as its start was cancelled is left open:\n%s", list)
	}
}

// treeEnds lists how each agent of a run ended, and its tool results, as
// a subscriber saw them, up to the run's own end: what a failure of the
// crash tests needs to be read.
func treeEnds(sub *manager.Subscription, id string) string {
	var b strings.Builder
	for e := range sub.C() {
		switch e.Kind {
		case manager.EventCompleted:
			fmt.Fprintf(&b, "  %s %s %s %s (%s) usage %+v\n", e.AgentID[:8], e.Label, e.State, e.Reason, e.Error, e.Usage)
		case manager.EventToolResult:
			fmt.Fprintf(&b, "    %s %s → %.120q\n", e.AgentID[:8], e.Tool, e.Text)
		}
		if e.Kind == manager.EventCompleted && e.AgentID == id {
			break
		}
	}
	return b.String()
}
