package agenttypes

import (
	"slices"
	"strings"
)

// applyWorkspace gives t d's workspace, run policy and setup over what it
// has from its parent, field by field as a budget, settles the commands
// of its run tool, and reports what makes them unusable where d says it.
func (r *resolver) applyWorkspace(d *definition, t *Type) {
	switch {
	case d.has("workspace"):
		t.Workspace = d.workspace
	case d.has("isolation"):
		t.Workspace = WorkspaceWorktree
	}
	if d.has("run.allow") || (d.bash != nil && len(d.bash.allow) > 0) {
		t.Run.Allow = ownAllow(d)
	}
	if d.has("run.timeout") {
		t.Run.Timeout = d.run.Timeout
	}
	if d.has("run.network") {
		t.Run.Network = d.run.Network
	}
	if d.has("setup") {
		t.Setup = slices.Clone(d.setup)
	}
	r.settleRunTool(d, t)
	r.checkWorkspace(d, t)
}

// ownAllow is the command prefixes d gives: its run.allow, then those its
// Bash patterns give.
func ownAllow(d *definition) []string {
	out := slices.Clone(d.run.Allow)
	if out == nil {
		out = []string{}
	}
	if d.bash != nil {
		for _, a := range d.bash.allow {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// settleRunTool gives a type that lists run and has no command the
// project's. Without them, Claude Code's Bash is dropped with a warning
// saying how to allow commands; troupe's own run is kept, with a warning
// that it refuses every command.
func (r *resolver) settleRunTool(d *definition, t *Type) {
	if !slices.Contains(t.Tools, "run") || len(t.Run.Allow) > 0 {
		return
	}
	if p := r.projectRun; p != nil && len(p.Allow) > 0 && !d.has("run.allow") {
		t.Run.Allow = slices.Clone(p.Allow)
		if !d.has("run.timeout") && p.Timeout > 0 {
			t.Run.Timeout = p.Timeout
		}
		if !d.has("run.network") {
			t.Run.Network = p.Network
		}
		return
	}
	switch {
	case d.bash != nil:
		t.Tools = slices.DeleteFunc(t.Tools, func(name string) bool { return name == "run" })
		r.warnf(d, d.bash.at, "tool \"Bash\" is troupe's run, which needs a list of the commands it may start; none is given, so the agent runs without it: "+
			"add run: {allow: [\"go test\", \"make\"]} to this file's front matter, or to the project's .troupe/config.yaml")
	case d.has("tools") && slices.Contains(d.tools, "run"):
		at := d.toolPos[slices.Index(d.tools, "run")]
		r.warnf(d, at, "run is given no command, so it refuses every one; add run: {allow: [\"go test\", \"make\"]} to this definition, or to the project's .troupe/config.yaml")
	}
}

// checkWorkspace reports a workspace of none with a changing tool or
// setup commands, and a setup command run.allow does not allow, where d
// says them.
func (r *resolver) checkWorkspace(d *definition, t *Type) {
	if t.Workspace == WorkspaceNone {
		if i := slices.IndexFunc(t.Tools, func(name string) bool { return slices.Contains(ChangingTools, name) }); i >= 0 {
			tool, at := t.Tools[i], d.at("workspace")
			if j := slices.Index(d.tools, tool); !d.has("workspace") && d.has("tools") && j >= 0 {
				at = d.toolPos[j]
			}
			r.errorf(d, at, "workspace is none, and the type lists %s, which changes files and so works only in a workspace of its own; "+
				"remove workspace: none (a worktree is the default for such a type), or take %s out of tools", tool, tool)
		}
		if len(t.Setup) > 0 {
			r.errorf(d, d.at("workspace"), "workspace is none, and the type names setup commands, which prepare a workspace of its own; remove one or the other")
		}
	}
	for i, line := range t.Setup {
		args, err := SplitCommand(line)
		if err != nil || len(args) == 0 || t.Run.Allows(args) {
			continue
		}
		at := d.at("run.allow")
		if d.has("setup") && i < len(d.setupAt) {
			at = d.setupAt[i]
		}
		r.errorf(d, at, "setup command %q is not allowed by run.allow; add it, or a prefix of it such as %q, to run.allow", line, args[0])
	}
}

// projectRunTypes gives the registered types that run commands (the
// builtin general, say) the project's own list in place of their
// default one: a copy of each, hiding it, for every such type no
// definition file hides already. None without a trusted project list.
func projectRunTypes(reg *Registry, src Sources, files []Type) []Type {
	p := src.ProjectRun
	if reg == nil || p == nil || len(p.Allow) == 0 {
		return nil
	}
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	var out []Type
	for name, base := range reg.types {
		_, plugin := reg.plugins[name]
		hidden := plugin || slices.ContainsFunc(files, func(t Type) bool { return t.Name == name })
		if hidden || !slices.Contains(base.Tools, "run") {
			continue
		}
		t := *base.clone()
		t.Run.Allow = slices.Clone(p.Allow)
		if p.Timeout > 0 {
			t.Run.Timeout = p.Timeout
		}
		t.Run.Network = p.Network
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Type) int { return strings.Compare(a.Name, b.Name) })
	return out
}
