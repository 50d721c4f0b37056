package gitsafe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/builtin/process"
)

// Sentinel errors, for errors.Is.
var (
	// ErrNoGit: git is not on PATH.
	ErrNoGit = errors.New("git is not installed or not on PATH")
	// ErrNotRepository: the directory is not the top of a repository.
	ErrNotRepository = errors.New("not a git repository")
	// ErrOutsideRoot: the repository would make git read outside the
	// root (a .git file, symlink, commondir or alternates pointing
	// elsewhere).
	ErrOutsideRoot = errors.New("git runs only on the root's own repository")
	// ErrConfigStuck: listing the repository's configuration did not
	// finish in time.
	ErrConfigStuck = errors.New("the repository's configuration cannot be read")
)

// Identity is the author and committer of every commit made through a
// Git: the repository's and the user's user.name never apply.
const (
	IdentityName  = "troupe"
	IdentityEmail = "troupe@localhost"
)

const (
	// DefaultMaxOutput bounds what Output keeps of a command's standard
	// output, unless Options.MaxOutput says otherwise.
	DefaultMaxOutput = 16 << 20
	// maxStderr bounds what is kept of a command's standard error.
	maxStderr = 16 << 10
	// configListMax caps the listing of the repository's config keys.
	configListMax = 1 << 20
	// waitDelay is how long a command's pipes are waited for once it is
	// done or killed.
	waitDelay = 2 * time.Second
)

// configListTime bounds the configuration listing on its own, whatever
// the caller's context allows: it reads a few small files, and one that
// never answers (an include naming a named pipe, say) must not hold New
// until the caller gives up.
var configListTime = 10 * time.Second

// Setting is one configuration override, key and value.
type Setting struct{ Key, Value string }

// Options say how to run git on a repository.
type Options struct {
	// GitDir is the repository's git directory when the caller knows it:
	// a linked worktree's that it made, or a private repository whose
	// work tree is elsewhere. It is checked like a linked worktree's;
	// empty finds the git directory from the work tree's own .git.
	GitDir string
	// Within are more directories git may read besides the work tree and
	// the git directories: the top of the project whose worktree this
	// is, say.
	Within []string
	// Config are more overrides, applied after the fixed ones. They may
	// only make git do less: never name a program here.
	Config []Setting
	// MaxOutput bounds what Output keeps; 0 means DefaultMaxOutput.
	MaxOutput int
}

// Git runs git on one repository so that nothing the repository
// configures runs and nothing outside it is read. New checks the
// repository and lists its configuration as they are then; make a new
// Git for each operation rather than keeping one, so that each sees the
// repository as it is.
type Git struct {
	bin       string
	workTree  string
	gitDir    string
	commonDir string
	env       []string
	maxOutput int
}

// New checks the repository whose work tree top is workTree (its .git,
// or opts.GitDir) and returns a Git for it. A repository that would make
// git read outside the work tree (and opts.Within) is refused with an
// error wrapping ErrOutsideRoot; a directory with no .git with one
// wrapping ErrNotRepository; no git on PATH with ErrNoGit.
func New(ctx context.Context, workTree string, opts Options) (*Git, error) {
	bin, err := exec.LookPath("git")
	if err != nil {
		return nil, ErrNoGit
	}
	gitDir, common, err := checkRepo(workTree, opts.GitDir, opts.Within)
	if err != nil {
		return nil, err
	}
	top, err := filepath.EvalSymlinks(workTree)
	if err != nil {
		return nil, err
	}
	g := &Git{bin: bin, workTree: top, gitDir: gitDir, commonDir: common, maxOutput: opts.MaxOutput}
	if g.maxOutput <= 0 {
		g.maxOutput = DefaultMaxOutput
	}
	g.env = baseEnv(top, gitDir)
	keys, err := g.configKeys(ctx)
	if err != nil {
		return nil, err
	}
	overrides := slices.Clone(fixedConfig)
	for _, key := range keys {
		if v, ok := neutralValue(key); ok {
			overrides = append(overrides, Setting{key, v})
		}
	}
	overrides = append(overrides, opts.Config...)
	g.env = append(g.env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(overrides)))
	for i, kv := range overrides {
		n := strconv.Itoa(i)
		g.env = append(g.env, "GIT_CONFIG_KEY_"+n+"="+kv.Key, "GIT_CONFIG_VALUE_"+n+"="+kv.Value)
	}
	return g, nil
}

// Init makes a new bare repository at gitDir, with no templates and in
// the same environment as every call: a private store whose work trees
// are elsewhere. An existing repository there is left as it is.
func Init(ctx context.Context, gitDir string) error {
	bin, err := exec.LookPath("git")
	if err != nil {
		return ErrNoGit
	}
	g := &Git{bin: bin, workTree: filepath.Dir(gitDir)}
	for _, kv := range baseEnv(gitDir, gitDir) {
		if !strings.HasPrefix(kv, "GIT_DIR=") && !strings.HasPrefix(kv, "GIT_WORK_TREE=") {
			g.env = append(g.env, kv)
		}
	}
	g.env = append(g.env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0="+os.DevNull)
	return g.run(ctx, nil, nil, []string{"init", "-q", "--bare", "--template=", gitDir})
}

// WorkTree is the work tree's top, symlinks resolved.
func (g *Git) WorkTree() string { return g.workTree }

// GitDir is the checked git directory: a linked worktree's own, or the
// repository's.
func (g *Git) GitDir() string { return g.gitDir }

// CommonDir is the repository's common git directory, where its objects
// and branches are: GitDir but for a linked worktree.
func (g *Git) CommonDir() string { return g.commonDir }

// Env is git's whole environment for a call: nothing of the caller's
// but PATH, and every override.
func (g *Git) Env() []string { return slices.Clone(g.env) }

// With returns a Git whose calls have env ("NAME=value") added, such as
// GIT_INDEX_FILE for a private index.
func (g *Git) With(env ...string) *Git {
	c := *g
	c.env = append(slices.Clone(g.env), env...)
	return &c
}

// Command returns git with args, in the work tree, with the safe
// environment, in a process group of its own that dies with this
// process and is killed whole when ctx ends. The caller sets its input
// and outputs.
func (g *Git) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, g.bin, args...)
	process.Contain(cmd)
	cmd.Cancel = func() error { return process.KillGroup(cmd.Process.Pid) }
	cmd.Dir, cmd.Env = g.workTree, g.Env()
	cmd.WaitDelay = waitDelay
	return cmd
}

// Output runs git with args and returns its standard output. An output
// larger than the Git's bound is an error. A failed command is an
// *Error, returned with what git printed (git merge-tree, say, prints
// its result and exits 1 on a conflict).
func (g *Git) Output(ctx context.Context, args ...string) ([]byte, error) {
	stdout := &capBuffer{max: g.maxOutput}
	err := g.run(ctx, nil, stdout, args)
	if stdout.truncated {
		return nil, fmt.Errorf("git %s printed more than %d MiB; that is more than troupe reads", args[0], g.maxOutput>>20)
	}
	var gerr *Error
	if err != nil && !errors.As(err, &gerr) {
		return nil, err
	}
	return stdout.buf.Bytes(), err
}

// Run runs git with args, reading stdin (nil: none) and writing its
// standard output to stdout (nil: discarded). A failed command is an
// *Error.
func (g *Git) Run(ctx context.Context, stdin io.Reader, stdout io.Writer, args ...string) error {
	return g.run(ctx, stdin, stdout, args)
}

func (g *Git) run(ctx context.Context, stdin io.Reader, stdout io.Writer, args []string) error {
	cmd := g.Command(ctx, args...)
	stderr := &capBuffer{max: maxStderr}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	err := cmd.Run()
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("git %s: %w", args[0], cerr)
	}
	if c, ok := stdout.(*capBuffer); ok && c.truncated {
		return nil // stopped on purpose; the caller says so
	}
	if err != nil {
		return &Error{Args: slices.Clone(args), Stderr: strings.TrimSpace(stderr.buf.String()), Err: err}
	}
	return nil
}

// Error is a git command that failed.
type Error struct {
	Args   []string
	Stderr string // git's message, trimmed, at most 16 KiB
	Err    error  // the *exec.ExitError, usually
}

func (e *Error) Error() string {
	msg := e.Stderr
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s failed: %s", e.Args[0], msg)
}

func (e *Error) Unwrap() error { return e.Err }

// ExitCode is git's exit status, or -1 when it did not exit by itself.
func (e *Error) ExitCode() int {
	var x *exec.ExitError
	if errors.As(e.Err, &x) {
		return x.ExitCode()
	}
	return -1
}

// configKeys lists the names of the repository's configuration keys
// (those its config files include too), running `git config --list` in
// the base environment, which reads configuration and nothing else.
func (g *Git) configKeys(ctx context.Context) ([]string, error) {
	lctx, cancel := context.WithTimeout(ctx, configListTime)
	defer cancel()
	out := &capBuffer{max: configListMax}
	err := g.run(lctx, nil, out, []string{"config", "--list", "--name-only", "--includes", "-z"})
	if err == nil && out.truncated {
		err = fmt.Errorf("the configuration lists more than %d KiB of keys", configListMax>>10)
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		if lctx.Err() != nil {
			return nil, fmt.Errorf("%w: reading the repository's git configuration took more than %s, so git does not run on it; a file its configuration includes (include.path, includeIf.*.path) may be a named pipe or on a file system that does not answer: see `git config --list --show-origin --includes` there", ErrConfigStuck, configListTime)
		}
		// Fail closed: without the list, git would run with whatever the
		// repository configures.
		return nil, fmt.Errorf("reading the repository's git configuration failed: %w", err)
	}
	return strings.Split(out.buf.String(), "\x00"), nil
}

// baseEnv is git's base environment for the work tree dir and the git
// directory gitDir: nothing from the caller but PATH, so that no GIT_DIR,
// GIT_COMMON_DIR, GIT_OBJECT_DIRECTORY, GIT_ALTERNATE_OBJECT_DIRECTORIES,
// GIT_INDEX_FILE, pager, askpass or config leaks in.
func baseEnv(dir, gitDir string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_PAGER=cat",
		"PAGER=cat",
		"GIT_OPTIONAL_LOCKS=0", // status must not write the index
		"GIT_NO_LAZY_FETCH=1",  // newer git: never fetch missing objects
		"GIT_PROTOCOL_FROM_USER=0",
		// git init copies no templates (hooks among them).
		"GIT_TEMPLATE_DIR=",
		// Commits are troupe's, whoever the repository or user says.
		"GIT_AUTHOR_NAME=" + IdentityName, "GIT_AUTHOR_EMAIL=" + IdentityEmail,
		"GIT_COMMITTER_NAME=" + IdentityName, "GIT_COMMITTER_EMAIL=" + IdentityEmail,
		// The work tree is the root, whatever core.worktree says.
		"GIT_WORK_TREE=" + dir,
		// The repository is the one checkRepo checked: git does not look
		// for one, nor follow a .git file itself.
		"GIT_DIR=" + gitDir,
		// Only a repository at the root itself: never one above it, whose
		// files are outside the root.
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir),
		"LC_ALL=C",
	}
}

// capBuffer keeps the first max bytes and then fails, which closes the
// pipe and stops git.
type capBuffer struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

var errOutputFull = errors.New("output cap reached")

func (w *capBuffer) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); len(p) > room {
		w.buf.Write(p[:max(room, 0)])
		w.truncated = true
		return max(room, 0), errOutputFull
	}
	return w.buf.Write(p)
}
