package main

import (
	"errors"
	"fmt"
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
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	Task       string         `json:"task"`
	State      manager.State  `json:"state"`
	Reason     manager.Reason `json:"reason,omitempty"`
	Started    time.Time      `json:"started"`
	Usage      manager.Usage  `json:"usage"`
	Transcript string         `json:"transcript"`
	Output     string         `json:"output,omitempty"`
}

func recordOf(path string, events []manager.Event) runRecord {
	r := runRecord{ID: strings.TrimSuffix(filepath.Base(path), ".jsonl"), Transcript: path}
	for _, e := range events {
		switch e.Kind {
		case manager.EventSpawned:
			r.Type, r.Task, r.Started = e.Type, e.Text, e.Time
		case manager.EventState:
			r.State = e.State
		case manager.EventCompleted:
			r.State, r.Reason, r.Usage, r.Output = e.State, e.Reason, e.Usage, e.Text
		}
	}
	return r
}

func (a *app) runsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: "runs", Short: "List past runs and show their transcripts"}
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List recorded runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := a.runsDir()
			entries, err := os.ReadDir(dir)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			var records []runRecord
			for _, e := range entries {
				if filepath.Ext(e.Name()) != ".jsonl" {
					continue
				}
				path := filepath.Join(dir, e.Name())
				events, err := manager.ReadTranscript(path)
				if err != nil {
					a.logger().Warn("skipping unreadable transcript", "path", path, "err", err)
					continue
				}
				rec := recordOf(path, events)
				rec.Output = ""
				records = append(records, rec)
			}
			slices.SortFunc(records, func(x, y runRecord) int { return y.Started.Compare(x.Started) })
			if asJSON {
				if records == nil {
					records = []runRecord{}
				}
				return writeJSON(a.stdout, records)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTYPE\tSTATE\tSTARTED\tTASK")
			for _, r := range records {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Type, r.State, r.Started.Local().Format(time.DateTime), clip(r.Task, 60))
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
			events, err := manager.ReadTranscript(path)
			if errors.Is(err, fs.ErrNotExist) {
				return usagef("no run %q in %s; 'troupe runs list' shows the runs there are", id, a.runsDir())
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, events)
			}
			for _, e := range events {
				if line := progressLine(e, false); line != "" {
					fmt.Fprintln(a.stdout, line)
				}
			}
			if r := recordOf(path, events); r.Output != "" {
				fmt.Fprintf(a.stdout, "\n%s\n", strings.TrimSpace(r.Output))
			}
			return nil
		},
	})
	return cmd
}
