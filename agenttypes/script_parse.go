package agenttypes

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/troupe-dev/troupe/builtin/fsroot"
	"github.com/troupe-dev/troupe/builtin/suggest"
)

var scriptToolFields = []string{"name", "description", "parameters", "script", "script_file", "read_only"}

// script reads script: (Go source, usually a YAML block) or script_file: (a
// .go file beside the definition).
func (dc *decoder) script(k, v *yaml.Node) *Script {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" || strings.TrimSpace(v.Value) == "" {
		if k.Value == "script_file" {
			dc.errorf(v, "script_file names a .go file beside the definition, such as script_file: hooks.go")
		} else {
			dc.errorf(v, "script is Go source, written as a block:\n  script: |\n    package hooks\n    ...")
		}
		return nil
	}
	if k.Value == "script_file" {
		return dc.scriptFile(v)
	}
	if len(v.Value) > MaxScriptSize {
		dc.errorf(v, "the script is %s; scripts are limited to %s", sizeString(int64(len(v.Value))), sizeString(MaxScriptSize))
		return nil
	}
	s := &Script{Source: v.Value, File: dc.def.path}
	p := dc.pos(v)
	switch v.Style {
	case yaml.LiteralStyle, yaml.FoldedStyle:
		// The block starts on the line after its indicator; YAML strips
		// its indentation, which columns must add back.
		s.Line = p.line + 1
		for i := p.line; i < len(dc.lines); i++ { // dc.lines[i] is line i+1
			if t := strings.TrimLeft(dc.lines[i], " "); t != "" {
				s.Line, s.Col = i+1, len(dc.lines[i])-len(t)
				break
			}
		}
		// Leading blank lines of the block are dropped from the value.
		for strings.HasPrefix(s.Source, "\n") {
			s.Source = s.Source[1:]
		}
	default:
		s.Line, s.Col = p.line, p.col-1
		if v.Style != 0 {
			s.Col++ // the opening quote
		}
	}
	return s
}

// scriptFile reads the file v names, which must lie in the definition's
// directory or below it.
func (dc *decoder) scriptFile(v *yaml.Node) *Script {
	name := strings.TrimSpace(v.Value)
	if !filepath.IsLocal(name) {
		dc.errorf(v, "script_file %q: name a file in the definition's directory or below it, such as hooks.go", name)
		return nil
	}
	if filepath.Ext(name) != ".go" {
		dc.errorf(v, "script_file %q: a script is a .go file", name)
		return nil
	}
	dir := filepath.Dir(dc.def.path)
	shown := filepath.Join(dir, name)
	root, err := os.OpenRoot(dir)
	if err != nil {
		dc.errorf(v, "script_file %q: cannot read it: %v", name, unwrapPath(err))
		return nil
	}
	defer root.Close()
	f, fi, err := fsroot.OpenRegular(root, name)
	if errors.Is(err, fsroot.ErrNotRegular) {
		dc.errorf(v, "script_file %q is a %s, not a regular file", name, fsroot.Kind(fi.Mode()))
		return nil
	}
	if err != nil {
		dc.errorf(v, "script_file %q: cannot read it: %v", name, unwrapPath(err))
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxScriptSize+1))
	switch {
	case err != nil:
		dc.errorf(v, "script_file %q: cannot read it: %v", name, unwrapPath(err))
		return nil
	case len(data) > MaxScriptSize:
		dc.errorf(v, "script_file %q is over %s, the limit for a script", name, sizeString(MaxScriptSize))
		return nil
	}
	if _, _, msg := checkText(data); msg != "" {
		dc.errorf(v, "script_file %q: %s", name, msg)
		return nil
	}
	return &Script{Source: string(data), File: shown, Line: 1}
}

// scriptTools reads script_tools: a list of {name, description,
// parameters, script | script_file}.
func (dc *decoder) scriptTools(v *yaml.Node) {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return
	}
	if v.Kind != yaml.SequenceNode {
		dc.errorf(v, "script_tools is a list of tools, each with name, description, parameters and script (or script_file)")
		return
	}
	d := dc.def
	for _, item := range v.Content {
		item = deref(item)
		if item.Kind != yaml.MappingNode {
			dc.errorf(item, "each script tool is a mapping: {name: count_todos, description: ..., parameters: {type: object}, script_file: count.go}")
			continue
		}
		decl := dc.scriptTool(item)
		// A wrong field is reported already; a tool with one is not
		// checked for what it lacks or for a repeated name.
		if !decl.ok || !dc.scriptToolComplete(item, decl) || dc.scriptToolTwice(item, decl.tool.Name) {
			continue
		}
		t := decl.tool
		if len(t.Parameters) == 0 {
			t.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		t.Script = *decl.script
		d.scriptTools = append(d.scriptTools, t)
		d.toolAt = append(d.toolAt, dc.pos(item))
	}
}

// scriptToolDecl is one item of script_tools: as its fields are read.
type scriptToolDecl struct {
	tool   ScriptTool
	script *Script // the body; nil until one is read
	ok     bool    // false once a field is wrong
}

// scriptTool reads the fields of one item of script_tools:.
func (dc *decoder) scriptTool(item *yaml.Node) *scriptToolDecl {
	decl := &scriptToolDecl{ok: true}
	for i := 0; i+1 < len(item.Content); i += 2 {
		k, val := item.Content[i], deref(item.Content[i+1])
		if !dc.scriptToolField(decl, k, val) {
			decl.ok = false
		}
	}
	return decl
}

// scriptToolField reads the field k of a script tool into decl; false
// when the field is wrong, which has been reported.
func (dc *decoder) scriptToolField(decl *scriptToolDecl, k, val *yaml.Node) bool {
	t := &decl.tool
	switch k.Value {
	case "name":
		s, _ := dc.str(k, val)
		t.Name = strings.TrimSpace(s)
		if !toolName.MatchString(t.Name) {
			dc.errorf(val, "script tool name %q: use lower-case letters, digits and '_', such as count_todos", t.Name)
			return false
		}
	case "description":
		s, _ := dc.str(k, val)
		t.Description = strings.TrimSpace(s)
	case "parameters":
		raw, ok := dc.scriptToolParameters(val)
		if !ok {
			return false
		}
		t.Parameters = raw
	case "script", "script_file":
		if decl.script != nil {
			dc.errorf(k, "give a script tool's body once: script: or script_file:, not both")
			return false
		}
		if decl.script = dc.script(k, val); decl.script == nil {
			return false
		}
	case "read_only":
		dc.boolean(k, val) // every script tool is read-only: scripts cannot write
	default:
		hint := "; the fields are " + strings.Join(scriptToolFields, ", ")
		if near := suggest.Nearest(k.Value, scriptToolFields); near != "" {
			hint = fmt.Sprintf("; did you mean %q?", near)
		}
		dc.errorf(k, "unknown script tool field %q%s", k.Value, hint)
		return false
	}
	return true
}

// scriptToolParameters reads a script tool's parameters:, which must be a
// JSON schema object.
func (dc *decoder) scriptToolParameters(val *yaml.Node) (json.RawMessage, bool) {
	raw, err := schemaJSON(val)
	if err == nil {
		err = checkSchema(raw)
	}
	if err != nil {
		dc.errorf(val, "parameters of a script tool is a JSON schema object, such as {type: object, properties: {path: {type: string}}}: %v", err)
		return nil, false
	}
	return raw, true
}

// scriptToolComplete reports whether a script tool has what every tool
// needs: a name, a description and a body; it says which is missing.
func (dc *decoder) scriptToolComplete(item *yaml.Node, decl *scriptToolDecl) bool {
	t := decl.tool
	switch {
	case t.Name == "":
		dc.errorf(item, "this script tool has no name: add name: such as count_todos")
	case t.Description == "":
		dc.errorf(item, "script tool %q has no description: say when the model should call it", t.Name)
	case decl.script == nil:
		dc.errorf(item, "script tool %q has no body: add script: (Go source with func Run(args map[string]any) (string, error)) or script_file:", t.Name)
	default:
		return true
	}
	return false
}

// scriptToolTwice reports whether the definition already declares a
// script tool called name, saying where.
func (dc *decoder) scriptToolTwice(item *yaml.Node, name string) bool {
	d := dc.def
	twice := false
	for j, other := range d.scriptTools {
		if other.Name == name {
			dc.errorf(item, "script tool %q is declared twice (first at line %d)", name, d.toolAt[j].line)
			twice = true
		}
	}
	return twice
}

// errNoCompiler is why a definition with a script does not load in a
// program that serves no scripts.
var errNoCompiler = errors.New("this program runs no scripts (the registry it loads definitions with has no script compiler: see Registry.SetScriptCompiler and builtin/script)")
