package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
	"github.com/troupe-dev/troupe/builtin/models"
	"github.com/troupe-dev/troupe/builtin/process"
	"github.com/troupe-dev/troupe/builtin/trust"
	"github.com/troupe-dev/troupe/plugins"
)

// project is what a command knows of the project it works in: what the
// project names that would run or receive the user's keys, and whether
// the user trusted it as it is.
type project struct {
	root    string
	items   []trust.Item
	record  *trust.Record
	verdict trust.Verdict
	// problem is why trust could not be read; the project then counts as
	// untrusted. fatal is why the registry could not be made.
	problem, fatal error
	// run is the run section of the project's config: the commands its
	// agents may run once it is trusted. runProblem is why it could not
	// be read; it is then left out.
	run        *agenttypes.RunConfig
	runProblem error
	// reg holds the builtin types and the types of the plugins allowed
	// to run; pluginProblems is what loading those plugins reported.
	reg            *agenttypes.Registry
	pluginProblems []error
}

// allows reports whether what kind, name and digest name may run: only
// when the whole project is trusted as it is, and this very item is.
func (p *project) allows(kind, name, digest string) bool {
	return p.verdict.Trusted && p.record.Allows(kind, name, digest)
}

// ownPlugin reports whether a type's source is a plugin of the project.
func (p *project) ownPlugin(source string) bool {
	for _, it := range p.items {
		if it.Kind == trust.KindPlugin && source == "plugin:"+it.Name {
			return true
		}
	}
	return false
}

// runPolicy is the run policy of the project's config once the project
// is trusted as it is: the general type's allow-list, and that of every
// definition that lists run (or Claude Code's Bash) and names none of its
// own. Nil when the config gives none or the project is not trusted.
func (p *project) runPolicy() *agenttypes.RunPolicy {
	if p.run == nil {
		return nil
	}
	if g := p.run.Grant(); !p.allows(g.Kind, g.Type, g.Digest) {
		return nil
	}
	policy := p.run.Policy
	policy.Allow = slices.Clone(policy.Allow)
	return &policy
}

// sources are where the project's and the user's definitions are, with
// what the project is trusted to do.
func (p *project) sources() agenttypes.Sources {
	src := agenttypes.SourcesFromEnv(p.root)
	src.ProjectSource = p.ownPlugin
	src.TrustProject = func(g agenttypes.Grant) bool { return p.allows(g.Kind, g.Type, g.Digest) }
	src.ProjectRun = p.runPolicy()
	return src
}

// grantItem is the trust item of what a grant allows.
func grantItem(g agenttypes.Grant) trust.Item {
	return trust.Item{Kind: g.Kind, Name: g.Type, Path: g.File, Digest: g.Digest, Detail: g.Detail}
}

// digests remembers the checksums of plugin binaries beside the user's
// consent, which is pinned to them: an unchanged binary is not read and
// hashed again at every command. None when there is no state directory.
func (a *app) digests() process.Digests {
	path, err := trust.DefaultPath(a.getenv)
	if err != nil {
		return process.Digests{}
	}
	return process.Digests{Dir: filepath.Join(filepath.Dir(path), "digests")}
}

// trustStore is where the user's consent is kept.
func (a *app) trustStore() (trust.Store, error) {
	path, err := trust.DefaultPath(a.getenv)
	return trust.Store{Path: path}, err
}

// project reads what the project at dir names and whether it is trusted,
// once per command, and loads the plugins it may run. Deciding runs
// nothing of the project's: its plugins are hashed, its definitions
// parsed, its config read; the plugins of the user's own folders are
// loaded first, for its types may hide theirs.
func (a *app) project(dir string) *project {
	root := agenttypes.FindProjectRoot(dir)
	if a.proj != nil && a.proj.root == root {
		return a.proj
	}
	p := &project{root: root}
	a.proj = p // the plugin host asks it; nothing of the project is trusted yet
	p.items = append(p.items, a.pluginItems(root)...)
	p.items = append(p.items, configItems(a.getenv, dir)...)
	if p.run, p.runProblem = agenttypes.ReadRunConfig(root); p.run != nil {
		p.items = append(p.items, grantItem(p.run.Grant()))
	}
	p.reg = agenttypes.NewRegistry()
	if err := builtin.Register(p.reg); err != nil {
		p.fatal = err
		return p
	}
	p.reg.SetScriptCompiler(a.scriptHost())
	host := a.plugins(root)
	p.pluginProblems = host.Load(context.Background(), p.reg)
	for _, g := range agenttypes.Grants(p.reg, p.sources()) {
		p.items = append(p.items, grantItem(g))
	}
	store, err := a.trustStore()
	if err == nil {
		p.record, err = store.Get(root)
	}
	p.problem = err
	p.verdict = trust.Check(p.record, p.items)
	if err != nil {
		p.verdict.Trusted = false
	}
	if p.verdict.Trusted && slices.ContainsFunc(p.items, func(it trust.Item) bool { return it.Kind == trust.KindPlugin }) {
		// Trusted: the project's plugins join.
		p.pluginProblems = host.Load(context.Background(), p.reg)
	}
	return p
}

// pluginItems are the project's plugin binaries, with their checksums.
func (a *app) pluginItems(root string) []trust.Item {
	bins, _ := plugins.Discover(plugins.Dirs(root, a.getenv))
	var out []trust.Item
	for _, b := range bins {
		if b.Layer != plugins.LayerProject {
			continue
		}
		sum, err := a.digests().Checksum(b.Path)
		if err != nil {
			continue // never trusted; the host reports why it cannot run
		}
		out = append(out, trust.Item{Kind: trust.KindPlugin, Name: b.Name, Path: b.Path, Digest: sum, Detail: "runs " + b.Path})
	}
	return out
}

// configItems are the project config's endpoints and key variables.
func configItems(getenv func(string) string, dir string) []trust.Item {
	user, projectFile := models.ConfigFiles(getenv, dir)
	cfg, err := models.LoadConfig(user, projectFile)
	if err != nil {
		return nil // the resolver reports it
	}
	var out []trust.Item
	for _, st := range cfg.Withheld {
		out = append(out, settingItem(st))
	}
	return out
}

func settingItem(st models.Setting) trust.Item {
	sum := sha256.Sum256([]byte(st.Value))
	it := trust.Item{Kind: trust.KindEndpoint, Name: st.Name(), Path: st.File, Digest: hex.EncodeToString(sum[:]),
		Detail: fmt.Sprintf("sends %s requests, with your key, to %s", st.Provider, st.Value)}
	if st.Key == "api_key_env" {
		it.Kind = trust.KindKeyEnv
		it.Detail = fmt.Sprintf("sends the value of $%s to %s as its key", st.Value, st.Provider)
	}
	return it
}

// trustsScripts reports whether the scripts of a definition file may be
// compiled, wherever the file is: the user's own definitions' may, and
// another's only when the user trusted those very scripts in the
// project that holds them.
func (a *app) trustsScripts(g agenttypes.Grant) bool {
	file, err := filepath.EvalSymlinks(g.File)
	if err != nil {
		return false
	}
	src := agenttypes.SourcesFromEnv("")
	for _, layer := range src.Layers() {
		for _, dir := range layer.Dirs {
			if real, err := filepath.EvalSymlinks(dir); err == nil && underDir(real, file) {
				return true
			}
		}
	}
	store, err := a.trustStore()
	if err != nil {
		return false
	}
	rec, err := store.Get(agenttypes.FindProjectRoot(filepath.Dir(file)))
	return err == nil && rec.Allows(g.Kind, g.Type, g.Digest)
}

// trustHint is what to run to review and trust the project at root.
func trustHint(root string) string {
	if wd, err := filepath.Abs("."); err == nil && wd == root {
		return "troupe trust"
	}
	return "troupe trust --repo " + root
}

// warnUntrusted says, once, what of the project is left out for want of
// trust, and how to trust it.
func (a *app) warnUntrusted(p *project) {
	if p.verdict.Trusted || len(p.items) == 0 || a.warned {
		return
	}
	a.warned = true
	if p.problem != nil {
		fmt.Fprintf(a.stderr, "troupe: warning: %v\n", p.problem)
	}
	for _, it := range p.items {
		if it.Kind == trust.KindEndpoint || it.Kind == trust.KindKeyEnv || (it.Kind == trust.KindRun && p.run != nil && it.Path == p.run.File) {
			fmt.Fprintf(a.stderr, "troupe: %s: %s is ignored: the project is not trusted\n", relPath(it.Path), it.Name)
		}
	}
	what := countItems(p.items)
	if len(p.verdict.Changed) > 0 {
		var names []string
		for _, it := range p.verdict.Changed {
			names = append(names, it.Kind+" "+it.Name)
		}
		fmt.Fprintf(a.stderr, "troupe: this project changed since you trusted it (%s), so nothing of it runs: %s is left out; '%s' shows it all\n",
			strings.Join(names, ", "), what, trustHint(p.root))
		return
	}
	fmt.Fprintf(a.stderr, "troupe: this project is not trusted, so what would run of it is left out: %s; '%s' shows it and trusts it\n", what, trustHint(p.root))
}

// countItems says how many of each kind there are, in words.
func countItems(items []trust.Item) string {
	order := []string{trust.KindPlugin, trust.KindScripts, trust.KindRun, trust.KindMCP, trust.KindShadow, trust.KindEndpoint, trust.KindKeyEnv}
	words := map[string][2]string{
		trust.KindPlugin:   {"plugin", "plugins"},
		trust.KindScripts:  {"type with scripts", "types with scripts"},
		trust.KindRun:      {"list of commands to run", "lists of commands to run"},
		trust.KindMCP:      {"MCP server", "MCP servers"},
		trust.KindShadow:   {"type hiding another", "types hiding others"},
		trust.KindEndpoint: {"provider endpoint", "provider endpoints"},
		trust.KindKeyEnv:   {"key variable", "key variables"},
	}
	n := map[string]int{}
	for _, it := range items {
		n[it.Kind]++
	}
	var parts []string
	for _, k := range order {
		if n[k] == 1 {
			parts = append(parts, "1 "+words[k][0])
		} else if n[k] > 1 {
			parts = append(parts, fmt.Sprintf("%d %s", n[k], words[k][1]))
		}
	}
	if len(parts) == 0 {
		return "its build and test commands only"
	}
	return strings.Join(parts, ", ")
}

func (a *app) trustCommand() *cobra.Command {
	var list, revoke bool
	cmd := &cobra.Command{
		Use:   "trust [--repo DIR] | trust --list | trust --revoke [--repo DIR]",
		Short: "Show what a project would run, and trust it to",
		Long: "A project is untrusted until you trust it: its plugins, its definitions' scripts, the\n" +
			"commands its config and definitions let agents run (its tests are its code), the MCP\n" +
			"servers its .mcp.json, config and definitions name (each a program or a URL), and\n" +
			"provider endpoints and key variables in its config are left out, and its types never\n" +
			"hide builtin ones. 'troupe trust' shows each of them (binaries with their SHA-256) and\n" +
			"records your consent in your own state directory, never in the project. A change to\n" +
			"anything trusted (a new binary, an edited script, command list or endpoint) needs\n" +
			"trust again.\n" +
			"When its input is a terminal it asks first; otherwise running it is the consent.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := a.trustStore()
			if err != nil {
				return err
			}
			switch {
			case list && revoke:
				return usagef("give --list or --revoke, not both")
			case list:
				if cmd.Flags().Changed("repo") {
					return usagef("--list shows every trusted project; leave out --repo")
				}
				return a.listTrusted(store)
			}
			dir, _, err := repoDir(cmd)
			if err != nil {
				return err
			}
			root := agenttypes.FindProjectRoot(dir)
			if revoke {
				found, err := store.Revoke(root)
				if err != nil {
					return err
				}
				if !found {
					fmt.Fprintf(a.stdout, "%s was not trusted\n", root)
					return nil
				}
				fmt.Fprintf(a.stdout, "%s is no longer trusted\n", root)
				return nil
			}
			return a.trust(cmd.Context(), store, dir)
		},
	}
	addRepoFlag(cmd, "the project to trust")
	cmd.Flags().BoolVar(&list, "list", false, "list the trusted projects")
	cmd.Flags().BoolVar(&revoke, "revoke", false, "stop trusting the project")
	return cmd
}

// runsOnTrust says what trusting any project allows besides its items.
const runsOnTrust = "Trusted, its agents may also run its build and test commands (the run tool's allowed commands), which run its own code."

// trust shows what the project at dir would run and records consent.
func (a *app) trust(ctx context.Context, store trust.Store, dir string) error {
	p := a.project(dir)
	if p.problem != nil {
		return p.problem
	}
	if p.record != nil && p.verdict.Trusted {
		fmt.Fprintf(a.stdout, "%s is trusted as it is (since %s)\n", p.root, p.record.At.Format("2006-01-02 15:04 MST"))
		return nil
	}
	if len(p.items) == 0 {
		fmt.Fprintf(a.stdout, "%s names nothing else that needs trust: no plugins, no scripts, no lists of commands, no MCP servers, no type hiding another, no provider endpoint or key variable\n", p.root)
	} else {
		fmt.Fprintf(a.stdout, "%s would run or receive these once trusted:\n\n", p.root)
		writeItems(a.stdout, p.root, p.items, p.verdict)
	}
	fmt.Fprintln(a.stdout, runsOnTrust)
	fmt.Fprintln(a.stdout)
	// Someone at a terminal is asked, wherever the output goes; a command
	// whose input is not a terminal was run on purpose, by a script.
	if a.isTerminal(a.stdin) {
		prompt := a.stderr
		if !a.isTerminal(a.stderr) {
			prompt = a.stdout
		}
		fmt.Fprint(prompt, "Trust this project as it is now? [y/N] ")
		answer, err := bufio.NewReader(io.LimitReader(a.stdin, 256)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) || ctx.Err() != nil {
			return exitError{exitInterrupted}
		}
		if ans := strings.ToLower(strings.TrimSpace(answer)); ans != "y" && ans != "yes" {
			fmt.Fprintln(a.stdout, "not trusted; nothing was recorded")
			return nil
		}
	}
	if _, err := store.Trust(p.root, p.items); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "trusted %s (%s); 'troupe trust --revoke --repo %s' undoes it\n", p.root, countItems(p.items), p.root)
	return nil
}

// writeItems lists items, marking those new or changed since the record.
func writeItems(w io.Writer, root string, items []trust.Item, v trust.Verdict) {
	changed := map[trust.Item]bool{}
	for _, it := range v.Changed {
		changed[it] = true
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  KIND\tNAME\tFILE\tWHAT IT DOES")
	for _, it := range items {
		file := it.Path
		if rel, err := filepath.Rel(root, it.Path); err == nil && !strings.HasPrefix(rel, "..") {
			file = rel
		}
		what := it.Detail
		if it.Kind == trust.KindPlugin || it.Kind == trust.KindScripts {
			what += "; sha256 " + it.Digest
		}
		if changed[it] {
			what = "CHANGED since trusted: " + what
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", it.Kind, it.Name, file, what)
	}
	_ = tw.Flush()
}

func (a *app) listTrusted(store trust.Store) error {
	recs, err := store.List()
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		fmt.Fprintln(a.stdout, "no trusted projects; 'troupe trust' in a project shows what it would run and trusts it")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROJECT\tTRUSTED\tWHAT")
	for _, r := range recs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Project, r.At.Format("2006-01-02 15:04 MST"), countItems(r.Items))
	}
	return tw.Flush()
}
