package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/troupe-dev/troupe/agenttypes"
)

func (a *app) typesCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: "types", Short: "List and show agent types"}
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the agent types and where each comes from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg, err := a.registry()
			if err != nil {
				return err
			}
			types := reg.Types()
			if asJSON {
				return writeJSON(a.stdout, types)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSOURCE\tDESCRIPTION")
			for _, t := range types {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Source, firstSentence(t.Description))
			}
			return tw.Flush()
		},
	}, &cobra.Command{
		Use:   "show NAME",
		Short: "Show one agent type in full",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := a.registry()
			if err != nil {
				return err
			}
			t, err := reg.Type(args[0])
			if err != nil {
				return usageError{err}
			}
			if asJSON {
				return writeJSON(a.stdout, t)
			}
			showType(a.stdout, t)
			return nil
		},
	})
	return cmd
}

func showType(w io.Writer, t *agenttypes.Type) {
	fmt.Fprintf(w, "name:        %s\n", t.Name)
	fmt.Fprintf(w, "source:      %s\n", t.Source)
	fmt.Fprintf(w, "description: %s\n", t.Description)
	fmt.Fprintf(w, "tools:       %s\n", strings.Join(t.Tools, ", "))
	model := t.Model
	if model == "" {
		model = "inherit"
	}
	fmt.Fprintf(w, "model:       %s\n", model)
	b := t.Budget
	fmt.Fprintf(w, "budget:      %d tokens, %s, %d tool calls, %d turns\n", b.MaxTokens, b.MaxTime, b.MaxToolCalls, b.MaxTurns)
	format := t.Output.Format
	if format == "" {
		format = agenttypes.OutputText
	}
	fmt.Fprintf(w, "output:      %s\n", format)
	if t.NeedsLanguageModel {
		fmt.Fprintln(w, "needs:       a language model (refuses the offline model)")
	}
	fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(t.Prompt))
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
