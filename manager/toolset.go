package manager

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
)

// typeSetup is what the manager derives from a type once and reuses for
// every agent of it: its tools, its compiled prompt and the tokens its tool
// definitions take in every model call.
type typeSetup struct {
	typ    *agenttypes.Type
	tools  *toolset
	prompt *agenttypes.Prompt
	// specsJSON is the tool definitions as the model receives them, for
	// token estimates; specTokens caches their count per model name.
	specsJSON  string
	specTokens sync.Map // model name → int
}

// toolset is the tools one type may call.
type toolset struct {
	byName map[string]agenttypes.Tool
	specs  []llms.Tool
	names  string // for refusals: "read, grep, glob"
}

// setup returns the type's setup, building it on first use. Setups are
// kept by type name, and a type reloaded under the same name replaces the
// old one's entry, so a long-lived host that reloads its registry keeps
// one setup per name rather than one per reload.
func (m *Manager) setup(typ *agenttypes.Type) (*typeSetup, error) {
	if v, ok := m.setups.Load(typ.Name); ok {
		if s := v.(*typeSetup); s.typ == typ {
			return s, nil
		}
	}
	s := &typeSetup{typ: typ, tools: &toolset{byName: make(map[string]agenttypes.Tool, len(typ.Tools))}}
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
		s.tools.byName[name] = tool
		s.tools.specs = append(s.tools.specs, llms.Tool{
			Type:     "function",
			Function: &llms.FunctionDefinition{Name: name, Description: spec.Description, Parameters: params},
		})
	}
	s.tools.names = strings.Join(typ.Tools, ", ")
	if len(s.tools.specs) > 0 {
		b, err := json.Marshal(s.tools.specs)
		if err != nil {
			return nil, fmt.Errorf("type %q: tool definitions do not encode as JSON: %w", typ.Name, err)
		}
		s.specsJSON = string(b)
	}
	prompt, err := agenttypes.CompilePrompt(typ.Name, typ.Prompt)
	if err != nil {
		return nil, fmt.Errorf("type %q: %w", typ.Name, err)
	}
	s.prompt = prompt
	m.setups.Store(typ.Name, s)
	return s, nil
}

// toolTokens is how many tokens the type's tool definitions take in a call
// to the named model.
func (s *typeSetup) toolTokens(modelName string, model llms.Model) int {
	if s.specsJSON == "" {
		return 0
	}
	if v, ok := s.specTokens.Load(modelName); ok {
		return v.(int)
	}
	n := countTokens(model, s.specsJSON)
	s.specTokens.Store(modelName, n)
	return n
}

// TokenCounter is implemented by models that count tokens the way their
// provider does. The manager uses it, when the model has it, for the
// estimate it makes before every call of what the conversation takes;
// otherwise it counts four characters a token.
type TokenCounter interface {
	CountTokens(text string) int
}

func countTokens(model llms.Model, text string) int {
	if c, ok := model.(TokenCounter); ok {
		return c.CountTokens(text)
	}
	return estimateTokens(len(text))
}
