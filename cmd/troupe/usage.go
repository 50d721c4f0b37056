package main

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/suggest"
)

// argName is a positional argument in a command's Use line: NAME, or
// NAME... for one or more, or [NAME] when it may be left out.
var argName = regexp.MustCompile(`^(\[)?([A-Z][A-Z0-9_]*)(\.\.\.)?(\])?$`)

// positional is what a command's Use line says of its arguments: their
// names, how many must be given, and whether the last takes any number.
type positional struct {
	names    []string
	required int
	variadic bool
}

// positionals reads the arguments from cmd's Use line, the line its help
// shows, so that the check and the help cannot disagree. Words that are
// not argument names (flags, "|", alternatives) are skipped.
func positionals(cmd *cobra.Command) positional {
	var p positional
	for _, word := range strings.Fields(cmd.Use)[1:] {
		m := argName.FindStringSubmatch(word)
		if m == nil || (m[1] == "[") != (m[4] == "]") {
			continue
		}
		p.names = append(p.names, m[2]+m[3])
		if m[1] == "" {
			p.required = len(p.names)
		}
		p.variadic = m[3] != ""
	}
	return p
}

// argsError says, in place of an argument error cobra raised, which
// argument is missing or which are too many, with the command's usage
// line: "missing TASK: troupe run TYPE TASK...". It is nil when the Use
// line allows args, so that the command's own check has the last word.
func argsError(cmd *cobra.Command, args []string) error {
	p := positionals(cmd)
	line := strings.TrimSpace(cmd.CommandPath() + " " + strings.Join(p.names, " "))
	switch {
	case len(args) < p.required:
		var missing []string
		for _, n := range p.names[len(args):p.required] {
			missing = append(missing, strings.TrimSuffix(n, "..."))
		}
		return usagef("missing %s: %s", andList(missing), line)
	case !p.variadic && len(args) > len(p.names):
		extra := args[len(p.names):]
		quoted := make([]string, len(extra))
		for i, e := range extra {
			quoted[i] = fmt.Sprintf("%q", e)
		}
		what := "argument"
		if len(extra) > 1 {
			what = "arguments"
		}
		if len(p.names) == 0 {
			return usagef("unexpected %s %s: %s takes no arguments", what, strings.Join(quoted, " "), line)
		}
		return usagef("unexpected %s %s: %s", what, strings.Join(quoted, " "), line)
	}
	return nil
}

// andList joins names as "A", "A and B", "A, B and C".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// flagError is the root's flag error function: it says what is wrong with
// a flag in the command line's terms, with the likely flag for a
// misspelt one, and marks it as bad usage (exit 2).
func flagError(cmd *cobra.Command, err error) error {
	var notExist *pflag.NotExistError
	var invalid *pflag.InvalidValueError
	var needsValue *pflag.ValueRequiredError
	help := fmt.Sprintf("'%s --help' lists the flags", cmd.CommandPath())
	switch {
	case errors.As(err, &notExist):
		return unknownFlag(cmd, notExist, help)
	case errors.As(err, &invalid):
		return usageError{badFlagValue(invalid.GetFlag(), invalid.GetValue(), err)}
	case errors.As(err, &needsValue):
		return usagef("%v; %s", err, help)
	}
	return usageError{err}
}

// unknownFlag names the flag the user likely meant: the closest of the
// command's flags by edit distance, or, for a long flag written with one
// dash (-max-turns), that flag with two.
func unknownFlag(cmd *cobra.Command, e *pflag.NotExistError, help string) error {
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if group := e.GetSpecifiedShortnames(); group != "" {
		group, _, _ = strings.Cut(group, "=")
		near := group
		if cmd.Flags().Lookup(group) == nil {
			near = suggest.Nearest(group, names)
		}
		if len(group) > 1 && near != "" {
			return usagef("unknown shorthand flag %q in -%s; did you mean --%s? (a long flag takes two dashes)", e.GetSpecifiedName(), e.GetSpecifiedShortnames(), near)
		}
		return usagef("unknown shorthand flag %q in -%s; %s", e.GetSpecifiedName(), e.GetSpecifiedShortnames(), help)
	}
	name := e.GetSpecifiedName()
	if near := suggest.Nearest(name, names); near != "" {
		return usagef("unknown flag --%s; did you mean --%s?", name, near)
	}
	return usagef("unknown flag --%s; %s", name, help)
}

// badFlagValue says what a flag of f's kind takes. A duration gets the
// words an agent definition's max_time gets, unit hint and all.
func badFlagValue(f *pflag.Flag, value string, err error) error {
	name := "--" + f.Name
	switch f.Value.Type() {
	case "duration":
		d, derr := agenttypes.ParseDuration(name, value)
		if derr != nil {
			return derr
		}
		if d <= 0 {
			return notPositiveFlag(name, value)
		}
	case "int":
		return fmt.Errorf("%s %q is not a whole number; give one such as 10", name, value)
	case "float64":
		return fmt.Errorf("%s %q is not a number; give one such as 0.50", name, value)
	case "bool":
		return fmt.Errorf("%s=%s: write %s alone for true, or %s=false", name, value, name, name)
	}
	return err
}
