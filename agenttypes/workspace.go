package agenttypes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Workspace modes of a type (Type.Workspace).
const (
	// WorkspaceWorktree gives each agent of the type a workspace of its
	// own: a git worktree on a fresh branch, based on its parent's
	// current state. It is the default for a type that lists a changing
	// tool.
	WorkspaceWorktree = "worktree"
	// WorkspaceNone works in the directory the agent is given, and only
	// reads it. A type that lists a changing tool may not have it.
	WorkspaceNone = "none"
)

// ChangingTools are the tools that change files or run commands; they
// work only in an agent's own workspace.
var ChangingTools = []string{"write", "edit", "run", "merge"}

// NeedsWorkspace reports whether agents of t get a workspace of their
// own: t lists a changing tool, or asks for a worktree.
func (t *Type) NeedsWorkspace() bool {
	if t.Workspace == WorkspaceWorktree {
		return true
	}
	return slices.ContainsFunc(t.Tools, func(name string) bool { return slices.Contains(ChangingTools, name) })
}

// validateWorkspace checks the workspace mode, the run policy and the
// setup commands.
func (t *Type) validateWorkspace() error {
	switch t.Workspace {
	case "", WorkspaceWorktree:
	case WorkspaceNone:
		if i := slices.IndexFunc(t.Tools, func(name string) bool { return slices.Contains(ChangingTools, name) }); i >= 0 {
			return fmt.Errorf("%w: workspace is %q, and the type lists %q, which works only in a workspace of its own; remove the workspace line (a worktree is the default) or the tool", ErrInvalid, WorkspaceNone, t.Tools[i])
		}
		if len(t.Setup) > 0 {
			return fmt.Errorf("%w: workspace is %q, and the type names setup commands, which prepare a workspace of its own; remove one or the other", ErrInvalid, WorkspaceNone)
		}
	default:
		return fmt.Errorf("%w: workspace is %q; use %q or %q", ErrInvalid, t.Workspace, WorkspaceWorktree, WorkspaceNone)
	}
	if err := t.Run.Validate(); err != nil {
		return err
	}
	if len(t.Setup) > MaxSetupCommands {
		return fmt.Errorf("%w: setup has %d commands; keep it to %d", ErrInvalid, len(t.Setup), MaxSetupCommands)
	}
	for _, line := range t.Setup {
		if len(line) > MaxCommandLength {
			return fmt.Errorf("%w: a setup command is %d bytes long; keep each to %d", ErrInvalid, len(line), MaxCommandLength)
		}
		args, err := SplitCommand(line)
		if err != nil {
			return fmt.Errorf("%w: setup command %q: %w", ErrInvalid, line, err)
		}
		if !t.Run.Allows(args) {
			return fmt.Errorf("%w: setup command %q is not allowed by run.allow; add its prefix there", ErrInvalid, line)
		}
	}
	return nil
}

// Limits of the run tool.
const (
	// DefaultRunTimeout is how long a command may run when neither the
	// call nor the type says.
	DefaultRunTimeout = 2 * time.Minute
	// MaxRunTimeout bounds any command's time, whatever a type says.
	MaxRunTimeout = 30 * time.Minute
	// MaxRunAllow bounds how many prefixes an allow-list holds.
	MaxRunAllow = 64
	// MaxSetupCommands bounds how many setup commands a type names.
	MaxSetupCommands = 16
	// MaxCommandLength bounds one allow-list prefix or setup command, in
	// bytes.
	MaxCommandLength = 1024
)

// RunPolicy says which commands the run tool may start for a type, and
// how.
type RunPolicy struct {
	// Allow lists command prefixes as words ("go test", "make"): a
	// command runs only when its first words are those of one of them.
	// A shell runs only when the list names it ("sh -c"). Empty allows
	// nothing.
	Allow []string `json:"allow,omitempty"`
	// Timeout is each command's time limit, and the most a call may ask
	// for; 0 means DefaultRunTimeout.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Network lets commands reach the network. By default they run
	// without it where the platform can take it away.
	Network bool `json:"network,omitempty"`
}

// Validate reports what makes p unusable.
func (p RunPolicy) Validate() error {
	if len(p.Allow) > MaxRunAllow {
		return fmt.Errorf("%w: run.allow has %d prefixes; keep it to %d", ErrInvalid, len(p.Allow), MaxRunAllow)
	}
	for _, a := range p.Allow {
		if len(a) > MaxCommandLength {
			return fmt.Errorf("%w: a run.allow entry is %d bytes long; keep each to %d", ErrInvalid, len(a), MaxCommandLength)
		}
		words, err := SplitCommand(a)
		if err != nil {
			return fmt.Errorf("%w: run.allow entry %q: %w", ErrInvalid, a, err)
		}
		if len(words) == 0 {
			return fmt.Errorf("%w: run.allow has an empty entry; name a command such as \"go test\"", ErrInvalid)
		}
	}
	if p.Timeout < 0 || p.Timeout > MaxRunTimeout {
		return fmt.Errorf("%w: run.timeout is %s; give a duration up to %s", ErrInvalid, p.Timeout, MaxRunTimeout)
	}
	return nil
}

// Allows reports whether the command, split into words, starts with the
// words of one of p's prefixes.
func (p RunPolicy) Allows(args []string) bool {
	for _, a := range p.Allow {
		prefix, err := SplitCommand(a)
		if err != nil || len(prefix) == 0 || len(prefix) > len(args) {
			continue
		}
		if slices.Equal(prefix, args[:len(prefix)]) {
			return true
		}
	}
	return false
}

// TimeoutFor is the time limit of one command that asks for asked (0:
// none asked): the policy's timeout, or less when asked.
func (p RunPolicy) TimeoutFor(asked time.Duration) time.Duration {
	limit := p.Timeout
	if limit <= 0 {
		limit = DefaultRunTimeout
	}
	if asked > 0 && asked < limit {
		return asked
	}
	return limit
}

// ErrCommandSyntax is wrapped by SplitCommand's errors.
var ErrCommandSyntax = errors.New("command syntax")

// SplitCommand splits a command line into words as a shell would split a
// simple command, with no expansion of any kind: words are separated by
// blanks; single quotes keep everything to the next single quote; double
// quotes keep everything to the next unescaped double quote, in which a
// backslash escapes only '"' and '\'; outside quotes a backslash keeps
// the next character. Shell operators (| & ; < > ( ) ` $) outside quotes
// are refused rather than passed on as words, so that a command that
// means a pipeline or a redirection is not run as something else.
func SplitCommand(line string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		inTok bool
	)
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inTok {
				words, inTok = append(words, cur.String()), false
				cur.Reset()
			}
		case c == '\'':
			j := slices.Index(rs[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("%w: a single quote is not closed", ErrCommandSyntax)
			}
			cur.WriteString(string(rs[i+1 : i+1+j]))
			i, inTok = i+1+j, true
		case c == '"':
			n, err := doubleQuoted(rs[i+1:], &cur)
			if err != nil {
				return nil, err
			}
			i, inTok = i+n, true
		case c == '\\':
			if i+1 >= len(rs) {
				return nil, fmt.Errorf("%w: the command ends in a backslash", ErrCommandSyntax)
			}
			i++
			cur.WriteRune(rs[i])
			inTok = true
		case strings.ContainsRune("|&;<>()`$", c):
			return nil, fmt.Errorf("%w: %q is a shell operator, and commands run without a shell; run one command, or quote the character if it is part of an argument", ErrCommandSyntax, c)
		default:
			cur.WriteRune(c)
			inTok = true
		}
	}
	if inTok {
		words = append(words, cur.String())
	}
	return words, nil
}

// doubleQuoted reads the inside of a double-quoted string into cur and
// returns how many runes it took, closing quote included.
func doubleQuoted(rs []rune, cur *strings.Builder) (int, error) {
	for i := 0; i < len(rs); i++ {
		switch c := rs[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\' && i+1 < len(rs) && (rs[i+1] == '"' || rs[i+1] == '\\'):
			i++
			cur.WriteRune(rs[i])
		default:
			cur.WriteRune(c)
		}
	}
	return 0, fmt.Errorf("%w: a double quote is not closed", ErrCommandSyntax)
}

// Changes is what an agent changed in its workspace, recorded on its
// branch when it ended.
type Changes struct {
	// Dir is the directory the workspace was made from and the changes
	// apply to: the user's tree, for a top-level agent; the parent's
	// workspace, for a child.
	Dir string `json:"dir"`
	// Repo is the git directory that holds the branch: the project's own,
	// or a private snapshot repository for a directory that is not one.
	Repo string `json:"repo"`
	// Branch is the agent's branch, troupe/RUN/AGENT.
	Branch string `json:"branch"`
	// Base is the commit the workspace started from; Head the commit
	// that holds the agent's work (Base when it changed nothing).
	Base string `json:"base"`
	Head string `json:"head"`
	// Added, Modified and Deleted are the paths changed, relative to the
	// workspace's top, in slash form and sorted.
	Added    []string `json:"added,omitempty"`
	Modified []string `json:"modified,omitempty"`
	Deleted  []string `json:"deleted,omitempty"`
	// Insertions and Deletions count changed lines (binary files count
	// none).
	Insertions int `json:"insertions"`
	Deletions  int `json:"deletions"`
	// Diffstat is git's --stat summary of the changes.
	Diffstat string `json:"diffstat,omitempty"`
	// Patch is the path of a file holding the changes as a binary git
	// patch; empty when there are none.
	Patch string `json:"patch,omitempty"`
	// Ignored are paths in the workspace, made by the agent or its
	// commands, that ignore rules kept out of the changes (build output,
	// dependencies, a .env file): they went with the workspace. A wholly
	// ignored directory is one entry ending in '/'. Only the first few
	// are listed; IgnoredCount counts them all.
	Ignored      []string `json:"ignored,omitempty"`
	IgnoredCount int      `json:"ignored_count,omitempty"`
}

// Files is how many files the changes touch.
func (c *Changes) Files() int {
	if c == nil {
		return 0
	}
	return len(c.Added) + len(c.Modified) + len(c.Deleted)
}

// Empty reports whether there are no changes.
func (c *Changes) Empty() bool { return c.Files() == 0 }

// Command is one command for a workspace to run.
type Command struct {
	// Args are the command's words; Args[0] is looked up in PATH.
	Args []string
	// Timeout is the time the call asks for; 0 takes the policy's.
	Timeout time.Duration
}

// Confinement says which of a command's restrictions the platform could
// apply.
type Confinement struct {
	// Network: the command ran with no network and out of reach of the
	// host's sockets (a new network namespace, and the directories of
	// the host's Unix sockets hidden).
	Network bool `json:"network"`
	// Writes: the command could write only in its workspace and its
	// private temporary directory (Landlock).
	Writes bool `json:"writes"`
}

// CommandResult is how a command went.
type CommandResult struct {
	// ExitCode is the command's exit status; -1 when it was killed.
	ExitCode int
	// Output is its standard output and error, interleaved as written,
	// cut to a head and a tail with a marker between when long.
	Output string
	// TimedOut is set when the command ran past its time and was killed
	// with everything it started.
	TimedOut bool
	Duration time.Duration
	// Confined says which restrictions applied.
	Confined Confinement
}

// MergeResult is what a merge brought in, or why it could not.
type MergeResult struct {
	// Files are the paths the merge changed in the workspace.
	Files []string
	// Conflicts are the files both sides changed in ways that do not
	// combine; when there are any, the workspace is unchanged.
	Conflicts []Conflict
}

// Conflict is one file a merge could not combine.
type Conflict struct {
	Path string `json:"path"`
	// Hunks are the conflicting regions, with conflict markers, as the
	// merged file would hold them; empty for a conflict of a kind other
	// than content (one side deleted the file, say).
	Hunks string `json:"hunks,omitempty"`
	// Reason says what kind of conflict it is, in git's words.
	Reason string `json:"reason,omitempty"`
}

// Workspace is an agent's own copy of the project, the one place its
// changing tools act on. Tools find it in Env.Workspace.
type Workspace interface {
	// Top is the workspace's top directory, which nothing run in the
	// workspace can remove or replace.
	Top() string
	// Dir is the directory the agent works in: Top, or the directory
	// below it that the agent was asked to work in. A command run in the
	// workspace could replace that one (with a symlink to elsewhere,
	// say), so tools open it from Top (fsroot.OpenBeneath), never by its
	// path alone.
	Dir() string
	// Run runs a command in the workspace under the type's RunPolicy:
	// allow-listed, in a process group killed whole on timeout or
	// cancel, with a scrubbed environment, confined where the platform
	// allows. A command refused by the policy, or not allowed to run at
	// all (an untrusted project), is an error wrapping ErrRunRefused; a
	// command that ran and failed is a result with its exit status.
	Run(ctx context.Context, cmd Command) (CommandResult, error)
	// Merge brings changes (a finished child's) into the workspace with a
	// three-way merge. With conflicts the workspace is left as it was.
	Merge(ctx context.Context, from *Changes) (MergeResult, error)
	// Close records everything in the workspace, untracked files
	// included, on its branch, removes the workspace's directory, and
	// returns the changes since its base. The manager calls it once,
	// when the agent ends however it ends.
	Close(ctx context.Context) (*Changes, error)
}

// WorkspaceRequest asks for a new agent's workspace.
type WorkspaceRequest struct {
	// Run names the run (a manager's ID), for the branch name.
	Run string
	// Agent is the new agent's ID.
	Agent string
	// Dir is the directory the agent was asked to work on: the user's
	// tree, for a top-level agent.
	Dir string
	// Parent is the parent's workspace, whose current state the new one
	// starts from; nil starts from Dir as it is now.
	Parent Workspace
	// Policy is the type's RunPolicy, for Run and Setup.
	Policy RunPolicy
	// Setup are commands run in the new workspace before the agent
	// starts, allowed by Policy like any command.
	Setup []string
	// Durable asks for a workspace that outlives the process that opens
	// it: a durable backend runs an agent's steps on several workers,
	// each of which reopens the workspace by its handle (DurableWorkspace,
	// WorkspaceReopener). Nothing prunes it when that process ends; only
	// its Close, in whichever process, ends it. Opening the same Run and
	// Agent again returns the workspace already open, so a step run twice
	// (a worker died before its result was kept) opens one.
	Durable bool
}

// DurableWorkspace is a workspace opened with WorkspaceRequest.Durable.
type DurableWorkspace interface {
	Workspace
	// Handle names the workspace for WorkspaceReopener.Reopen in any
	// process that shares its state directory.
	Handle() string
	// Owner is the run and agent it was opened for
	// (WorkspaceRequest.Run and Agent): a process given a handle checks
	// that it is the one it expects.
	Owner() (run, agent string)
}

// WorkspaceReopener is a Workspaces whose durable workspaces can be
// reopened by another process that shares its state directory (the
// workers of a durable backend, on one machine or a shared filesystem).
type WorkspaceReopener interface {
	Workspaces
	// Reopen returns the durable workspace named by handle. A workspace
	// already closed comes back closed: its Close returns the changes it
	// recorded then, so a close run twice records once. A handle made
	// on another state directory is an error wrapping ErrWorkspace that
	// says so.
	Reopen(ctx context.Context, handle string) (Workspace, error)
	// Find returns the durable workspace opened for run's agent, open or
	// closed, or nil when none was: for closing one whose handle was
	// lost, its Open having finished after the step that asked for it
	// was given up. It waits for an Open of it under way to end.
	Find(ctx context.Context, run, agent string) (Workspace, error)
}

// Workspaces makes workspaces. A manager without one refuses to spawn
// a type that needs one.
type Workspaces interface {
	Open(ctx context.Context, req WorkspaceRequest) (Workspace, error)
}

// Sentinel errors of workspaces, for errors.Is.
var (
	// ErrWorkspace is wrapped when a workspace cannot be made or kept.
	ErrWorkspace = errors.New("workspace")
	// ErrRunRefused is wrapped when a command may not run.
	ErrRunRefused = errors.New("command refused")
)
