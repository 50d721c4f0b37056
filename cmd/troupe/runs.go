package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/troupe-dev/troupe/manager"
)

// runRecord is what a transcript says about its run.
type runRecord struct {
	ID string `json:"id"`
	// ParentID, Label and Group place a subagent's run in its tree: the
	// agent that delegated it, its label, the group it was spawned in.
	ParentID string `json:"parent_id,omitempty"`
	Label    string `json:"label,omitempty"`
	Group    string `json:"group,omitempty"`
	Depth    int    `json:"depth,omitempty"`
	Type     string `json:"type"`
	Task     string `json:"task"`
	State    string `json:"state"`
	// Note says why a run is interrupted or unreadable, or what else is
	// wrong with its transcript.
	Note       string         `json:"note,omitempty"`
	Reason     manager.Reason `json:"reason,omitempty"`
	Started    time.Time      `json:"started"`
	Usage      manager.Usage  `json:"usage"`
	Transcript string         `json:"transcript"`
	Output     string         `json:"output,omitempty"`
}

// The states runs list shows besides the manager's own.
const (
	// stateInterrupted: the transcript has no completed event and no
	// process is running it any more (see inspectRun).
	stateInterrupted = "interrupted"
	// stateUnreadable: not a transcript: empty, garbage, not a regular file.
	stateUnreadable = "unreadable"
)

// staleAfter is how long a transcript without a completed event must be
// quiet before it is taken for interrupted, where runs hold no lock.
const staleAfter = time.Hour

func recordOf(path string, events []manager.Event) (r runRecord, spawned, completed bool) {
	r = runRecord{ID: strings.TrimSuffix(filepath.Base(path), ".jsonl"), Transcript: path}
	for _, e := range events {
		switch e.Kind {
		case manager.EventSpawned:
			r.Type, r.Task, r.Started = e.Type, e.Text, e.Time
			r.ParentID, r.Label, r.Group, r.Depth = e.ParentID, e.Label, e.Group, e.Depth
			r.State = e.State.String()
			spawned = true
		case manager.EventState:
			r.State = e.State.String()
		case manager.EventCompleted:
			r.State, r.Reason, r.Usage, r.Output = e.State.String(), e.Reason, e.Usage, e.Text
			completed = true
		}
	}
	return r, spawned, completed
}

// inspectRun reads a transcript and says what became of its run:
//   - the state of its completed event, when it has one;
//   - unreadable, when it is empty, not JSON lines, has no spawned event,
//     or is not a regular file;
//   - otherwise the run did not finish. It is running while a troupe
//     process holds the lock the command line takes on the transcript of
//     each run it starts (the system drops the lock when the process ends,
//     however it ends); with no lock held it is interrupted: the process
//     was killed or crashed. (Where locks are not supported, a transcript
//     quiet for staleAfter is taken for interrupted.) A subagent runs in
//     the process of the top-level agent of its tree: the lock on that
//     agent's transcript says whether it is running.
//
// Runs written by other programs through the manager hold no lock, and
// show as interrupted until they complete.
func inspectRun(path string) (runRecord, []manager.Event) {
	events, err := manager.ReadTranscript(path)
	r, spawned, completed := recordOf(path, events)
	why := func(err error) string {
		return strings.TrimPrefix(strings.TrimPrefix(unwrapPath(err).Error(), path), ": ")
	}
	switch {
	case err != nil && !spawned:
		r.State, r.Note = stateUnreadable, why(err)
		return r, events
	case len(events) == 0:
		r.State, r.Note = stateUnreadable, "empty: the run wrote nothing"
		return r, events
	case !spawned:
		r.State, r.Note = stateUnreadable, "no spawned event: not a troupe transcript"
		return r, events
	case err != nil:
		r.Note = why(err) // a bad line later on: what came before is shown
	}
	if !completed && !running(path) && !treeRunning(filepath.Dir(path), r.ParentID) {
		r.State = stateInterrupted
		r.Note = joinNotes("ended without a completed event: the process running it was killed or crashed", r.Note)
	}
	return r, events
}

func joinNotes(a, b string) string {
	if b == "" {
		return a
	}
	return a + "; " + b
}

// running reports whether a troupe process is still running the run
// whose transcript is at path.
func running(path string) bool {
	if !lockSupported {
		fi, err := os.Stat(path)
		return err == nil && time.Since(fi.ModTime()) < staleAfter
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return lockedByOther(f)
}

// maxTreeWalk bounds how many ancestors treeRunning reads: deeper than
// any tree the manager allows.
const maxTreeWalk = 16

// treeRunning reports whether the run with ID parent, or the nearest
// ancestor of it with a transcript in dir, is running: the top-level
// agent of a tree holds the lock for all of it.
func treeRunning(dir, parent string) bool {
	for range maxTreeWalk {
		if parent == "" || strings.ContainsAny(parent, `/\`) {
			return false
		}
		path := filepath.Join(dir, parent+".jsonl")
		if running(path) {
			return true
		}
		events, _ := manager.ReadTranscript(path)
		r, spawned, _ := recordOf(path, events)
		if !spawned {
			return false
		}
		parent = r.ParentID
	}
	return false
}

// runTree orders records for display: top-level runs newest first, each
// followed by its subagents' runs, oldest first, indented by Depth. A run
// whose parent has no transcript in the list stands at the top.
func runTree(records []runRecord) []runRecord {
	byID := map[string]bool{}
	for _, r := range records {
		byID[r.ID] = true
	}
	children := map[string][]runRecord{}
	var roots []runRecord
	for _, r := range records {
		if r.ParentID != "" && byID[r.ParentID] && r.ParentID != r.ID {
			children[r.ParentID] = append(children[r.ParentID], r)
		} else {
			roots = append(roots, r)
		}
	}
	slices.SortFunc(roots, func(x, y runRecord) int { return y.Started.Compare(x.Started) })
	out := make([]runRecord, 0, len(records))
	seen := map[string]bool{}
	var add func(r runRecord, depth int)
	add = func(r runRecord, depth int) {
		if seen[r.ID] {
			return
		}
		seen[r.ID] = true
		r.Depth = depth
		out = append(out, r)
		kids := children[r.ID]
		slices.SortFunc(kids, func(x, y runRecord) int { return x.Started.Compare(y.Started) })
		for _, k := range kids {
			add(k, depth+1)
		}
	}
	for _, r := range roots {
		add(r, 0)
	}
	return out
}

// listRuns reads every transcript in dir, in tree order.
func listRuns(dir string) ([]runRecord, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var records []runRecord
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".jsonl" {
			continue
		}
		rec, _ := inspectRun(filepath.Join(dir, e.Name()))
		rec.Output = ""
		records = append(records, rec)
	}
	return runTree(records), nil
}

// lockTranscript takes, for the life of this process, the lock that tells
// runs list a run is still going: see inspectRun. It creates the
// transcript if the manager has not yet; the manager appends to it.
func lockTranscript(dir, id string) (release func()) {
	if !lockSupported {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return func() {}
	}
	f, err := os.OpenFile(filepath.Join(dir, id+".jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return func() {}
	}
	if err := holdLock(f); err != nil {
		f.Close()
		return func() {}
	}
	return func() { f.Close() }
}

func (a *app) runsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: "runs", Short: "List past runs and show their transcripts"}
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List recorded runs, newest first, subagents' runs under their parent's",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			records, err := listRuns(a.runsDir())
			if err != nil {
				return err
			}
			if asJSON {
				if records == nil {
					records = []runRecord{}
				}
				return writeJSON(a.stdout, records)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTYPE\tSTATE\tSTARTED\tTASK")
			for _, r := range records {
				started, task := "-", clip(r.Task, 60)
				if !r.Started.IsZero() {
					started = r.Started.Local().Format(time.DateTime)
				}
				if r.Note != "" {
					task = joinNotes(task, "("+clip(r.Note, 80)+")")
					if r.Task == "" {
						task = "(" + clip(r.Note, 80) + ")"
					}
				}
				id := r.ID
				if r.Depth > 0 {
					id = strings.Repeat("  ", r.Depth-1) + "└ " + id
				}
				if r.Label != "" {
					task = "[" + r.Label + "] " + task
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", id, orDash(r.Type), r.State, started, task)
			}
			return tw.Flush()
		},
	}, &cobra.Command{
		Use:   "show ID",
		Short: "Show one run's transcript",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if strings.ContainsAny(id, `/\`) || id == "" {
				return usagef("run ID %q: give the ID that 'troupe runs list' prints", id)
			}
			path := filepath.Join(a.runsDir(), id+".jsonl")
			if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
				return usagef("no run %q in %s; 'troupe runs list' shows the runs there are", id, a.runsDir())
			}
			r, events := inspectRun(path)
			if r.State == stateUnreadable {
				return fmt.Errorf("run %s: the transcript %s is unreadable: %s", id, path, r.Note)
			}
			if asJSON {
				return writeJSON(a.stdout, events)
			}
			for _, e := range events {
				if line := progressLine(e, false); line != "" {
					fmt.Fprintln(a.stdout, line)
				}
			}
			if r.Output != "" {
				fmt.Fprintf(a.stdout, "\n%s\n", strings.TrimSpace(r.Output))
			}
			if r.Note != "" {
				fmt.Fprintf(a.stdout, "\n%s: %s\n", r.State, r.Note)
			}
			showFamily(a.stdout, r, filepath.Dir(path))
			return nil
		},
	})
	return cmd
}

// showFamily names, after a run's transcript, the run it was delegated
// by and the runs it delegated to, with the command that shows each.
func showFamily(w io.Writer, r runRecord, dir string) {
	if r.ParentID != "" {
		fmt.Fprintf(w, "\ndelegated by run %s ('troupe runs show %s')\n", r.ParentID, r.ParentID)
	}
	runs, err := listRuns(dir)
	if err != nil {
		return
	}
	var kids []runRecord
	for _, k := range runs {
		if k.ParentID == r.ID && k.ID != r.ID {
			kids = append(kids, k)
		}
	}
	if len(kids) == 0 {
		return
	}
	fmt.Fprintf(w, "\nsubagents ('troupe runs show ID' shows one):\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, k := range kids {
		task := clip(k.Task, 60)
		if k.Label != "" {
			task = "[" + k.Label + "] " + task
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", k.ID, orDash(k.Type), k.State, task)
	}
	_ = tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
