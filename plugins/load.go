package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/process"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// Checksum statuses of a plugin, as troupe plugins list shows them.
const (
	// StatusLocked: the lock file lists the plugin and its binary matches.
	StatusLocked = "locked"
	// StatusUnlocked: there is no lock file; the plugin runs unchecked.
	StatusUnlocked = "unlocked"
	// StatusUnlisted: the lock file does not list the plugin; it is refused.
	StatusUnlisted = "unlisted"
	// StatusMismatch: the binary does not match the lock file; it is refused.
	StatusMismatch = "mismatch"
	// StatusUntrusted: a plugin of the project, whose binary the user has
	// not trusted; it is neither run nor described.
	StatusUntrusted = "untrusted"
)

// Info describes a discovered plugin.
type Info struct {
	Binary
	// Version is the plugin's own version, from Describe.
	Version string `json:"version,omitempty"`
	// Status is one of the Status constants.
	Status string `json:"status"`
	// SHA256 is the binary's checksum; Locked the lock file's, if any.
	SHA256 string `json:"sha256,omitempty"`
	Locked string `json:"locked_sha256,omitempty"`
	// Types and Tools are what it offers.
	Types []string `json:"types,omitempty"`
	Tools []string `json:"tools,omitempty"`
	// Error says why the plugin cannot be used, when it cannot.
	Error string `json:"error,omitempty"`
	err   error
	// offered is what a refused plugin offered when it last ran, if that
	// is known: only errors name it.
	offered *pluginv1.DescribeResponse
}

// Load discovers the plugins, learns what each offers, and sets their
// types and tools in reg
// (see agenttypes.Registry.SetPlugins). Plugins that are refused or fail
// are left out and reported; the rest load. Loading again re-enables
// plugins disabled after crashes. Processes stay running for the agents
// that will use them.
func (h *Host) Load(ctx context.Context, reg *agenttypes.Registry) []error {
	infos, problems := h.load(ctx)
	var types []agenttypes.Type
	var tools []agenttypes.Tool
	typeAt := map[string]int{}
	toolFrom := map[string]string{}
	for _, in := range infos {
		p := h.proc(in.Name)
		if p == nil || in.Error != "" {
			continue
		}
		p.mu.Lock()
		d := p.desc
		p.mu.Unlock()
		if d == nil {
			continue
		}
		for _, t := range d.GetTypes() {
			typ := p.typeOf(t)
			if i, ok := typeAt[typ.Name]; ok {
				types[i].Shadows = append(types[i].Shadows, typ.Source)
				continue
			}
			if err := typ.Validate(); err != nil {
				problems = append(problems, fmt.Errorf("plugin %s: %w; the type is left out until the plugin fixes it", in.Name, err))
				continue
			}
			if typ.Allows("run") && len(typ.Run.Allow) == 0 {
				h.cfg.Logger.Warn("a plugin's type lists run and allows no command, so run refuses every one; give the type's Run.Allow",
					"plugin", in.Name, "type", typ.Name)
			}
			typeAt[typ.Name] = len(types)
			types = append(types, typ)
		}
		for _, spec := range d.GetTools() {
			name := spec.GetName()
			if other, ok := toolFrom[name]; ok {
				problems = append(problems, fmt.Errorf("plugin %s: tool %q is left out: plugin %s offers it first", in.Name, name, other))
				continue
			}
			if _, err := reg.Tool(name); err == nil && !p.h.isPluginTool(reg, name) {
				problems = append(problems, fmt.Errorf("plugin %s: tool %q is left out: a builtin tool has the name", in.Name, name))
				continue
			}
			toolFrom[name] = in.Name
			tools = append(tools, &pluginTool{p: p, spec: specOf(spec)})
		}
	}
	if err := reg.SetPlugins(types, tools); err != nil {
		problems = append(problems, err)
	}
	reg.SetRefusedPlugins(refused(infos))
	return problems
}

// refused lists the plugins that the lock file or the user's trust
// refused, with what each offered when it last ran, if that is known.
func refused(infos []Info) []agenttypes.RefusedPlugin {
	var out []agenttypes.RefusedPlugin
	for _, in := range infos {
		switch in.Status {
		case StatusUnlisted, StatusMismatch, StatusUntrusted:
		default:
			continue
		}
		if in.err == nil {
			continue
		}
		r := agenttypes.RefusedPlugin{Name: in.Name, Reason: in.err}
		if d := in.offered; d != nil {
			r.Types, r.Tools = []string{}, []string{}
			for _, t := range d.GetTypes() {
				r.Types = append(r.Types, t.GetName())
			}
			for _, t := range d.GetTools() {
				r.Tools = append(r.Tools, t.GetName())
			}
		}
		out = append(out, r)
	}
	return out
}

// isPluginTool reports whether the registry's tool of that name is one
// of a plugin's (set by an earlier Load).
func (h *Host) isPluginTool(reg *agenttypes.Registry, name string) bool {
	t, err := reg.Tool(name)
	if err != nil {
		return false
	}
	_, ok := t.(*pluginTool)
	return ok
}

// List discovers the plugins and describes each as Load does, without
// touching a registry.
func (h *Host) List(ctx context.Context) ([]Info, []error) {
	return h.load(ctx)
}

func (h *Host) proc(name string) *proc {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.procs[name]
}

func (h *Host) load(ctx context.Context) ([]Info, []error) {
	bins, problems := Discover(h.cfg.Dirs)
	bins = h.yieldUntrusted(bins)
	var lock *Lock
	if h.cfg.LockFile != "" {
		l, err := ReadLock(h.cfg.LockFile)
		if err != nil {
			problems = append(problems, err)
			// An unreadable lock refuses every plugin rather than none.
			l = &Lock{Plugins: map[string]LockEntry{}}
		}
		lock = l
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, append(problems, ErrClosed)
	}
	h.lock = lock
	var gone []*proc
	procs := map[string]*proc{}
	for _, b := range bins {
		stamp := stampOf(b.Path)
		if p, ok := h.procs[b.Name]; ok && p.bin.Path == b.Path && p.stamp == stamp {
			p.mu.Lock()
			p.bin, p.disabled, p.crashes = b, nil, nil
			p.mu.Unlock()
			procs[b.Name] = p
			continue
		}
		procs[b.Name] = &proc{h: h, bin: b, stamp: stamp}
	}
	for name, p := range h.procs {
		if procs[name] != p {
			gone = append(gone, p)
			h.dropped = append(h.dropped, p)
		}
	}
	h.procs = procs
	h.mu.Unlock()
	for _, p := range gone {
		p.stop()
	}

	infos := make([]Info, len(bins))
	var wg sync.WaitGroup
	for i, b := range bins {
		p := procs[b.Name]
		wg.Go(func() { infos[i] = p.info(ctx, lock) })
	}
	wg.Wait()
	for _, in := range infos {
		if in.err != nil {
			problems = append(problems, in.err)
		}
	}
	return infos, problems
}

// yieldUntrusted gives the name of a project's plugin that is not trusted
// back to the plugin of the user's own folders it would hide: a project
// cannot switch off the user's plugin by shipping one of the same name.
// The project's binary is then listed among the ones it shadows.
func (h *Host) yieldUntrusted(bins []Binary) []Binary {
	var others map[string]Binary
	for i, b := range bins {
		if b.Layer != LayerProject || len(b.Shadows) == 0 {
			continue
		}
		if h.cfg.TrustProject != nil {
			if sum, err := h.cfg.Digests.Checksum(b.Path); err == nil && h.trusts(b, sum) {
				continue
			}
		}
		if others == nil {
			var dirs []Dir
			for _, d := range h.cfg.Dirs {
				if d.Layer != LayerProject {
					dirs = append(dirs, d)
				}
			}
			found, _ := Discover(dirs)
			others = map[string]Binary{}
			for _, o := range found {
				others[o.Name] = o
			}
		}
		if o, ok := others[b.Name]; ok {
			o.Shadows = append([]string{b.Path}, o.Shadows...)
			bins[i] = o
		}
	}
	return bins
}

// info describes p: from what the plugin said of itself before, in this
// host or, for the same binary, in the description cache; else by
// starting it.
func (p *proc) info(ctx context.Context, lock *Lock) Info {
	in := Info{Binary: p.bin, Status: StatusUnlocked}
	if lock != nil || p.bin.Layer == LayerProject {
		im, err := p.image()
		if err != nil {
			in.err = fmt.Errorf("plugin %s: %w", p.bin.Name, err)
			in.Error = in.err.Error()
			return in
		}
		sum := im.SHA256
		in.SHA256 = sum
		if !p.h.trusts(p.bin, sum) {
			in.Status = StatusUntrusted
			in.err = p.untrusted()
			in.Error = in.err.Error()
			in.offered = p.h.cachedDescription(p.cacheKey())
			return in
		}
	}
	if lock != nil {
		sum := in.SHA256
		e, ok := lock.Plugins[p.bin.Name]
		in.Locked = e.SHA256
		switch {
		case !ok:
			in.Status = StatusUnlisted
		case e.SHA256 != sum:
			in.Status = StatusMismatch
		default:
			in.Status = StatusLocked
		}
	}
	if in.SHA256 != "" && (in.Status == StatusLocked || in.Status == StatusUnlocked) {
		p.rememberImage()
	}
	// A plugin the lock file refuses gets no description from the cache:
	// get refuses it, without running it, and says why. What the cache
	// holds of it only names, in errors, what it would have offered.
	if in.Status == StatusUnlisted || in.Status == StatusMismatch {
		in.offered = p.h.cachedDescription(p.cacheKey())
	}
	p.mu.Lock()
	if p.desc == nil && (in.Status == StatusLocked || in.Status == StatusUnlocked) {
		p.desc = p.h.cachedDescription(p.cacheKey())
	}
	d := p.desc
	p.mu.Unlock()
	if d == nil {
		late := fmt.Errorf("%w: plugin %s did not start in %s", ErrStart, p.bin.Name, p.h.cfg.StartTimeout)
		sctx, cancel := context.WithTimeoutCause(ctx, p.h.cfg.StartTimeout+time.Second, late)
		_, err := p.get(sctx)
		if err != nil && ctx.Err() == nil && sctx.Err() != nil {
			err = context.Cause(sctx)
		}
		cancel()
		if err != nil {
			in.err, in.Error = err, err.Error()
			return in
		}
		p.mu.Lock()
		d = p.desc
		p.mu.Unlock()
	}
	in.Version = d.GetVersion()
	for _, t := range d.GetTypes() {
		in.Types = append(in.Types, t.GetName())
	}
	for _, t := range d.GetTools() {
		in.Tools = append(in.Tools, t.GetName())
	}
	return in
}

// image is p's binary read and hashed, once: it is kept, so that the
// process started next runs the very bytes whose checksum was shown and
// checked, without reading them again.
func (p *proc) image() (*process.Image, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.img != nil {
		return p.img, nil
	}
	im, err := p.h.cfg.Digests.Open(p.bin.Path)
	if err != nil {
		return nil, err
	}
	p.img = im
	return im, nil
}

// rememberImage keeps the checksum of p's image, which passed the user's
// trust and the lock file, so that the next command need not hash the
// unchanged binary again (see Config.Digests). A refused binary leaves
// nothing behind.
func (p *proc) rememberImage() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.img != nil {
		p.h.cfg.Digests.Remember(p.img)
	}
}

// typeOf is the registry's form of a type the plugin offers. Load then
// checks it as it checks any type (agenttypes.Type.Validate): a workspace
// mode, run policy or setup command that is unusable refuses that type
// alone, with an error that names the plugin.
//
// A plugin's run list is no trust item of its own, as the lists of a
// project's definition files and config are: a project's plugin runs only
// once the user has trusted the project and its binary, and a plugin of
// the user's own folders is the user's. A plugin that runs at all may
// start any command itself; the commands it lets its agents run grant it
// nothing more.
func (p *proc) typeOf(t *pluginv1.Type) agenttypes.Type {
	b, run := t.GetBudget(), t.GetRun()
	typ := agenttypes.Type{
		Name: t.GetName(), Description: t.GetDescription(), Prompt: t.GetPrompt(), Tools: t.GetTools(), Model: t.GetModel(),
		Budget: agenttypes.Budget{
			MaxTokens: int(b.GetMaxTokens()), MaxTime: millis(b.GetMaxTimeMs()),
			MaxToolCalls: int(b.GetMaxToolCalls()), MaxTurns: int(b.GetMaxTurns()), MaxCostUSD: b.GetMaxCostUsd(),
		},
		NeedsLanguageModel: t.GetNeedsLanguageModel(), Examples: t.GetExamples(),
		Workspace: t.GetWorkspace(),
		Run:       agenttypes.RunPolicy{Allow: run.GetAllow(), Timeout: millis(run.GetTimeoutMs()), Network: run.GetNetwork()},
		Setup:     t.GetSetup(),
		Source:    "plugin:" + p.bin.Name,
	}
	if len(t.GetOutputJsonSchema()) > 0 {
		typ.Output = agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(t.GetOutputJsonSchema())}
	}
	if t.GetHasLoop() {
		typ.Loop = &pluginLoop{p: p, typ: t.GetName()}
	}
	return typ
}

// millis is ms milliseconds, saturated at the largest durations either
// way: a count too large to be a Duration stays too large (or too
// negative) for Validate to refuse, rather than wrapping around to a
// duration that looks reasonable.
func millis(ms int64) time.Duration {
	const most = math.MaxInt64 / int64(time.Millisecond)
	switch {
	case ms > most:
		return math.MaxInt64
	case ms < -most:
		return math.MinInt64
	}
	return time.Duration(ms) * time.Millisecond
}

func specOf(s *pluginv1.ToolSpec) agenttypes.ToolSpec {
	return agenttypes.ToolSpec{Name: s.GetName(), Description: s.GetDescription(), Parameters: json.RawMessage(s.GetParameters()), ReadOnly: s.GetReadOnly()}
}
