package agenttypes

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Budget holds the hard limits of one agent run. A zero field means
// "not set": Merge fills it from another budget, and the manager treats a
// field that is still zero after merging as unlimited.
type Budget struct {
	// MaxTokens caps input plus output tokens over all model calls.
	MaxTokens int `json:"max_tokens,omitempty" yaml:"max_tokens,omitempty"`
	// MaxTime caps the wall time of the whole run.
	MaxTime time.Duration `json:"max_time,omitempty" yaml:"max_time,omitempty"`
	// MaxToolCalls caps the number of tool calls executed.
	MaxToolCalls int `json:"max_tool_calls,omitempty" yaml:"max_tool_calls,omitempty"`
	// MaxTurns caps the number of model calls.
	MaxTurns int `json:"max_turns,omitempty" yaml:"max_turns,omitempty"`
	// MaxCostUSD caps what the model calls cost, in US dollars. It needs a
	// model that knows its price.
	MaxCostUSD float64 `json:"max_cost_usd,omitempty" yaml:"max_cost_usd,omitempty"`
}

// Merge returns b with every unset field taken from fallback.
func (b Budget) Merge(fallback Budget) Budget {
	if b.MaxTokens == 0 {
		b.MaxTokens = fallback.MaxTokens
	}
	if b.MaxTime == 0 {
		b.MaxTime = fallback.MaxTime
	}
	if b.MaxToolCalls == 0 {
		b.MaxToolCalls = fallback.MaxToolCalls
	}
	if b.MaxTurns == 0 {
		b.MaxTurns = fallback.MaxTurns
	}
	if b.MaxCostUSD == 0 {
		b.MaxCostUSD = fallback.MaxCostUSD
	}
	return b
}

// Within returns b held to limit: every field limit sets is at most
// limit's in the result, and a field b leaves unset takes limit's. A
// service uses it to cap what its callers ask for.
func (b Budget) Within(limit Budget) Budget {
	lower := func(v, max int) int {
		if max > 0 && (v == 0 || v > max) {
			return max
		}
		return v
	}
	b.MaxTokens = lower(b.MaxTokens, limit.MaxTokens)
	b.MaxToolCalls = lower(b.MaxToolCalls, limit.MaxToolCalls)
	b.MaxTurns = lower(b.MaxTurns, limit.MaxTurns)
	if limit.MaxTime > 0 && (b.MaxTime == 0 || b.MaxTime > limit.MaxTime) {
		b.MaxTime = limit.MaxTime
	}
	if limit.MaxCostUSD > 0 && (b.MaxCostUSD == 0 || b.MaxCostUSD > limit.MaxCostUSD) {
		b.MaxCostUSD = limit.MaxCostUSD
	}
	return b
}

// Validate reports a negative limit. Zero is allowed here because it means
// "inherit"; callers that take a budget from a user reject zero themselves.
func (b Budget) Validate() error {
	switch {
	case b.MaxTokens < 0:
		return fmt.Errorf("%w: max tokens is %d; give a positive number, or leave it unset for the default", ErrInvalid, b.MaxTokens)
	case b.MaxTime < 0:
		return fmt.Errorf("%w: max time is %s; give a positive duration such as 2m, or leave it unset for the default", ErrInvalid, b.MaxTime)
	case b.MaxToolCalls < 0:
		return fmt.Errorf("%w: max tool calls is %d; give a positive number, or leave it unset for the default", ErrInvalid, b.MaxToolCalls)
	case b.MaxTurns < 0:
		return fmt.Errorf("%w: max turns is %d; give a positive number, or leave it unset for the default", ErrInvalid, b.MaxTurns)
	case b.MaxCostUSD < 0 || math.IsNaN(b.MaxCostUSD) || math.IsInf(b.MaxCostUSD, 0):
		return fmt.Errorf("%w: max cost is %v USD; give a positive amount such as 0.50, or leave it unset for the default", ErrInvalid, b.MaxCostUSD)
	}
	return nil
}

// ParseDuration reads a duration as a definition's max_time and the
// command line's --max-time are written: 90s, 5m, 1h30m. A bare number
// is refused with the unit to add, since 5 could mean seconds or minutes.
// name is the field or flag as the user wrote it (max_time, --max-time):
// the error names it and says what to write instead. A duration of zero
// or less is returned without error, for the caller to judge.
func ParseDuration(name, s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("%s is a duration, such as 90s, 5m or 1h30m", name)
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		if f > 0 {
			// As time.ParseDuration reads it: 1e3 is 1000.
			n := strconv.FormatFloat(f, 'f', -1, 64)
			return 0, fmt.Errorf("%s %s has no unit; write %ss for seconds or %sm for minutes", name, s, n, n)
		}
		return time.Duration(min(f, 0)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a duration; write it like 90s, 5m or 1h30m", name, s)
	}
	return d, nil
}
