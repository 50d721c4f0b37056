package main

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/models/modelname"
	"github.com/troupe-dev/troupe/builtin/trust"
)

func (a *app) typesCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: "types", Short: "List, show and validate agent types"}
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	addRepoFlag(cmd, "project whose .troupe/agents and .claude/agents are read")
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the agent types and where each comes from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := projectDir(cmd)
			if err != nil {
				return err
			}
			reg, err := a.registry(dir)
			if err != nil {
				return err
			}
			types := reg.Types()
			held := reg.Withheld()
			if asJSON {
				out := make([]any, 0, len(types)+len(held))
				for _, t := range types {
					out = append(out, t)
				}
				for _, w := range held {
					out = append(out, withheldJSON{Name: w.Name, Source: w.Source, Withheld: w.Grants})
				}
				return writeJSON(a.stdout, out)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSOURCE\tSHADOWS\tDESCRIPTION")
			for _, t := range types {
				shadows := "-"
				if len(t.Shadows) > 0 {
					shadows = strings.Join(mapSlice(t.Shadows, relPath), ", ")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, relPath(t.Source), shadows, clip(firstSentence(t.Description), 80))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			a.listUntrusted(a.project(dir), held)
			return nil
		},
	}, &cobra.Command{
		Use:   "show NAME",
		Short: "Show one agent type in full",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := projectDir(cmd)
			if err != nil {
				return err
			}
			reg, err := a.registry(dir)
			if err != nil {
				return err
			}
			t, err := reg.Type(args[0])
			if err != nil {
				return a.lookupHint(usageError{err}, reg, args[0])
			}
			if asJSON {
				return writeJSON(a.stdout, t)
			}
			showType(a.stdout, t)
			return nil
		},
	}, &cobra.Command{
		Use:   "validate PATH...",
		Short: "Check definition files (or folders of them) and print every problem as FILE:LINE:COL: message",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := projectDir(cmd)
			if err != nil {
				return err
			}
			// The project's definitions load without a word: those among
			// args are reported below, and the others are not asked about.
			reg, _, err := a.loadRegistry(dir)
			if err != nil {
				return err
			}
			paths, err := definitionPaths(args)
			if err != nil {
				return err
			}
			// Compiling a script runs its top-level declarations: scripts
			// the user has not trusted are checked, not compiled.
			types, diags := agenttypes.LoadFiles(agenttypes.LoadOptions{Registry: reg, TrustScripts: a.trustsScripts, ProjectRun: a.project(dir).runPolicy()}, paths...)
			diags.Sort()
			if asJSON {
				if err := writeJSON(a.stdout, map[string]any{"types": len(types), "diagnostics": diags}); err != nil {
					return err
				}
			} else {
				for _, d := range diags {
					fmt.Fprintln(a.stdout, d)
				}
				fmt.Fprintf(a.stderr, "%d files, %d types, %d errors, %d warnings\n", len(paths), len(types), len(diags.Errors()), len(diags.Warnings()))
			}
			if diags.HasErrors() {
				return exitError{exitFailed}
			}
			return nil
		},
	})
	return cmd
}

// withheldJSON is a withheld type in types list --json: its name and
// source, as a type has, and what it needs trust for.
type withheldJSON struct {
	Name     string             `json:"name"`
	Source   string             `json:"source"`
	Withheld []agenttypes.Grant `json:"withheld"`
}

// listUntrusted lists, after the types, what the project defines or ships
// that is left out until the user trusts it.
func (a *app) listUntrusted(p *project, held []agenttypes.Withheld) {
	var plugins []string
	for _, it := range p.items {
		if it.Kind == trust.KindPlugin && !p.allows(it.Kind, it.Name, it.Digest) {
			plugins = append(plugins, it.Name)
		}
	}
	if len(held) == 0 && len(plugins) == 0 {
		return
	}
	fmt.Fprintf(a.stdout, "\nNot loaded until you trust this project ('%s' shows what would run):\n", trustHint(p.root))
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for _, w := range held {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", w.Name, relPath(w.Source), w.Why())
	}
	for _, it := range p.items {
		if it.Kind == trust.KindPlugin && slices.Contains(plugins, it.Name) {
			fmt.Fprintf(tw, "  plugin %s\t%s\tits types and tools are unknown until it runs\n", it.Name, relPath(it.Path))
		}
	}
	_ = tw.Flush()
}

// underDir reports whether path is at or below dir.
func underDir(dir, path string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(dir, abs)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// definitionPaths expands folders into the definition files below them.
func definitionPaths(args []string) ([]string, error) {
	var paths []string
	for _, arg := range args {
		fi, err := os.Stat(arg)
		if err != nil {
			return nil, usagef("%s: %v", arg, err)
		}
		if !fi.IsDir() {
			paths = append(paths, arg)
			continue
		}
		err = filepath.WalkDir(arg, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch strings.ToLower(filepath.Ext(p)) {
			case ".md", ".yaml", ".yml":
				if d.Type().IsRegular() {
					paths = append(paths, p)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(paths) == 0 {
		return nil, usagef("no .md, .yaml or .yml files in %s", strings.Join(args, " "))
	}
	return paths, nil
}

// relPath shows a path relative to the working directory when it is below it.
func relPath(p string) string {
	if !filepath.IsAbs(p) {
		return p
	}
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}

func mapSlice(xs []string, f func(string) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func showType(w io.Writer, t *agenttypes.Type) {
	fmt.Fprintf(w, "name:        %s\n", t.Name)
	fmt.Fprintf(w, "source:      %s\n", t.Source)
	for _, sh := range t.Shadows {
		fmt.Fprintf(w, "shadows:     %s\n", sh)
	}
	if t.Extends != "" {
		fmt.Fprintf(w, "extends:     %s\n", t.Extends)
	}
	fmt.Fprintf(w, "description: %s\n", t.Description)
	fmt.Fprintf(w, "tools:       %s\n", strings.Join(t.Tools, ", "))
	model := t.Model
	if model == "" {
		model = modelname.Inherit
	}
	fmt.Fprintf(w, "model:       %s\n", model)
	fmt.Fprintf(w, "budget:      %s\n", budgetLine(t.Budget))
	format := t.Output.Format
	if format == "" {
		format = agenttypes.OutputText
	}
	fmt.Fprintf(w, "output:      %s\n", format)
	if t.NeedsLanguageModel {
		fmt.Fprintln(w, "needs:       a language model (refuses the offline model)")
	}
	showWorkspace(w, t)
	fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(t.Prompt))
}

// budgetLine says each limit of b, and "unlimited" for each it leaves
// unset: the command gives agents no default budget, so a limit neither
// the type nor a flag sets is no limit.
func budgetLine(b agenttypes.Budget) string {
	if b == (agenttypes.Budget{}) {
		return "unlimited"
	}
	limit := func(set bool, value, what string) string {
		if !set {
			return "unlimited " + what
		}
		return value
	}
	return strings.Join([]string{
		limit(b.MaxTokens > 0, fmt.Sprintf("%d tokens", b.MaxTokens), "tokens"),
		limit(b.MaxTime > 0, b.MaxTime.String(), "time"),
		limit(b.MaxToolCalls > 0, fmt.Sprintf("%d tool calls", b.MaxToolCalls), "tool calls"),
		limit(b.MaxTurns > 0, fmt.Sprintf("%d turns", b.MaxTurns), "turns"),
		limit(b.MaxCostUSD > 0, fmt.Sprintf("$%.2f", b.MaxCostUSD), "cost"),
	}, ", ")
}

// showWorkspace says where an agent of t works and what it may run.
func showWorkspace(w io.Writer, t *agenttypes.Type) {
	switch {
	case t.NeedsWorkspace():
		fmt.Fprintln(w, "workspace:   a worktree of its own")
	case t.Workspace == agenttypes.WorkspaceNone:
		fmt.Fprintln(w, "workspace:   none (reads where it is given)")
	}
	if t.Allows("run") || len(t.Run.Allow) > 0 {
		runs := strings.Join(t.Run.Allow, ", ")
		if runs == "" {
			runs = "nothing (no command is allowed)"
		}
		network := "without the network"
		if t.Run.Network {
			network = "with the network"
		}
		fmt.Fprintf(w, "runs:        %s (each for up to %s, %s)\n", runs, t.Run.TimeoutFor(0), network)
	}
	if len(t.Setup) > 0 {
		fmt.Fprintf(w, "setup:       %s\n", strings.Join(t.Setup, ", "))
	}
}

func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i > 0 {
		return s[:i+1]
	}
	return s
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
