package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
	"github.com/troupe-dev/troupe/builtin/gitsafe"
)

const (
	// gitMaxOutput caps what one call returns; git is stopped beyond it.
	gitMaxOutput = 256 << 10
	gitMaxStderr = 16 << 10
	gitMaxArg    = 1024
)

const gitDescription = `Run a read-only git command in the root's repository: diff, log, show, status or blame.

args is the argument list without "git", e.g. ["log", "--oneline", "-n", "20"], ["diff", "HEAD~1", "--stat"], ["show", "abc123:path/to/file.go"], ["blame", "-L", "10,40", "main.go"], ["status", "--short"]. Revisions go before "--" and paths after it; a path that exists may also be given without "--". Only common formatting and filtering flags are allowed (e.g. --oneline, -n, --stat, --name-only, --format=..., --since=..., --author=..., -S..., -G..., -p, -U3, --cached); the error for a refused flag lists those allowed. Output is capped at 256 KiB.`

const gitParams = `{
  "type": "object",
  "properties": {
    "args": {
      "type": "array",
      "items": {"type": "string"},
      "minItems": 1,
      "description": "Subcommand (diff, log, show, status or blame) and its arguments, e.g. [\"log\", \"--oneline\", \"-n\", \"10\", \"--\", \"cmd/\"]."
    }
  },
  "required": ["args"],
  "additionalProperties": false
}`

// Git returns the git tool. See the package documentation for what it
// allows.
func Git() agenttypes.Tool {
	return newTool("git", gitDescription, gitParams, runGit)
}

type gitArgs struct {
	Args []string `json:"args"`
}

// flagKind says how a flag takes a value.
type flagKind uint8

const (
	flagBool     flagKind = iota // no value
	flagValue                    // --x=v, or the next argument
	flagOptValue                 // --x or --x=v (never the next argument)
)

type gitSubcommand struct {
	flags map[string]flagKind
	// prefixes take a value glued on: -n5, -U3, -L10,20, -Sfoo.
	prefixes []string
	// numeric: -5 means -n 5.
	numeric bool
	// positionals: "revs" (revisions, then paths), "paths" or "blame"
	// ([rev] file).
	positionals string
	// fixed flags always passed: no external diff tools or textconv
	// filters, and no recursing into submodules, whose own configuration
	// is not neutralised (see package gitsafe).
	fixed []string
}

var (
	diffFlags = map[string]flagKind{
		"--stat": flagOptValue, "--shortstat": flagBool, "--numstat": flagBool, "--dirstat": flagOptValue,
		"--summary": flagBool, "--name-only": flagBool, "--name-status": flagBool, "--raw": flagBool,
		"-p": flagBool, "--patch": flagBool, "-u": flagBool, "--no-patch": flagBool, "-s": flagBool,
		"-U": flagValue, "--unified": flagValue, "-w": flagBool, "--ignore-all-space": flagBool,
		"-b": flagBool, "--ignore-space-change": flagBool, "--ignore-blank-lines": flagBool,
		"--word-diff": flagOptValue, "--minimal": flagBool, "--patience": flagBool, "--histogram": flagBool,
		"-M": flagBool, "--find-renames": flagOptValue, "--no-renames": flagBool, "--full-index": flagBool,
		"--diff-filter": flagValue, "--relative": flagOptValue, "--abbrev": flagOptValue, "-R": flagBool,
		"--function-context": flagBool, "-W": flagBool, "--ignore-cr-at-eol": flagBool,
	}
	logFlags = map[string]flagKind{
		"--oneline": flagBool, "-n": flagValue, "--max-count": flagValue, "--skip": flagValue,
		"--since": flagValue, "--after": flagValue, "--until": flagValue, "--before": flagValue,
		"--author": flagValue, "--committer": flagValue, "--grep": flagValue, "-i": flagBool,
		"--regexp-ignore-case": flagBool, "--all-match": flagBool, "--invert-grep": flagBool,
		"--format": flagValue, "--pretty": flagOptValue, "--date": flagValue, "--abbrev-commit": flagBool,
		"--no-abbrev-commit": flagBool, "--graph": flagBool, "--decorate": flagOptValue, "--no-decorate": flagBool,
		"--all": flagBool, "--branches": flagOptValue, "--tags": flagOptValue, "--reverse": flagBool,
		"--first-parent": flagBool, "--no-merges": flagBool, "--merges": flagBool, "--follow": flagBool,
		"--date-order": flagBool, "--topo-order": flagBool, "--left-right": flagBool, "--pickaxe-regex": flagBool,
		"-S": flagValue, "-G": flagValue, "-L": flagValue, "--full-history": flagBool, "--simplify-merges": flagBool,
		"-m": flagBool, "--cc": flagBool, "--no-walk": flagOptValue, "--ancestry-path": flagBool,
	}
	gitSubcommands = map[string]gitSubcommand{
		"diff": {
			flags:       merge(diffFlags, map[string]flagKind{"--cached": flagBool, "--staged": flagBool, "--merge-base": flagBool}),
			prefixes:    []string{"-U", "-M"},
			positionals: "revs",
			fixed:       []string{"--no-ext-diff", "--no-textconv", "--no-color", "--ignore-submodules=all"},
		},
		"log": {
			flags:       merge(diffFlags, logFlags),
			prefixes:    []string{"-n", "-U", "-M", "-S", "-G", "-L"},
			numeric:     true,
			positionals: "revs",
			fixed:       []string{"--no-ext-diff", "--no-textconv", "--no-color", "--ignore-submodules=all"},
		},
		"show": {
			flags:       merge(diffFlags, logFlags),
			prefixes:    []string{"-n", "-U", "-M"},
			numeric:     true,
			positionals: "revs",
			fixed:       []string{"--no-ext-diff", "--no-textconv", "--no-color", "--ignore-submodules=all"},
		},
		"status": {
			flags: map[string]flagKind{
				"-s": flagBool, "--short": flagBool, "-b": flagBool, "--branch": flagBool, "--long": flagBool,
				"--porcelain": flagOptValue, "-u": flagBool, "--untracked-files": flagOptValue,
				"--ignored": flagOptValue, "--show-stash": flagBool, "--ahead-behind": flagBool,
				"--no-ahead-behind": flagBool, "--no-renames": flagBool, "-v": flagBool, "--verbose": flagBool,
			},
			prefixes:    []string{"-u"},
			positionals: "paths",
			fixed:       []string{"--ignore-submodules=all"},
		},
		"blame": {
			flags: map[string]flagKind{
				"-L": flagValue, "-w": flagBool, "-e": flagBool, "--show-email": flagBool, "-s": flagBool,
				"-l": flagBool, "-t": flagBool, "-p": flagBool, "--porcelain": flagBool, "--line-porcelain": flagBool,
				"-M": flagBool, "--root": flagBool, "-f": flagBool, "--show-name": flagBool, "-n": flagBool,
				"--show-number": flagBool, "--date": flagValue, "--abbrev": flagOptValue, "--minimal": flagBool,
			},
			prefixes:    []string{"-L", "-M"},
			positionals: "blame",
			// --no-ignore-revs-file: the config's empty value cannot reset
			// the list (git sorts it), the flag can.
			fixed: []string{"--no-textconv", "--no-ignore-revs-file"},
		},
	}
	// gitRefused names options that read or write outside the repository,
	// run programs, or change which repository is used, with the reason
	// given to the model.
	gitRefused = map[string]string{
		"--output":              "writes a file",
		"--output-directory":    "writes files",
		"--no-index":            "compares files outside the repository",
		"--ext-diff":            "runs an external program",
		"--textconv":            "runs configured filter programs",
		"--show-signature":      "runs gpg",
		"-c":                    "changes configuration",
		"--config-env":          "changes configuration",
		"-C":                    "changes directory (the tool always runs in the root)",
		"--git-dir":             "points at another repository",
		"--work-tree":           "points at another work tree",
		"--exec-path":           "runs programs from another place",
		"--namespace":           "changes the repository's namespace",
		"--contents":            "reads a file",
		"--open-files-in-pager": "runs a program",
	}
	gitNumeric = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-[0-9]+$`) })
)

func merge(maps ...map[string]flagKind) map[string]flagKind {
	out := map[string]flagKind{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func runGit(ctx context.Context, root *fsroot.Root, raw json.RawMessage) (string, error) {
	var a gitArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	argv, err := gitArgv(root, a.Args)
	if err != nil {
		return "", err
	}
	// git opens the root by its path: make sure the path still names the
	// directory that was checked (in a workspace, a command may have
	// swapped it for a symlink to another repository).
	if err := root.CheckDir(); err != nil {
		return "", err
	}
	g, err := gitsafe.New(ctx, root.Dir(), gitsafe.Options{})
	if errors.Is(err, gitsafe.ErrNoGit) {
		return "", errors.New("git is not installed or not on PATH; this tool cannot run here")
	}
	if err != nil {
		return "", err
	}
	stdout := &capWriter{max: gitMaxOutput}
	stderr := &capWriter{max: gitMaxStderr}
	cmd := g.Command(ctx, argv...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	if cerr := ctx.Err(); cerr != nil {
		return "", cerr
	}
	out := stdout.buf.String()
	if stdout.truncated {
		if i := strings.LastIndexByte(out, '\n'); i >= 0 {
			out = out[:i+1]
		}
		return out + fmt.Sprintf("... output truncated at %d KiB; narrow with paths, -n, --stat or -L", gitMaxOutput>>10), nil
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.buf.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s failed: %s", a.Args[0], msg)
	}
	if out == "" {
		return "(no output)", nil
	}
	return strings.TrimSuffix(out, "\n"), nil
}

// gitArgv validates the model's arguments and builds git's full argument
// list: global options, the subcommand, fixed and allowed flags, revisions,
// "--", then paths resolved inside the root.
func gitArgv(root *fsroot.Root, args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, errors.New(`missing "args": give a subcommand (diff, log, show, status or blame) and its arguments`)
	}
	name := args[0]
	sub, ok := gitSubcommands[name]
	if !ok {
		return nil, fmt.Errorf("subcommand %q is not allowed; use one of diff, log, show, status, blame", name)
	}
	var flags, positionals, paths []string
	sawDashes := false
	for i := 1; i < len(args); i++ {
		arg := args[i]
		if len(arg) > gitMaxArg || strings.ContainsAny(arg, "\x00\n\r") {
			return nil, fmt.Errorf("argument %d is too long or holds control characters", i)
		}
		switch {
		case sawDashes:
			paths = append(paths, arg)
		case arg == "--":
			sawDashes = true
		case strings.HasPrefix(arg, "-") && arg != "-":
			consumed, err := sub.checkFlag(name, arg, args[i+1:])
			if err != nil {
				return nil, err
			}
			flags = append(flags, args[i:i+1+consumed]...)
			i += consumed
		default:
			positionals = append(positionals, arg)
		}
	}

	var revs []string
	switch sub.positionals {
	case "paths":
		paths = append(positionals, paths...)
	case "blame":
		if !sawDashes && len(positionals) > 0 {
			paths = append(paths, positionals[len(positionals)-1])
			positionals = positionals[:len(positionals)-1]
		}
		if len(paths) != 1 || len(positionals) > 1 {
			return nil, errors.New(`blame takes one file and at most one revision: ["blame", "-L", "10,20", "REV", "--", "FILE"]`)
		}
		revs = positionals
	default:
		// Before "--", an argument that names an existing path is a path
		// (git guesses the same way); anything else is a revision.
		for _, p := range positionals {
			if !sawDashes && looksLikePath(root, p) {
				paths = append(paths, p)
			} else {
				revs = append(revs, p)
			}
		}
	}
	for _, r := range revs {
		if err := checkRev(r); err != nil {
			return nil, err
		}
	}
	for i, p := range paths {
		rel, err := root.Resolve(p)
		if err != nil {
			return nil, err
		}
		paths[i] = rel
	}

	// Configuration overrides travel in the environment: see package gitsafe.
	argv := []string{"--no-pager", name}
	argv = append(argv, sub.fixed...)
	argv = append(argv, flags...)
	argv = append(argv, revs...)
	argv = append(argv, "--")
	return append(argv, paths...), nil
}

// checkFlag validates one flag and returns how many following arguments
// it takes as its value.
func (s gitSubcommand) checkFlag(sub, arg string, rest []string) (int, error) {
	name, value, hasValue := strings.Cut(arg, "=")
	if reason, bad := gitRefused[name]; bad {
		return 0, fmt.Errorf("%s is not allowed: it %s", name, reason)
	}
	if kind, ok := s.flags[name]; ok {
		switch {
		case kind == flagBool && hasValue:
			return 0, fmt.Errorf("%s takes no value", name)
		case kind == flagValue && !hasValue:
			if len(rest) == 0 || (strings.HasPrefix(rest[0], "-") && !gitNumeric().MatchString(rest[0])) {
				return 0, fmt.Errorf("%s needs a value, as %s=VALUE or as the next argument", name, name)
			}
			return 1, nil
		}
		_ = value
		return 0, nil
	}
	if s.numeric && gitNumeric().MatchString(arg) {
		return 0, nil
	}
	for _, p := range s.prefixes {
		if len(arg) > len(p) && strings.HasPrefix(arg, p) && !strings.HasPrefix(arg, "--") {
			return 0, nil
		}
	}
	// Bundled short flags, like -sb.
	if len(arg) > 2 && arg[1] != '-' {
		ok := true
		for _, c := range arg[1:] {
			if k, found := s.flags["-"+string(c)]; !found || k != flagBool {
				ok = false
				break
			}
		}
		if ok {
			return 0, nil
		}
	}
	allowed := make([]string, 0, len(s.flags))
	for f := range s.flags {
		allowed = append(allowed, f)
	}
	slices.Sort(allowed)
	return 0, fmt.Errorf("flag %s is not allowed for git %s; allowed flags: %s", arg, sub, strings.Join(allowed, " "))
}

// checkRev refuses revisions that git could read as options. Revision
// syntax itself (A..B, HEAD~2, rev:path, @{1}) cannot reach outside the
// repository.
func checkRev(r string) error {
	if r == "" || strings.HasPrefix(r, "-") {
		return fmt.Errorf("bad revision %q: revisions may not be empty or start with '-'", r)
	}
	return nil
}

func looksLikePath(root *fsroot.Root, p string) bool {
	if strings.ContainsAny(p, ":^~@{}") || strings.Contains(p, "..") {
		return false // revision syntax
	}
	_, err := root.Lstat(p)
	return err == nil
}

// capWriter keeps the first max bytes and then fails, which closes the
// pipe and stops git.
type capWriter struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

var errOutputFull = errors.New("output cap reached")

func (w *capWriter) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); len(p) > room {
		w.buf.Write(p[:max(room, 0)])
		w.truncated = true
		return max(room, 0), errOutputFull
	}
	return w.buf.Write(p)
}
