package agenttypes

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// Sources says where definition files live. Every field may be empty,
// which leaves out the directories built from it. Tests fill it with
// temporary directories; SourcesFromEnv fills it for a real run.
type Sources struct {
	// ProjectDir is the repository root; its .troupe/agents and
	// .claude/agents directories form the project layer.
	ProjectDir string
	// UserConfigDir is $XDG_CONFIG_HOME (by default ~/.config); its
	// troupe/agents directory is part of the user layer.
	UserConfigDir string
	// HomeDir is the user's home; its .claude/agents directory is part of
	// the user layer.
	HomeDir string
	// TrustProject says whether the project layer may do what a grant
	// asks: run a definition's scripts, or hide a builtin or user type.
	// Every grant a definition needs is asked; a definition with one
	// refused is withheld (see Registry.Withheld), and its name falls to
	// the layers below. Nil trusts nothing: a project directory is
	// untrusted input. TrustAll trusts everything.
	TrustProject func(Grant) bool
	// ProjectSource reports whether a type of that source (as "plugin:NAME")
	// is the project's own, which a project type may hide without trust.
	// Nil: none is.
	ProjectSource func(source string) bool
	// ProjectRun is the run policy of the project's config
	// (ProjectRunPolicy), once trusted: the commands of every definition
	// that lists run, or Claude Code's Bash, and names none of its own.
	// Nil: none; such a definition's Bash is dropped with a warning.
	ProjectRun *RunPolicy
}

// Names of the layers.
const (
	LayerProject = "project"
	LayerUser    = "user"
)

// Layer is one level of precedence: the directories of the project or of
// the user. A type in a layer hides types of the same name in the layers
// after it and among registered (builtin, plugin) types.
type Layer struct {
	// Name is "project" or "user".
	Name string
	// Dirs are searched recursively, in order.
	Dirs []string
}

// Layers returns the layers src names, highest precedence first: project
// (.troupe/agents, then .claude/agents), then user
// ($XDG_CONFIG_HOME/troupe/agents, then ~/.claude/agents). A directory of
// both layers (the project is the home directory) is searched once, as
// the user's.
func (s Sources) Layers() []Layer {
	var project, user []string
	if s.ProjectDir != "" {
		project = append(project, filepath.Join(s.ProjectDir, ".troupe", "agents"), filepath.Join(s.ProjectDir, ".claude", "agents"))
	}
	if s.UserConfigDir != "" {
		user = append(user, filepath.Join(s.UserConfigDir, "troupe", "agents"))
	}
	if s.HomeDir != "" {
		user = append(user, filepath.Join(s.HomeDir, ".claude", "agents"))
	}
	// A directory that is the user's (the project is the home directory)
	// stays the user's: what the user installed needs no trust.
	seen := map[string]bool{}
	dedupe := func(dirs []string) []string {
		var out []string
		for _, d := range dirs {
			key := d
			if abs, err := filepath.Abs(d); err == nil {
				key = abs
			}
			if real, err := filepath.EvalSymlinks(key); err == nil {
				key = real
			}
			if !seen[key] {
				seen[key] = true
				out = append(out, d)
			}
		}
		return out
	}
	userDirs := dedupe(user)
	return []Layer{{Name: LayerProject, Dirs: dedupe(project)}, {Name: LayerUser, Dirs: userDirs}}
}

// SourcesFromEnv returns the Sources for a run in projectDir: the user
// layer from $XDG_CONFIG_HOME (or ~/.config) and the home directory.
func SourcesFromEnv(projectDir string) Sources {
	s := Sources{ProjectDir: projectDir}
	home, err := os.UserHomeDir()
	if err == nil {
		s.HomeDir = home
	}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		s.UserConfigDir = x
	} else if s.HomeDir != "" {
		s.UserConfigDir = filepath.Join(s.HomeDir, ".config")
	}
	return s
}

// FindProjectRoot returns the nearest directory at or above dir that holds
// a .troupe directory or a .git entry, or dir itself when none does.
func FindProjectRoot(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	for d := abs; ; {
		for _, marker := range []string{".troupe", ".git"} {
			if _, err := os.Lstat(filepath.Join(d, marker)); err == nil {
				return d
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			return abs
		}
		d = parent
	}
}

// LoadOptions says how to load definitions outside a Reload.
type LoadOptions struct {
	// Registry resolves extends, says which tools exist and compiles
	// scripts with its compiler (Registry.SetScriptCompiler). With nil,
	// extends finds only the definitions loaded together, only
	// DefaultTools exist, and a definition with a script is refused.
	Registry *Registry
	// Mode is how strictly files are read; ModeAuto by default.
	Mode Mode
	// TrustScripts says whether a definition's scripts may be compiled,
	// which runs their top-level declarations. A definition whose scripts
	// are not trusted is checked without running anything (when the
	// compiler is a ScriptChecker) and left out with a warning. Nil
	// trusts none: name the files you trust, or pass TrustAll for your
	// own.
	TrustScripts func(Grant) bool
	// ProjectRun is what Sources.ProjectRun is to a Reload.
	ProjectRun *RunPolicy
	// MCP are the declared MCP servers the definitions may name
	// (ReadMCPDeclarations); nil declares none.
	MCP *MCPDeclarations
	// TrustMCP says whether an MCP server may run: one the definitions
	// write in place, or one MCP declares for the project. A server it
	// refuses is loaded marked Untrusted. Nil trusts none.
	TrustMCP func(Grant) bool
}

// ParseDefinition reads one definition from data, which came from path
// (its extension says YAML or Markdown; its directory may say Claude
// Code). It returns the type, with Source set to path, and every problem
// found; the type is the zero Type when the diagnostics hold an error.
func ParseDefinition(path string, data []byte, opts LoadOptions) (Type, Diagnostics) {
	def, diags := parseDefinition(path, data, opts.Mode)
	return resolveOne(def, diags, opts)
}

// LoadFile reads and parses one definition file; see ParseDefinition.
// Files over MaxDefinitionSize, binary files and anything but a regular
// file are refused before they are read.
func LoadFile(path string, opts LoadOptions) (Type, Diagnostics) {
	data, diag := readDefinitionFile(path)
	if diag != nil {
		return Type{}, Diagnostics{*diag}
	}
	return ParseDefinition(path, data, opts)
}

func resolveOne(def *definition, diags Diagnostics, opts LoadOptions) (Type, Diagnostics) {
	if def == nil {
		return Type{}, diags
	}
	r := newResolver(map[string]*definition{def.name: def}, opts.Registry, false)
	r.trustScripts = trustScripts(opts)
	r.projectRun = opts.ProjectRun
	r.mcp, r.trustMCP = opts.MCP, opts.TrustMCP
	t, ok := r.resolve(def.name)
	diags = append(diags, r.diags...)
	diags.Sort()
	if !ok {
		return Type{}, diags
	}
	return *t, diags
}

// LoadFiles reads the definition files at paths, as one layer: two files
// that define the same name are an error naming both, unless all of them
// are Claude Code files, when the first by path is kept and the others are
// ignored with a warning. extends may name any of them or any type
// opts.Registry knows. It returns the types that loaded, sorted by name,
// and every problem found, sorted by file and line; the registry is not
// changed.
func LoadFiles(opts LoadOptions, paths ...string) ([]Type, Diagnostics) {
	var diags Diagnostics
	var defs []*definition
	for _, p := range paths {
		data, diag := readDefinitionFile(p)
		if diag != nil {
			diags = append(diags, *diag)
			continue
		}
		def, ds := parseDefinition(p, data, opts.Mode)
		diags = append(diags, ds...)
		if def != nil {
			defs = append(defs, def)
		}
	}
	byName, ds := uniqueNames(defs)
	diags = append(diags, ds...)
	r := newResolver(byName, opts.Registry, false)
	r.trustScripts = trustScripts(opts)
	r.projectRun = opts.ProjectRun
	r.mcp, r.trustMCP = opts.MCP, opts.TrustMCP
	types := r.all()
	diags = append(diags, r.diags...)
	diags.Sort()
	return types, diags
}

func trustScripts(opts LoadOptions) func(Grant) bool {
	if opts.TrustScripts == nil {
		return func(Grant) bool { return false }
	}
	return opts.TrustScripts
}

// Load discovers and resolves the definitions src names, without changing
// reg: the types Reload would install, and its diagnostics.
func Load(reg *Registry, src Sources) ([]Type, Diagnostics) {
	res := load(reg, src)
	return res.types, res.diags
}

type loadResult struct {
	types    []Type
	broken   map[string]error
	withheld map[string]Withheld
	diags    Diagnostics
}

// layered is every definition file src names, parsed, layer by layer.
type layered struct {
	layers []Layer
	parsed []map[string][]*definition // by layer, then name
	diags  Diagnostics
}

func parseLayers(src Sources) layered {
	l := layered{layers: src.Layers()}
	l.parsed = make([]map[string][]*definition, len(l.layers))
	for i, layer := range l.layers {
		l.parsed[i] = map[string][]*definition{}
		for _, dir := range layer.Dirs {
			files, ds := listDefinitionFiles(dir)
			l.diags = append(l.diags, ds...)
			for _, f := range files {
				data, diag := readDefinitionFile(f)
				if diag != nil {
					l.diags = append(l.diags, *diag)
					continue
				}
				if isMarkdown(f) && !hasFrontMatter(data) {
					l.diags = append(l.diags, Diagnostic{File: f, Severity: SeverityWarning, Message: "skipped: no front matter, so not an agent definition (start it with a \"---\" line to make it one)"})
					continue
				}
				def, ds := parseDefinition(f, data, ModeAuto)
				l.diags = append(l.diags, ds...)
				if def != nil {
					def.project = layer.Name == LayerProject
					l.parsed[i][def.name] = append(l.parsed[i][def.name], def)
				}
			}
		}
	}
	return l
}

// hides names what a project type called name would hide: a type of the
// user's own definitions, a type of a plugin that is not the project's
// own, or a builtin type; "" when nothing.
func (l layered) hides(reg *Registry, src Sources, name string) string {
	for i, layer := range l.layers {
		if layer.Name != LayerProject && len(l.parsed[i][name]) > 0 {
			return "the user's type " + name + " (" + l.parsed[i][name][0].path + ")"
		}
	}
	if reg == nil {
		return ""
	}
	base, ok := reg.baseType(name)
	switch {
	case !ok:
		return ""
	case src.ProjectSource != nil && src.ProjectSource(base.Source):
		return "" // the project's own plugin's
	case strings.HasPrefix(base.Source, "plugin:"):
		return "the type " + name + " of " + base.Source
	}
	return "the builtin type " + name
}

// Grants lists what the project layer of src needs trust for: every
// grant of every project definition, those Reload with src would ask
// TrustProject for, the commands the definitions would run (GrantRun)
// and the MCP servers the project names (GrantMCP: in its .mcp.json, its
// config, its definitions), which loading does not ask about, since a
// definition loads untrusted and only its commands and servers are
// refused. Nothing is compiled or
// resolved; reg (which may be nil) says which types a project type would
// hide.
func Grants(reg *Registry, src Sources) []Grant {
	l := parseLayers(src)
	var out []Grant
	for i, layer := range l.layers {
		if layer.Name != LayerProject {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(l.parsed[i])) {
			if kept, _, _ := pickDuplicate(l.parsed[i][name], layer.Name); kept != nil {
				out = append(out, grantsFor(kept, l.hides(reg, src, name))...)
				if g, ok := runGrant(kept); ok {
					out = append(out, g)
				}
				out = append(out, mcpGrants(kept)...)
			}
		}
	}
	decl, _ := ReadMCPDeclarations(src)
	return append(out, decl.Grants()...)
}

func load(reg *Registry, src Sources) loadResult {
	var res loadResult
	l := parseLayers(src)
	res.diags = append(res.diags, l.diags...)
	p := l.pick(reg, src)
	res.diags = append(res.diags, p.diags...)
	r := newResolver(p.visible, reg, true)
	r.projectRun = src.ProjectRun
	decl, ds := ReadMCPDeclarations(src)
	res.diags = append(res.diags, ds...)
	r.mcp, r.trustMCP = decl, src.TrustProject
	r.broken = p.broken
	r.withheld = p.withheld
	res.types = resolveShadowed(r, reg, p.shadows)
	res.types = append(res.types, projectRunTypes(reg, src, res.types)...)
	res.diags = append(res.diags, r.diags...)
	res.withheld = r.withheld
	p.addFailed(r)
	res.broken = p.brokenErrors()
	res.diags.Sort()
	return res
}

// picked is what choosing one definition for each name across the layers
// comes to, before anything is resolved.
type picked struct {
	visible  map[string]*definition // the winning definition of each name
	withheld map[string]Withheld
	shadows  map[string][]string
	broken   map[string]string    // name → file of the definition that failed
	twice    map[string][2]string // name → the files that both define it
	diags    Diagnostics
}

// pick chooses, layer by layer from the top, the definition each name
// stands for: the first layer that defines a name wins it, and every
// definition below is a shadow.
func (l layered) pick(reg *Registry, src Sources) picked {
	p := picked{
		visible:  map[string]*definition{},
		withheld: map[string]Withheld{},
		shadows:  map[string][]string{},
		broken:   map[string]string{},
		twice:    map[string][2]string{},
	}
	trust := src.TrustProject
	if trust == nil {
		trust = func(Grant) bool { return false }
	}
	for i, layer := range l.layers {
		inLayer := l.parsed[i]
		for _, name := range slices.Sorted(maps.Keys(inLayer)) {
			p.pickName(name, inLayer[name], layer.Name, func() string { return l.hides(reg, src, name) }, trust)
		}
	}
	return p
}

// pickName settles name for the definitions of it in one layer, entries;
// hides says what a project definition of it would hide, asked only when
// one would.
func (p *picked) pickName(name string, entries []*definition, layer string, hides func() string, trust func(Grant) bool) {
	kept, ignored, ds := pickDuplicate(entries, layer)
	p.diags = append(p.diags, ds...)
	if _, taken := p.visible[name]; taken || p.broken[name] != "" {
		for _, d := range entries {
			p.shadows[name] = append(p.shadows[name], d.path)
		}
		return
	}
	if kept == nil {
		p.broken[name] = entries[0].path + " and " + entries[1].path
		p.twice[name] = [2]string{entries[0].path, entries[1].path}
		return
	}
	if kept.project {
		if w, ok := withhold(kept, hides(), trust); !ok {
			// The name goes to the layers below, or to the builtin
			// type, as if the project did not define it.
			p.withheld[name] = w
			return
		}
	}
	p.visible[name] = kept
	for _, d := range ignored {
		p.shadows[name] = append(p.shadows[name], d.path)
	}
}

// resolveShadowed resolves every visible definition, and lists under each
// type what it shadows: the definitions below it, then the registry's own
// type of that name and what that one shadows.
func resolveShadowed(r *resolver, reg *Registry, shadows map[string][]string) []Type {
	var types []Type
	for _, t := range r.all() {
		t.Shadows = shadows[t.Name]
		if reg != nil {
			if base, ok := reg.baseType(t.Name); ok {
				t.Shadows = append(t.Shadows, sourceOf(base.Source))
				t.Shadows = append(t.Shadows, base.Shadows...)
			}
		}
		types = append(types, t)
	}
	return types
}

// addFailed marks broken each name whose definition did not resolve,
// except one held back until trusted, which is not broken.
func (p *picked) addFailed(r *resolver) {
	for name := range r.failed {
		if w, ok := r.withheld[name]; ok && w.Source == p.visible[name].path {
			continue // not broken: held back until trusted
		}
		delete(r.withheld, name)
		p.broken[name] = p.visible[name].path
	}
}

// brokenErrors is the error of each broken name, saying what to fix to
// load it; nil when nothing is broken.
func (p *picked) brokenErrors() map[string]error {
	if len(p.broken) == 0 {
		return nil
	}
	out := map[string]error{}
	for name, where := range p.broken {
		if pair, ok := p.twice[name]; ok {
			out[name] = fmt.Errorf("%w: type %q is not loaded: it is defined in both %s and %s; rename or delete one of them", ErrInvalid, name, pair[0], pair[1])
			continue
		}
		out[name] = fmt.Errorf("%w: type %q is not loaded: %s has errors; fix them to load it", ErrInvalid, name, where)
	}
	return out
}

// grantsFor is every grant a project definition needs: to hide another
// type (hidden, when not empty), and to run its scripts.
func grantsFor(d *definition, hidden string) []Grant {
	var grants []Grant
	if hidden != "" {
		grants = append(grants, Grant{Kind: GrantShadow, Type: d.name, File: d.path, Digest: d.digest, Detail: "it hides " + hidden})
	}
	if d.hooks != nil || len(d.scriptTools) > 0 {
		grants = append(grants, Grant{Kind: GrantScripts, Type: d.name, File: d.path, Digest: scriptsDigest(d), Detail: scriptsDetail(d)})
	}
	return grants
}

// withhold asks trust for every grant a project definition needs: to run
// its scripts, and to hide another type (hidden, when not empty). Every
// grant is asked, so that a caller that records them sees them all. It
// reports the definition withheld when any is refused.
func withhold(d *definition, hidden string, trust func(Grant) bool) (Withheld, bool) {
	grants := grantsFor(d, hidden)
	ok := true
	for _, g := range grants {
		if !trust(g) {
			ok = false
		}
	}
	if ok {
		d.trusted = true
		return Withheld{}, true
	}
	return Withheld{Name: d.name, Source: d.path, Grants: grants}, false
}

// pickDuplicate decides between the definitions of one name in one
// layer (layer is "" for the files LoadFiles is given). One definition is
// simply kept. When every one is a Claude Code file, the first by path is
// kept (the first that parsed without errors, if any did) and each other
// one is ignored with a warning naming it, since Claude Code users copy
// agents between collections and neither file is wrong on its own. Any
// other mix is an error on each definition, and none is kept: which of two
// troupe definitions was meant is not for troupe to guess.
func pickDuplicate(group []*definition, layer string) (kept *definition, ignored []*definition, diags Diagnostics) {
	if len(group) == 1 {
		return group[0], nil, nil
	}
	group = slices.Clone(group)
	if !slices.ContainsFunc(group, func(d *definition) bool { return !d.claude }) {
		slices.SortStableFunc(group, func(a, b *definition) int { return strings.Compare(a.path, b.path) })
		i := max(slices.IndexFunc(group, func(d *definition) bool { return !d.failed }), 0)
		kept = group[i]
		for _, d := range group {
			if d == kept {
				continue
			}
			at := d.at("name")
			diags = append(diags, Diagnostic{File: d.path, Line: at.line, Col: at.col, Severity: SeverityWarning,
				Message: fmt.Sprintf("type %q is also defined in %s, which is kept; this file is ignored: rename or delete one of them", d.name, kept.path)})
			ignored = append(ignored, d)
		}
		return kept, ignored, diags
	}
	for i, d := range group {
		other := group[(i+1)%len(group)]
		at := d.at("name")
		msg := fmt.Sprintf("type %q is also defined in %s; rename or delete one of them", d.name, other.path)
		if layer != "" {
			msg = fmt.Sprintf("type %q is defined twice in the %s layer, here and in %s; rename or delete one of them", d.name, layer, other.path)
		}
		diags = append(diags, Diagnostic{File: d.path, Line: at.line, Col: at.col, Severity: SeverityError, Message: msg})
	}
	return nil, nil, diags
}

// uniqueNames indexes definitions by name, choosing between those defined
// in more than one file as pickDuplicate does.
func uniqueNames(defs []*definition) (map[string]*definition, Diagnostics) {
	groups := map[string][]*definition{}
	for _, d := range defs {
		groups[d.name] = append(groups[d.name], d)
	}
	out := map[string]*definition{}
	var diags Diagnostics
	for name, g := range groups {
		kept, _, ds := pickDuplicate(g, "")
		diags = append(diags, ds...)
		if kept != nil {
			out[name] = kept
		}
	}
	return out, diags
}

// maxDefinitionFiles caps how many files one directory walk reads.
const maxDefinitionFiles = 10_000

// listDefinitionFiles walks dir for *.yaml, *.yml and *.md files, skipping
// hidden entries and not following symlinked directories (a symlink to a
// file is read). A missing dir gives nothing; the dir itself may be a
// symlink.
func listDefinitionFiles(dir string) ([]string, Diagnostics) {
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, Diagnostics{{File: dir, Severity: SeverityWarning, Message: fmt.Sprintf("cannot read this directory: %v", err)}}
	}
	if !info.IsDir() {
		return nil, Diagnostics{{File: dir, Severity: SeverityWarning, Message: "not a directory; agent definitions go in a directory of that name"}}
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	var files []string
	var diags Diagnostics
	err = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(real, p)
		shown := filepath.Join(dir, rel)
		if err != nil {
			diags = append(diags, Diagnostic{File: shown, Severity: SeverityWarning, Message: fmt.Sprintf("skipped: %v", err)})
			if d != nil && d.IsDir() && p != real {
				return filepath.SkipDir
			}
			return nil
		}
		if p != real && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !isDefinitionFile(p) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			st, err := os.Stat(p)
			if err != nil || !st.Mode().IsRegular() {
				return nil // a symlinked directory, or a dangling link
			}
		}
		if len(files) >= maxDefinitionFiles {
			diags = append(diags, Diagnostic{File: dir, Severity: SeverityWarning, Message: fmt.Sprintf("more than %d definition files; the rest are skipped", maxDefinitionFiles)})
			return filepath.SkipAll
		}
		files = append(files, shown)
		return nil
	})
	if err != nil {
		diags = append(diags, Diagnostic{File: dir, Severity: SeverityWarning, Message: fmt.Sprintf("walk stopped: %v", err)})
	}
	slices.Sort(files)
	return files, diags
}

func isDefinitionFile(p string) bool {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".yaml", ".yml", ".md":
		return true
	}
	return false
}

func isMarkdown(p string) bool {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".md", ".markdown":
		return true
	}
	return false
}

// hasFrontMatter reports whether Markdown text opens with "---".
func hasFrontMatter(data []byte) bool {
	s := strings.TrimLeft(strings.TrimPrefix(string(data[:min(len(data), 4096)]), "\ufeff"), " \t\r\n")
	return strings.HasPrefix(s, "---")
}

// readDefinitionFile reads a regular file of at most MaxDefinitionSize,
// checking the size before reading anything.
func readDefinitionFile(path string) ([]byte, *Diagnostic) {
	fail := func(format string, args ...any) ([]byte, *Diagnostic) {
		return nil, &Diagnostic{File: path, Severity: SeverityError, Message: fmt.Sprintf(format, args...)}
	}
	f, info, err := fsroot.OpenRegular(nil, path)
	if errors.Is(err, fsroot.ErrNotRegular) {
		return fail("not a regular file (a %s); a definition is a *.yaml, *.yml or *.md file", fsroot.Kind(info.Mode()))
	}
	if err != nil {
		return fail("cannot read: %v", unwrapPath(err))
	}
	defer f.Close()
	if info.Size() > MaxDefinitionSize {
		return fail("file is %s; definitions are limited to %s: move long text out of it", sizeString(info.Size()), sizeString(MaxDefinitionSize))
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxDefinitionSize+1))
	if err != nil {
		return fail("cannot read: %v", unwrapPath(err))
	}
	if len(data) > MaxDefinitionSize {
		return fail("file is over %s; definitions are limited to that: move long text out of it", sizeString(MaxDefinitionSize))
	}
	return data, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
