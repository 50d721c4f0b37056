package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/models"
	"github.com/troupe-dev/troupe/builtin/models/modelname"
	"github.com/troupe-dev/troupe/builtin/script"
	"github.com/troupe-dev/troupe/builtin/suggest"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/plugins"
)

// Exit statuses, as DESIGN.md's command-line contract fixes them.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInterrupted = 130
)

// usageError marks an error as bad usage or configuration (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// exitError carries an exit status for a command that already printed
// what happened.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// app is what every command shares.
type app struct {
	stdout, stderr io.Writer
	// stdin is where answers to questions and approvals are read, when
	// isTerminal says it is a terminal.
	stdin  io.Reader
	getenv func(string) string
	// isTerminal reports whether a stream (stdin, stderr) is a terminal;
	// tests replace it to drive a fake one.
	isTerminal func(any) bool

	// scripts runs the definitions' scripts; made by the first registry,
	// closed when the command ends.
	scripts *script.Host
	// host runs the plugins a command uses; execute stops them when the
	// command ends.
	host *plugins.Host
	// proj is the project the command works in, read once; warned is set
	// once what of it is left out for want of trust has been said.
	proj   *project
	warned bool
	// tel is what the command exports of its agents and plugins, set up
	// by the first that needs it (the plugin host, newManager); execute
	// flushes it at the end.
	tel *telemetry
}

// newApp returns the app of a real process: stdin, the environment and
// the terminal as they are.
func newApp(stdout, stderr io.Writer) *app {
	// Progress and logs write to stderr from several goroutines.
	return &app{stdout: stdout, stderr: &lockedWriter{w: stderr}, stdin: os.Stdin, getenv: os.Getenv, isTerminal: isTerminal}
}

// execute runs the command line args and returns the exit status.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return newApp(stdout, stderr).execute(ctx, args)
}

func (a *app) execute(ctx context.Context, args []string) int {
	stderr := a.stderr
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(a.stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if a.scripts != nil {
		_ = a.scripts.Close()
	}
	a.closePlugins()
	if a.tel != nil {
		// After the plugins: the spans they sent back are exported too.
		a.tel.shutdown()
	}
	if err == nil {
		return exitOK
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintf(stderr, "troupe: %v\n", err)
	return exitCode(ctx, err)
}

// exitCode is the exit status for an error a command returned: usage
// errors (typed, never recognised by their text) exit 2.
func exitCode(ctx context.Context, err error) int {
	var ue usageError
	if errors.As(err, &ue) || isUsage(err) {
		return exitUsage
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return exitInterrupted
	}
	return exitFailed
}

// isUsage recognises the library's errors that mean the request itself
// was wrong. cobra's own argument and flag errors arrive as usageError
// (see typedUsage).
func isUsage(err error) bool {
	for _, target := range []error{manager.ErrBadRequest, manager.ErrUnknownType, manager.ErrModel, agenttypes.ErrUnknownTool, agenttypes.ErrInvalid, agenttypes.ErrUntrusted, manager.ErrDepthExceeded, models.ErrConfig} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// typedUsage makes every error cobra raises about the command line a
// usageError: flag errors through the flag error function (flagError),
// argument errors by wrapping each command's validator, which then name
// what is missing or too many from the command's Use line (argsError),
// and unknown commands by giving each command group a validator that
// names them.
func typedUsage(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.SetFlagErrorFunc(flagError)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		switch {
		case c.Args != nil:
			v := c.Args
			c.Args = func(cmd *cobra.Command, args []string) error {
				if err := v(cmd, args); err != nil {
					if named := argsError(cmd, args); named != nil {
						return named
					}
					return usageError{err}
				}
				return nil
			}
		case c.HasSubCommands() && !c.Runnable():
			// A group: an argument that is not one of its commands is an
			// unknown command; no argument shows the group's help.
			c.Args = func(cmd *cobra.Command, args []string) error {
				if len(args) > 0 {
					msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
					var names []string
					for _, sub := range cmd.Commands() {
						if sub.IsAvailableCommand() {
							names = append(names, sub.Name())
						}
					}
					if s := suggest.Nearest(args[0], names); s != "" {
						msg += fmt.Sprintf("; did you mean %q?", s)
					}
					return usagef("%s; run '%s --help' to see the commands", msg, cmd.CommandPath())
				}
				return nil
			}
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "troupe",
		Short: "Typed, budgeted LLM subagents",
		Long: "troupe spawns agents of a named type and runs each through its own model ↔ tool loop,\n" +
			"inside hard budgets. With no key and no network it uses an offline retrieval model\n" +
			"that lets the explore type find things in a repository.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(a.runCommand(), a.typesCommand(), a.toolsCommand(), a.pluginsCommand(), a.trustCommand(), a.runsCommand(), a.mcpCommand(), a.workerCommand(), a.versionCommand())
	typedUsage(root)
	return root
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// registry returns a registry with the builtin tools and types, the
// types and tools of plugins, and the types defined in files: the
// project's (.troupe/agents and .claude/agents at the root of the project
// holding dir) over the user's over plugins' over the builtin ones. What
// the project names that would run (its plugins, its definitions'
// scripts) and its types that would hide builtin or user ones are left
// out until the user trusts the project. A definition with errors, or a
// plugin that is refused or does not start, is reported and left out;
// the rest load.
func (a *app) registry(dir string) (*agenttypes.Registry, error) {
	reg, diags, err := a.loadRegistry(dir)
	if err != nil {
		return nil, err
	}
	for _, d := range diags.Errors() {
		fmt.Fprintf(a.stderr, "troupe: %s (left out; 'troupe types validate' checks a file)\n", d)
	}
	if len(diags.Warnings()) > 0 {
		a.logger().Debug("agent definitions loaded with warnings", "count", len(diags.Warnings()), "hint", "troupe types validate FILE")
	}
	return reg, nil
}

// loadRegistry is registry without a word about the definitions' own
// problems: it returns them, for types validate, which reports the files
// it checks itself, each problem once.
func (a *app) loadRegistry(dir string) (*agenttypes.Registry, agenttypes.Diagnostics, error) {
	p := a.project(dir)
	if p.fatal != nil {
		return nil, nil, p.fatal
	}
	a.warnUntrusted(p)
	reg := p.reg
	hint := false
	for _, err := range p.pluginProblems {
		if errors.Is(err, agenttypes.ErrUntrusted) {
			continue // said once, by warnUntrusted
		}
		fmt.Fprintf(a.stderr, "troupe: %v (left out; 'troupe plugins list' shows the plugins)\n", err)
		hint = hint || needsLock(err)
	}
	if hint {
		fmt.Fprintln(a.stderr, lockHint)
	}
	if p.runProblem != nil {
		fmt.Fprintf(a.stderr, "troupe: %v (the project's run section is left out)\n", p.runProblem)
	}
	return reg, reg.Reload(p.sources()), nil
}

// scriptHost runs the definitions' scripts; made once, closed when the
// command ends.
func (a *app) scriptHost() *script.Host {
	if a.scripts == nil {
		a.scripts = script.New(script.Options{InProcess: splitList(a.getenv("TROUPE_SCRIPTS_IN_PROCESS")), Logger: a.logger()})
	}
	return a.scripts
}

// resolver reads the model configuration: the environment and the config
// files (the user's, and the project's above dir). A config file that does
// not parse is bad configuration (exit 2). The project's endpoints and
// key variables apply only once the user trusts the project.
func (a *app) resolver(dir string) (models.Resolver, error) {
	r, err := models.Load(a.getenv, dir)
	if err != nil {
		return models.Resolver{}, usageError{err}
	}
	p := a.project(dir)
	a.warnUntrusted(p)
	r.Config.Admit(func(st models.Setting) bool {
		it := settingItem(st)
		return p.allows(it.Kind, it.Name, it.Digest)
	})
	r.Logger = a.logger()
	return r, nil
}

// chooseModel returns the default model (--model when given, else the
// resolver's choice) and the model the agent of typeName will run on,
// with why: the flag, the type's own model, or the default's reason.
func chooseModel(ctx context.Context, r models.Resolver, reg *agenttypes.Registry, typeName, flag string) (def, used models.Choice) {
	if flag != "" && flag != modelname.Inherit {
		def = models.Choice{Name: flag, Why: "--model", Full: r.Expand(flag)}
	} else {
		def = r.Choose(ctx)
	}
	used = def
	if flag == "" || flag == modelname.Inherit {
		if t, err := reg.Type(typeName); err == nil && t.Model != "" && t.Model != modelname.Inherit {
			used = models.Choice{Name: t.Model, Why: "type " + t.Name + " names it", Full: r.Expand(t.Model)}
		}
	}
	return def, used
}

// announceModel says on stderr, before the run, which model it uses;
// nothing when Spawn is about to refuse the type or the model and say
// why (resolving a name makes no network call). It reports whether it
// said it.
func announceModel(ctx context.Context, w io.Writer, reg *agenttypes.Registry, r models.Resolver, typeName string, c models.Choice) bool {
	if t, err := reg.Type(typeName); err != nil || (c.Offline() && t.NeedsLanguageModel) {
		return false
	}
	if _, err := r.Resolve(ctx, c.Name); err != nil {
		return false
	}
	fmt.Fprintf(w, "using model %s\n", c.Describe())
	return true
}

// modelHint adds, to a refusal of the model, how to choose one on the
// command line, and, when the offline model was chosen for lack of
// anything else, every way to configure a language model. The refusal of
// the offline model for a type that needs a language model is said again
// in the command line's words: the library's names the Go fields to set.
func modelHint(err error, r models.Resolver, t *agenttypes.Type, used models.Choice) error {
	if !errors.Is(err, manager.ErrModel) {
		return err
	}
	offlineRefused := t != nil && t.NeedsLanguageModel && used.Offline()
	if offlineRefused {
		err = fmt.Errorf("%w: type %q needs a language model, and the offline model only retrieves", manager.ErrModel, t.Name)
	}
	if (used.Why != "--model" || offlineRefused) && !strings.Contains(err.Error(), "--model") {
		err = fmt.Errorf("%w\n  pass --model provider:model to choose the model (for example --model openai:gpt-4o-mini with OPENAI_API_KEY set, or --model ollama:qwen2.5-coder)", err)
	}
	if used.Offline() && used.Why == models.NothingConfigured {
		err = fmt.Errorf("%w\n  %s", err, r.SetupHint())
	}
	return err
}

// lookupHint adds to an unknown type or tool the command that lists them,
// and the likely name when name looks like a typo of one. The library's
// messages speak of Go; the commands are the command line's to name.
func (a *app) lookupHint(err error, reg *agenttypes.Registry, name string) error {
	var names []string
	var list string
	switch {
	case errors.Is(err, agenttypes.ErrUntrusted):
		if strings.Contains(err.Error(), "troupe trust") {
			return usageError{err}
		}
		root := agenttypes.FindProjectRoot(".")
		if a.proj != nil {
			root = a.proj.root
		}
		return usageError{fmt.Errorf("%w; '%s' shows what it would run and trusts it", err, trustHint(root))}
	case needsLock(err):
		// A type or tool of a plugin the lock file refused: registry has
		// said how to lock the plugins already.
		return usageError{err}
	case errors.Is(err, agenttypes.ErrUnknownType):
		for _, t := range reg.Types() {
			names = append(names, t.Name)
		}
		list = "troupe types list"
	case errors.Is(err, agenttypes.ErrUnknownTool):
		for _, t := range reg.Tools() {
			names = append(names, t.Spec().Name)
		}
		list = "troupe tools list"
	default:
		return err
	}
	msg := err.Error()
	var add []string
	if s := suggest.Nearest(name, names); s != "" && !strings.Contains(msg, "did you mean") {
		add = append(add, fmt.Sprintf("did you mean %q?", s))
	}
	if !strings.Contains(msg, list) {
		add = append(add, fmt.Sprintf("run '%s' to see them", list))
	}
	if len(add) == 0 {
		return usageError{err}
	}
	return usageError{fmt.Errorf("%w; %s", err, strings.Join(add, " "))}
}

// runsDir is where transcripts go: $TROUPE_RUNS_DIR, else
// $XDG_STATE_HOME/troupe/runs, else ~/.local/state/troupe/runs.
func (a *app) runsDir() string {
	if d := a.getenv("TROUPE_RUNS_DIR"); d != "" {
		return d
	}
	return filepath.Join(a.userDir("XDG_STATE_HOME", ".local/state"), "runs")
}

// workspacesDir is where agents' workspaces, their records and patches
// live: $XDG_STATE_HOME/troupe/workspaces, else
// ~/.local/state/troupe/workspaces.
func (a *app) workspacesDir() string {
	return filepath.Join(a.userDir("XDG_STATE_HOME", ".local/state"), "workspaces")
}

// cacheDir is troupe's cache: $XDG_CACHE_HOME/troupe, else
// ~/.cache/troupe.
func (a *app) cacheDir() string {
	return a.userDir("XDG_CACHE_HOME", ".cache")
}

// userDir is troupe's directory under the XDG base directory named by
// variable, else under its default below the home directory, else under
// the temporary directory.
func (a *app) userDir(variable, underHome string) string {
	base := a.getenv(variable)
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return filepath.Join(os.TempDir(), "troupe")
		}
		base = filepath.Join(home, filepath.FromSlash(underHome))
	}
	return filepath.Join(base, "troupe")
}

// logger writes warnings and errors to stderr; TROUPE_LOG=debug shows more.
func (a *app) logger() *slog.Logger {
	level := slog.LevelWarn
	if strings.EqualFold(a.getenv("TROUPE_LOG"), "debug") {
		level = slog.LevelDebug
	}
	return slog.New(newLineHandler(a.stderr, level))
}

// lockedWriter serialises writes, so lines from the progress display and
// from loggers on agent goroutines never interleave mid-line.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Unwrap returns the stream written to, so terminal checks see through
// the lock.
func (l *lockedWriter) Unwrap() io.Writer { return l.w }

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
