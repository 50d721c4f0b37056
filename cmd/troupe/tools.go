package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/troupe-dev/troupe/agenttypes"
)

func (a *app) toolsCommand() *cobra.Command {
	var asJSON bool
	var typeName string
	cmd := &cobra.Command{Use: "tools", Short: "List tools, or call one exactly as an agent would"}
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	addRepoFlag(cmd, "directory the tool works in (and whose agent types are read)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the tools (those one type may call, with --type)",
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
			defer a.registerCachedMCP(reg)()
			var specs []agenttypes.ToolSpec
			if typeName != "" {
				t, err := reg.Type(typeName)
				if err != nil {
					return a.lookupHint(usageError{err}, reg, typeName)
				}
				tools, err := typeTools(reg, t)
				if err != nil {
					return err
				}
				for _, tool := range tools {
					specs = append(specs, tool.Spec())
				}
			} else {
				for _, tool := range reg.Tools() {
					specs = append(specs, tool.Spec())
				}
			}
			if asJSON {
				return writeJSON(a.stdout, specs)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tACCESS\tDESCRIPTION")
			for _, s := range specs {
				access := "read-only"
				if !s.ReadOnly {
					access = "writes"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, access, firstSentence(s.Description))
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&typeName, "type", "", "only the tools this type may call")
	call := &cobra.Command{
		Use:     "call NAME JSON_ARGS",
		Short:   "Call one tool exactly as an agent would (same resolver, same caps)",
		Example: `  troupe tools call grep '{"pattern":"func \\(m \\*Manager\\) Spawn","path":"manager"}' --repo .`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, why, err := repoDir(cmd)
			if err != nil {
				return err
			}
			reg, err := a.registry(dir)
			if err != nil {
				return err
			}
			tool, err := reg.Tool(args[0])
			if err != nil {
				return a.lookupHint(usageError{err}, reg, args[0])
			}
			if !json.Valid([]byte(args[1])) {
				return usagef("JSON_ARGS is not valid JSON: %s; quote it, for example '{\"pattern\":\"Spawn\"}'", args[1])
			}
			fmt.Fprintln(a.stderr, workingIn(dir, why))
			ctx := agenttypes.WithEnv(cmd.Context(), &agenttypes.Env{
				Dir:  dir,
				Note: func(text string) { fmt.Fprintln(a.stderr, "note:", text) },
			})
			out, err := tool.Call(ctx, json.RawMessage(args[1]))
			if asJSON {
				res := map[string]any{"tool": args[0], "output": out}
				if err != nil {
					res["error"] = err.Error()
				}
				if werr := writeJSON(a.stdout, res); werr != nil {
					return werr
				}
				if err != nil {
					return exitError{exitFailed}
				}
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, strings.TrimRight(out, "\n"))
			return nil
		},
	}
	cmd.AddCommand(list, call)
	return cmd
}
