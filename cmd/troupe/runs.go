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

	"github.com/troupe-dev/troupe/agenttypes"
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
	// Changes are what the run changed in its workspace, when it had one.
	Changes *agenttypes.Changes `json:"changes,omitempty"`
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

// recordOf is what the events of one agent say about its run.
func recordOf(id, path string, events []manager.Event) (r runRecord, spawned, completed bool) {
	r = runRecord{ID: id, Transcript: path}
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
			r.Changes = e.Changes
			completed = true
		case manager.EventSettled:
			r.Usage = e.Usage // what children that outlived the agent's end spent, too
		}
	}
	return r, spawned, completed
}

// inspectFile reads a transcript — one per troupe process, holding the
// events of every agent it ran — and says what became of each run in it:
//   - the state of its completed event, when it has one;
//   - otherwise the run did not finish. It is running while a troupe
//     process holds the lock the command line takes on its transcript
//     (the system drops the lock when the process ends, however it ends);
//     with no lock held it is interrupted: the process was killed or
//     crashed. (Where locks are not supported, a transcript quiet for
//     staleAfter is taken for interrupted.)
//
// A file that is empty, not JSON lines, has no spawned event, or is not a
// regular file is one unreadable record named after the file. Runs written
// by other programs through the manager hold no lock, and show as
// interrupted until they complete. It returns each record with its
// agent's events, in the order the agents were spawned.
func inspectFile(path string) ([]runRecord, [][]manager.Event) {
	events, err := manager.ReadTranscript(path)
	fileID := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	why := func(err error) string {
		return strings.TrimPrefix(strings.TrimPrefix(unwrapPath(err).Error(), path), ": ")
	}
	var order []string
	byAgent := map[string][]manager.Event{}
	for _, e := range events {
		if _, ok := byAgent[e.AgentID]; !ok {
			order = append(order, e.AgentID)
		}
		byAgent[e.AgentID] = append(byAgent[e.AgentID], e)
	}
	unreadable := func(note string) ([]runRecord, [][]manager.Event) {
		return []runRecord{{ID: fileID, Transcript: path, State: stateUnreadable, Note: note}}, [][]manager.Event{events}
	}
	switch {
	case err != nil && len(events) == 0:
		return unreadable(why(err))
	case len(events) == 0:
		return unreadable("empty: the run wrote nothing")
	}
	alive := running(path)
	var records []runRecord
	var grouped [][]manager.Event
	for _, id := range order {
		r, spawned, completed := recordOf(id, path, byAgent[id])
		if !spawned {
			continue // an agent whose first events are not in this file
		}
		if err != nil {
			r.Note = why(err) // a bad line later on: what came before is shown
		}
		if !completed && !alive {
			r.State = stateInterrupted
			r.Note = joinNotes("ended without a completed event: the process running it was killed or crashed", r.Note)
		}
		records = append(records, r)
		grouped = append(grouped, byAgent[id])
	}
	if len(records) == 0 {
		return unreadable("no spawned event: not a troupe transcript")
	}
	return records, grouped
}

func joinNotes(a, b string) string {
	if b == "" {
		return a
	}
	return a + "; " + b
}

// running reports whether a troupe process is still writing the
// transcript at path.
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
		recs, _ := inspectFile(filepath.Join(dir, e.Name()))
		for _, rec := range recs {
			rec.Output = ""
			records = append(records, rec)
		}
	}
	return runTree(records), nil
}

// minIDPrefix is the fewest characters of a run's ID that name it.
const minIDPrefix = 4

// findRun returns the record and events of the run id names: an agent in
// one of dir's transcripts, or a transcript file itself (what runs list
// names for an unreadable one), by its whole ID or by a prefix of at
// least minIDPrefix characters that no other run's ID starts with. The
// TYPE#ID of progress lines names the run too. A name that is no run's,
// or more than one's, is a usage error that says what to give instead.
func findRun(dir, id string) (runRecord, []manager.Event, error) {
	if strings.ContainsAny(id, `/\`) || id == "" {
		return runRecord{}, nil, usagef("run ID %q: give the ID that 'troupe runs list' prints", id)
	}
	if path := filepath.Join(dir, id+".jsonl"); fileExists(path) {
		recs, events := inspectFile(path)
		if recs[0].State == stateUnreadable {
			return recs[0], events[0], nil
		}
		top := -1
		for i, r := range recs {
			if r.ID == id {
				return r, events[i], nil
			}
			if r.ParentID == "" {
				top = i
			}
		}
		if top >= 0 {
			// The transcript's name, as a run's last line prints it:
			// its top-level run.
			return recs[top], events[top], nil
		}
	}
	typ := ""
	if t, short, ok := strings.Cut(id, "#"); ok && short != "" {
		typ, id = t, short // TYPE#ID, as progress lines name an agent
	}
	var matches []runRecord
	var matchEvents [][]manager.Event
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".jsonl" {
			continue
		}
		recs, events := inspectFile(filepath.Join(dir, e.Name()))
		for i, r := range recs {
			switch {
			case typ != "" && r.Type != typ:
				continue
			case r.ID == id:
				return r, events[i], nil
			case len(id) >= minIDPrefix && strings.HasPrefix(r.ID, id) && !slices.ContainsFunc(matches, func(m runRecord) bool { return m.ID == r.ID }):
				matches = append(matches, r)
				matchEvents = append(matchEvents, events[i])
			}
		}
	}
	switch {
	case len(matches) == 1:
		return matches[0], matchEvents[0], nil
	case len(matches) > 1:
		return runRecord{}, nil, ambiguousID(id, matches)
	case len(id) < minIDPrefix:
		return runRecord{}, nil, usagef("no run %q in %s; give the whole ID, or at least its first %d characters, as 'troupe runs list' prints it", id, dir, minIDPrefix)
	case typ != "":
		return runRecord{}, nil, usagef("no %s run %q in %s; 'troupe runs list --type %s' shows the latest ones", typ, id, dir, typ)
	}
	return runRecord{}, nil, usagef("no run %q in %s; 'troupe runs list' shows the latest runs, 'troupe runs list --limit 0' all of them", id, dir)
}

// ambiguousID is the error for a prefix of more than one run's ID: a few
// of them, newest first, and what to give instead.
func ambiguousID(prefix string, matches []runRecord) error {
	slices.SortFunc(matches, func(x, y runRecord) int { return y.Started.Compare(x.Started) })
	const shown = 5
	var names []string
	for _, m := range matches[:min(len(matches), shown)] {
		names = append(names, fmt.Sprintf("%s (%s)", m.ID, orDash(m.Type)))
	}
	more := ""
	if len(matches) > shown {
		more = fmt.Sprintf(" and %d more", len(matches)-shown)
	}
	return usagef("run ID %q is ambiguous: it starts %d runs' IDs, %s%s; give more characters of the ID", prefix, len(matches), strings.Join(names, ", "), more)
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// lockTranscript takes, for the life of this process, the lock that tells
// runs list a run is still going: see inspectFile. It creates the
// transcript if the manager has not yet; the manager appends to it.
func lockTranscript(path string) (release func()) {
	release, _ = lockNewTranscript(path)
	return release
}

// lockNewTranscript takes the lock before the run starts, so that no
// event of the run is on disk before it; discard gives it back for a run
// that was refused, removing the file and the runs directory if they were
// made for it, so a refused command changes nothing on disk.
func lockNewTranscript(path string) (release, discard func()) {
	nothing := func() {}
	if !lockSupported || path == "" {
		return nothing, nothing
	}
	dir := filepath.Dir(path)
	// The directories MkdirAll makes, deepest first, to remove on discard.
	var made []string
	for d := dir; !fileExists(d) && d != filepath.Dir(d); d = filepath.Dir(d) {
		made = append(made, d)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nothing, nothing
	}
	madeFile := !fileExists(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nothing, nothing
	}
	if err := holdLock(f); err != nil {
		f.Close()
		return nothing, nothing
	}
	return func() { f.Close() }, func() {
		f.Close()
		if madeFile {
			_ = os.Remove(path)
		}
		for _, d := range made {
			_ = os.Remove(d) // only if empty
		}
	}
}

func (a *app) runsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: "runs", Short: "List past runs, show their transcripts, apply or discard their changes"}
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(a.runsListCommand(&asJSON), a.runsShowCommand(&asJSON), a.runsWatchCommand(), &cobra.Command{
		Use:   "diff ID",
		Short: "Print what a run changed in its workspace, as a git patch",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := a.finishedRun(args[0])
			if err != nil {
				return err
			}
			if r.Changes.Empty() {
				fmt.Fprintf(a.stderr, "run %s changed nothing\n", r.ID)
				return nil
			}
			return writePatch(a.stdout, r.ID, r.Changes, a.isTerminal(a.stdout))
		},
	}, &cobra.Command{
		Use:   "apply ID",
		Short: "Apply what a run changed to the directory it ran in, with a three-way merge",
		Long: "Apply what a run changed to the directory it ran in, with a three-way merge of the run's\n" +
			"changes and your tree as it is now, committed or not. The changed files are written and\n" +
			"nothing is staged. When the changes conflict with yours, or something is in their way,\n" +
			"nothing is changed, the conflicts are listed, and the command exits 1.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.applyRun(cmd.Context(), args[0], asJSON)
		},
	}, &cobra.Command{
		Use:   "discard ID",
		Short: "Drop what a run and its subagents changed: their branches and patches",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.discardRun(cmd.Context(), args[0])
		},
	})
	return cmd
}

// runsListCommand is troupe runs list: the latest runs, or those of a
// type or in a state.
func (a *app) runsListCommand(asJSON *bool) *cobra.Command {
	var sel runSelection
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List recorded runs, newest first, subagents' runs under their parent's",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := sel.check(); err != nil {
				return err
			}
			records, err := listRuns(a.runsDir())
			if err != nil {
				return err
			}
			records, leftOut := sel.apply(records)
			if *asJSON {
				if records == nil {
					records = []runRecord{}
				}
				err = writeJSON(a.stdout, records)
			} else {
				err = printRuns(a.stdout, records)
			}
			if err != nil {
				return err
			}
			sel.sayLeftOut(a.stderr, len(records), leftOut)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&sel.limit, "limit", defaultRunsLimit, "show the N most recent runs, each with its subagents' runs (0: all)")
	fl.StringVar(&sel.typ, "type", "", "only the runs of this agent type")
	fl.StringVar(&sel.state, "state", "", "only the runs in this state: "+strings.Join(runStates, ", "))
	return cmd
}

// defaultRunsLimit is how many runs runs list shows without --limit.
const defaultRunsLimit = 20

// runStates are the states --state takes: the manager's, and those runs
// list gives runs whose transcripts say no more.
var runStates = []string{"pending", "running", "completed", "failed", "cancelled", stateInterrupted, stateUnreadable}

// runSelection is which runs runs list shows: its --limit, --type and
// --state.
type runSelection struct {
	limit      int
	typ, state string
}

func (s runSelection) check() error {
	if s.limit < 0 {
		return usagef("--limit %d: give how many runs to show, or 0 for all of them", s.limit)
	}
	if s.state != "" && !slices.Contains(runStates, s.state) {
		return usagef("--state %q: use one of %s", s.state, strings.Join(runStates, ", "))
	}
	return nil
}

// apply keeps, of records in tree order, those of the type and state
// asked for, in tree order again (a run whose parent is left out stands
// at the top), and of those the limit most recent runs at the top, each
// with the runs below it. It returns how many runs at the top it left out.
func (s runSelection) apply(records []runRecord) (kept []runRecord, leftOut int) {
	if s.typ != "" || s.state != "" {
		var match []runRecord
		for _, r := range records {
			if (s.typ == "" || r.Type == s.typ) && (s.state == "" || r.State == s.state) {
				match = append(match, r)
			}
		}
		records = runTree(match)
	}
	tops := 0
	for i, r := range records {
		if r.Depth > 0 {
			continue
		}
		if tops++; s.limit > 0 && tops > s.limit {
			kept = records[:i]
			for _, r := range records[i:] {
				if r.Depth == 0 {
					leftOut++
				}
			}
			return kept, leftOut
		}
	}
	return records, 0
}

// sayLeftOut ends the list, on w, with how many runs it left out and how
// to see them, or with what to do when the type and state match no run.
func (s runSelection) sayLeftOut(w io.Writer, shown, leftOut int) {
	var flags []string
	if s.typ != "" {
		flags = append(flags, "--type "+s.typ)
	}
	if s.state != "" {
		flags = append(flags, "--state "+s.state)
	}
	switch {
	case leftOut > 0:
		fmt.Fprintf(w, "%s not shown; 'troupe runs list %s' lists them all\n", plural(leftOut, "older run", "older runs"), strings.Join(append(flags, "--limit 0"), " "))
	case shown == 0 && len(flags) > 0:
		fmt.Fprintf(w, "no run matches %s; 'troupe runs list' lists the latest runs\n", strings.Join(flags, " "))
	}
}

// printRuns writes records as runs list's table.
func printRuns(w io.Writer, records []runRecord) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
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
}

// finishedRun finds the run with the given ID, refusing one whose
// transcript cannot be read.
func (a *app) finishedRun(id string) (runRecord, error) {
	r, _, err := findRun(a.runsDir(), id)
	switch {
	case err != nil:
		return r, err
	case r.State == stateUnreadable:
		return r, fmt.Errorf("run %s: the transcript %s is unreadable: %s", r.ID, r.Transcript, r.Note)
	}
	return r, nil
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
