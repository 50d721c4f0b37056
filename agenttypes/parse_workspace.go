package agenttypes

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/troupe-dev/troupe/builtin/suggest"
)

var runFields = []string{"allow", "timeout", "network"}

// bashTool is Claude Code's Bash in a tools list: troupe's run, which
// needs a list of the commands it may start.
type bashTool struct {
	at pos
	// allow are the command prefixes its patterns give, as in
	// Bash(go test:*).
	allow []string
}

// workspace decodes workspace:, worktree or none.
func (dc *decoder) workspace(k, v *yaml.Node) {
	d := dc.def
	s, ok := dc.str(k, v)
	if !ok {
		return
	}
	switch w := strings.ToLower(strings.TrimSpace(s)); w {
	case "":
		delete(d.given, "workspace") // "workspace:" with nothing: the default
	case WorkspaceWorktree, WorkspaceNone:
		d.workspace = w
		d.given["workspace"] = dc.pos(v)
	default:
		dc.errorf(v, "workspace %q: write %s (a workspace of its own, the default for a type that changes files) or %s (the directory it is given, to read only)", s, WorkspaceWorktree, WorkspaceNone)
	}
}

// isolation decodes Claude Code's isolation:, whose one value, worktree,
// is troupe's workspace: worktree.
func (dc *decoder) isolation(k, v *yaml.Node) {
	s, ok := dc.str(k, v)
	if ok && strings.EqualFold(strings.TrimSpace(s), WorkspaceWorktree) {
		return
	}
	delete(dc.def.given, "isolation")
	if ok && strings.TrimSpace(s) != "" {
		dc.warnf(v, "isolation %q: troupe knows isolation: worktree, which is its default for a type that changes files; ignored", s)
	}
}

// run decodes run: {allow, timeout, network}.
func (dc *decoder) run(v *yaml.Node) {
	d := dc.def
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return
	}
	if v.Kind != yaml.MappingNode {
		dc.errorf(v, "run is a mapping, such as %s", topFields["run"])
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], deref(v.Content[i+1])
		key := k.Value
		if seen[key] {
			dc.problem(k, "run.%s is given twice; keep one", key)
		}
		seen[key] = true
		switch key {
		case "allow":
			if allow, _ := dc.commands("run.allow", val, MaxRunAllow, topFields["run"]); allow != nil {
				d.run.Allow = allow
				d.given["run.allow"] = dc.pos(k)
			}
		case "timeout":
			limit := dc.positiveDuration(k, val, "give a positive duration, or leave timeout out for the default of "+shortDuration(DefaultRunTimeout))
			switch {
			case limit > MaxRunTimeout:
				dc.errorf(val, "run.timeout is %s; a command may run for %s at most", strings.TrimSpace(val.Value), shortDuration(MaxRunTimeout))
			case limit > 0:
				d.run.Timeout = limit
				d.given["run.timeout"] = dc.pos(val)
			}
		case "network":
			if b, ok := dc.boolean(k, val); ok {
				d.run.Network = b
				d.given["run.network"] = dc.pos(val)
			}
		default:
			hint := "; the run fields are allow, timeout and network"
			if near := suggest.Nearest(key, runFields); near != "" {
				hint = fmt.Sprintf("; did you mean %q?", near)
			}
			dc.problem(k, "unknown run field %q%s", key, hint)
		}
	}
}

// commands reads field, a list of at most limit command lines, each split
// as SplitCommand splits it and no longer than MaxCommandLength; example
// shows the field written well. A null value gives nil, [] an empty list.
func (dc *decoder) commands(field string, v *yaml.Node, limit int, example string) ([]string, []pos) {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		dc.errorf(v, "%s is a list of commands, each one quoted string, as in %s", field, example)
		return nil, nil
	}
	out, at := []string{}, []pos{}
	for i, item := range v.Content {
		item = deref(item)
		if i == limit {
			dc.errorf(item, "%s has %d commands; keep it to %d", field, len(v.Content), limit)
			break
		}
		if line, ok := dc.command(field, item); ok {
			out, at = append(out, line), append(at, dc.pos(item))
		}
	}
	return out, at
}

// command reads one command line of a list.
func (dc *decoder) command(field string, item *yaml.Node) (string, bool) {
	line := strings.TrimSpace(item.Value)
	if item.Kind != yaml.ScalarNode || item.Tag == "!!null" || line == "" {
		dc.errorf(item, "%s: each item is a command, such as \"go test\"", field)
		return "", false
	}
	if len(line) > MaxCommandLength {
		dc.errorf(item, "%s: this command is %d bytes long; keep each to %d", field, len(line), MaxCommandLength)
		return "", false
	}
	if _, err := SplitCommand(line); err != nil {
		dc.errorf(item, "%s: %q: %v", field, line, err)
		return "", false
	}
	return line, true
}

// shortDuration writes d as 2m rather than 2m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
