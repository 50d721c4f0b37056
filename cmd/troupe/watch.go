package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/troupe-dev/troupe/manager"
)

// runsWatchCommand is troupe runs watch: a run going on in another
// terminal, as the live tree troupe run draws, fed from its transcript.
func (a *app) runsWatchCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "watch [ID]",
		Short: "Watch a run going on elsewhere: its tree of agents, live, until it ends",
		Long: "Watch a run going on in another terminal or process: the tree of its agents, redrawn as\n" +
			"its transcript grows, until the run ends (Ctrl-C stops watching, not the run). Without ID,\n" +
			"the newest run still going on. Not on a terminal, it prints a line per event instead.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var r runRecord
			var others []runRecord
			var err error
			if len(args) == 0 {
				r, others, err = newestRunning(a.runsDir())
			} else {
				r, err = a.finishedRun(args[0])
			}
			if err != nil {
				return err
			}
			if len(others) > 0 {
				names := make([]string, len(others))
				for i, o := range others {
					names[i] = o.Type + "#" + shortID(o.ID)
				}
				fmt.Fprintf(a.stderr, "also going on: %s ('troupe runs watch ID' watches one)\n", strings.Join(names, ", "))
			}
			mode := progressPlain
			if a.isTerminal(a.stdout) && a.getenv("TERM") != "dumb" {
				mode = progressLive
			}
			if mode == progressLive {
				fmt.Fprintf(a.stderr, "watching %s#%s (%s); Ctrl-C stops watching, not the run\n", r.Type, shortID(r.ID), r.Transcript)
			}
			return a.followRun(cmd.Context(), r, mode)
		},
	}
}

// followRun shows the events of r and its subagents as r's transcript
// grows, until the run ends or ctx does.
func (a *app) followRun(ctx context.Context, r runRecord, mode progressKind) error {
	events, errc := follower{path: r.Transcript, alive: running}.follow(ctx)
	prog := showEvents(subtreeEvents(events, r.ID), mode, a.stdout, progressOptions{
		colour: mode == progressLive && a.getenv("NO_COLOR") == "",
		width:  func() int { return termWidth(a.stdout, liveWidthNoTerm) },
	})
	prog.wait(context.Background()) // the follower closes the events when ctx ends
	if err := <-errc; err != nil {
		return fmt.Errorf("run %s: %w", r.ID, err)
	}
	return nil
}

// subtreeEvents passes on the events of the agent root and of the agents it
// delegated to, however deep, and drops the rest: a transcript holds
// every agent its manager ran.
func subtreeEvents(in <-chan manager.Event, root string) <-chan manager.Event {
	out := make(chan manager.Event, cap(in))
	go func() {
		defer close(out)
		in := in
		members := map[string]bool{root: true}
		for e := range in {
			if !members[e.AgentID] {
				if e.Kind != manager.EventSpawned || !members[e.ParentID] {
					continue
				}
				members[e.AgentID] = true
			}
			out <- e
		}
	}()
	return out
}

// newestRunning is the newest top-level run whose process still writes
// its transcript, and up to three others going on, newest first.
func newestRunning(dir string) (runRecord, []runRecord, error) {
	records, err := listRuns(dir)
	if err != nil {
		return runRecord{}, nil, err
	}
	var going []runRecord
	for _, r := range records {
		if r.ParentID == "" && (r.State == "pending" || r.State == "running") && running(r.Transcript) {
			going = append(going, r)
		}
	}
	if len(going) == 0 {
		return runRecord{}, nil, usagef("no run is going on in %s; 'troupe runs watch ID' replays a past one, 'troupe runs list' lists them", dir)
	}
	slices.SortFunc(going, func(x, y runRecord) int { return y.Started.Compare(x.Started) })
	return going[0], going[1:min(len(going), 4)], nil
}

// runsShowCommand is troupe runs show: a run's transcript, or with
// --follow its events as they are written.
func (a *app) runsShowCommand(asJSON *bool) *cobra.Command {
	var follow bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one run's transcript",
		Long: "Show one run's transcript. ID is the run's ID as 'troupe runs list' prints it, or its\n" +
			"first characters (at least 4) when no other run's ID starts with them, such as the 8\n" +
			"that progress lines print after the type (explore#2db68f09). With --follow, a run still\n" +
			"going on is shown as it goes, until it ends.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, events, err := findRun(a.runsDir(), args[0])
			if err != nil {
				return err
			}
			if r.State == stateUnreadable {
				return fmt.Errorf("run %s: the transcript %s is unreadable: %s", r.ID, r.Transcript, r.Note)
			}
			if follow {
				mode := progressPlain
				if *asJSON {
					mode = progressJSON
				}
				if err := a.followRun(cmd.Context(), r, mode); err != nil || *asJSON {
					return err
				}
				// The record as the run left it, for its output and state.
				if r, _, err = findRun(a.runsDir(), r.ID); err != nil {
					return err
				}
				a.showEnd(r)
				return nil
			}
			if *asJSON {
				return writeJSON(a.stdout, events)
			}
			for _, e := range events {
				if line := progressLine(e, false); line != "" {
					fmt.Fprintln(a.stdout, line)
				}
			}
			a.showEnd(r)
			return nil
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "show a run going on as it goes, until it ends (Ctrl-C stops showing, not the run)")
	return cmd
}

// showEnd prints what follows a run's events: its output, why it ended
// as it did, and the runs it belongs with.
func (a *app) showEnd(r runRecord) {
	if r.Output != "" {
		fmt.Fprintf(a.stdout, "\n%s\n", strings.TrimSpace(r.Output))
	}
	if r.Note != "" {
		fmt.Fprintf(a.stdout, "\n%s: %s\n", r.State, r.Note)
	}
	showFamily(a.stdout, r, a.runsDir())
}
