package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
)

// ErrBadInput marks a call whose arguments the server refuses; the
// message says what the tool takes.
var ErrBadInput = errors.New("bad input")

// maxArgumentBytes bounds a call's arguments before they are decoded.
const maxArgumentBytes = 1 << 20

// input is what a client passes to a type's tool.
type input struct {
	Task         string   `json:"task"`
	Model        string   `json:"model"`
	MaxTokens    *int     `json:"max_tokens"`
	MaxTime      *string  `json:"max_time"`
	MaxToolCalls *int     `json:"max_tool_calls"`
	MaxTurns     *int     `json:"max_turns"`
	MaxCost      *float64 `json:"max_cost"`
}

const takes = "the tool takes task, and optionally model, max_tokens, max_time, max_tool_calls, max_turns and max_cost; " +
	"agents work in the server's directory"

// parseInput decodes and checks a call's arguments: a task of at most
// maxTask bytes, and positive budgets.
func parseInput(raw json.RawMessage, maxTask int) (input, agenttypes.Budget, error) {
	var in input
	if len(raw) > maxArgumentBytes {
		return in, agenttypes.Budget{}, fmt.Errorf("%w: the arguments are %d bytes, more than %d", ErrBadInput, len(raw), maxArgumentBytes)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, agenttypes.Budget{}, fmt.Errorf("%w: %v; %s", ErrBadInput, err, takes)
	}
	in.Task = strings.TrimSpace(in.Task)
	switch {
	case in.Task == "":
		return in, agenttypes.Budget{}, fmt.Errorf("%w: task is empty; say what the agent should do", ErrBadInput)
	case len(in.Task) > maxTask:
		return in, agenttypes.Budget{}, fmt.Errorf("%w: the task is %d bytes, more than %d; shorten it, or point the agent at files that hold the detail", ErrBadInput, len(in.Task), maxTask)
	}
	b, err := in.budget()
	return in, b, err
}

// budget is the budget the client asked for; a field it left out is zero.
func (in input) budget() (agenttypes.Budget, error) {
	var b agenttypes.Budget
	positive := func(name string, v *int, dst *int) error {
		if v == nil {
			return nil
		}
		if *v <= 0 {
			return fmt.Errorf("%w: %s is %d; a budget must be positive, or left out for the default", ErrBadInput, name, *v)
		}
		*dst = *v
		return nil
	}
	if err := errors.Join(
		positive("max_tokens", in.MaxTokens, &b.MaxTokens),
		positive("max_tool_calls", in.MaxToolCalls, &b.MaxToolCalls),
		positive("max_turns", in.MaxTurns, &b.MaxTurns),
	); err != nil {
		return b, err
	}
	if in.MaxTime != nil {
		d, err := time.ParseDuration(strings.TrimSpace(*in.MaxTime))
		if err != nil || d <= 0 {
			return b, fmt.Errorf("%w: max_time is %q; give a positive duration such as 90s or 5m", ErrBadInput, *in.MaxTime)
		}
		b.MaxTime = d
	}
	if in.MaxCost != nil {
		if c := *in.MaxCost; !(c > 0) || math.IsInf(c, 0) {
			return b, fmt.Errorf("%w: max_cost is %v; give a positive amount of US dollars such as 0.50", ErrBadInput, c)
		}
		b.MaxCostUSD = *in.MaxCost
	}
	return b, nil
}
