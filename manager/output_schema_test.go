package manager_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// explosiveSchema loads (its recursion counts once at load) but checks each
// level of an answer's nesting twice: 40 nested arrays with a number at
// the bottom match neither branch at any level, after 2^40 tries.
const explosiveSchema = `{"$defs": {"n": {"anyOf": [
	{"type": "array", "items": {"$ref": "#/$defs/n"}},
	{"type": "array", "items": {"$ref": "#/$defs/n"}},
	{"type": "string"}]}},
	"$ref": "#/$defs/n"}`

func TestAnAnswerTooCostlyToCheckEndsAtTheTimeBudget(t *testing.T) {
	// The deadline passes while the answer is checked; or the check runs
	// out of work first, the model is asked again, and waits out the
	// budget. Either way the run ends at its time budget, where it used to
	// check the answer for ever.
	answer := strings.Repeat("[", 40) + "1" + strings.Repeat("]", 40)
	model := scripted.New(scripted.Step{Text: answer}, scripted.Step{Block: true})
	f := newFixture(t, model, nil)
	require.NoError(t, f.reg.RegisterType(agenttypes.Type{
		Name: "nester", Description: "nests",
		Output: agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(explosiveSchema)},
	}))
	res := f.run(t, manager.SpawnRequest{Type: "nester", Budget: agenttypes.Budget{MaxTime: 200 * time.Millisecond}})
	assert.Equal(t, manager.Failed, res.State)
	assert.Equal(t, manager.ReasonBudgetTime, res.Reason, res.Err)
	assert.ErrorIs(t, res.Err, context.DeadlineExceeded)
	assert.NotErrorIs(t, res.Err, manager.ErrBadOutput)
}
