package manager

import (
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
)

// toolset is the tools one type may call, resolved once per type.
type toolset struct {
	byName map[string]agenttypes.Tool
	specs  []llms.Tool
	names  string // for refusals: "read, grep, glob"
}

func (m *Manager) toolset(typ *agenttypes.Type) (*toolset, error) {
	if v, ok := m.toolsets.Load(typ); ok {
		return v.(*toolset), nil
	}
	ts := &toolset{byName: make(map[string]agenttypes.Tool, len(typ.Tools))}
	for _, name := range typ.Tools {
		tool, err := m.cfg.Registry.Tool(name)
		if err != nil {
			return nil, fmt.Errorf("type %q allows tool %q, which is not registered: %w", typ.Name, name, err)
		}
		spec := tool.Spec()
		params := any(spec.Parameters)
		if len(spec.Parameters) == 0 {
			params = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		ts.byName[name] = tool
		ts.specs = append(ts.specs, llms.Tool{
			Type:     "function",
			Function: &llms.FunctionDefinition{Name: name, Description: spec.Description, Parameters: params},
		})
	}
	ts.names = strings.Join(typ.Tools, ", ")
	v, _ := m.toolsets.LoadOrStore(typ, ts)
	return v.(*toolset), nil
}
