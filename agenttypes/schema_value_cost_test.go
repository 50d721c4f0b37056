package agenttypes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// The checks below look at what a validation returns; the time bound each
// also has is a guard far above what the check needs (milliseconds), not a
// speed goal: without it a check whose work escapes the meter would pass
// after tens of seconds with the right verdict.
const checkGuard = 2 * time.Second

// timeArgs checks args against params with checkGuard as its deadline, so
// that a check whose work escapes the meter stops rather than runs on; a
// check that needs milliseconds idle may need ten times as many under
// -race on a busy machine, and must not fail there. Call compiled first,
// so that the deadline covers the check, not the schema's compilation.
func timeArgs(t *testing.T, params, args string) (time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), checkGuard)
	defer cancel()
	start := time.Now()
	err := agenttypes.ValidateArgs(ctx, json.RawMessage(params), json.RawMessage(args))
	return time.Since(start), err
}

// stoppedOrRefused asserts that err is the deadline's or the work budget's
// refusal: the check stopped rather than running on.
func stoppedOrRefused(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	if !errorsIsDeadline(err) {
		assert.Contains(t, err.Error(), "the arguments took too long to check against the tool's parameters")
	}
}

// compiled compiles params into the cache of schemas.
func compiled(t *testing.T, params string) string {
	t.Helper()
	_ = agenttypes.ValidateArgs(t.Context(), json.RawMessage(params), json.RawMessage(`{}`))
	return params
}

func errorsIsDeadline(err error) bool {
	return err != nil && strings.Contains(err.Error(), context.DeadlineExceeded.Error())
}

func jsonList(n int, item func(i int) string) string {
	items := make([]string, n)
	for i := range items {
		items[i] = item(i)
	}
	return "[" + strings.Join(items, ",") + "]"
}

const uniqueParams = `{"type":"object","properties":{"xs":{"type":"array","uniqueItems":true}}}`

func TestUniqueItemsOfALongArrayTakesTimeLinearInItsSize(t *testing.T) {
	distinct := jsonList(6000, func(i int) string { return fmt.Sprint(1000 + i) })
	took, err := timeArgs(t, uniqueParams, `{"xs":`+distinct+`}`)
	assert.NoError(t, err)
	assert.Less(t, took, checkGuard)

	repeated := jsonList(6000, func(i int) string { return fmt.Sprint(1000 + i%5999) })
	took, err = timeArgs(t, uniqueParams, `{"xs":`+repeated+`}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "at /xs: items at 0 and 5999 are equal")
	assert.Less(t, took, checkGuard)
}

func TestUniqueItemsFindsItemsEqualAsJSONValues(t *testing.T) {
	for _, tt := range []struct {
		name, xs, msg string // msg "" for unique
	}{
		{"an integer and the same number with a fraction", `[1, 2, 1.0]`, "items at 0 and 2 are equal"},
		{"one number written two ways", `[100, 1e2]`, "items at 0 and 1 are equal"},
		{"objects with their keys in another order", `[{"a":1,"b":[true,null]}, {"b":[true,null],"a":1.00}]`, "items at 0 and 1 are equal"},
		{"arrays of equal items", `[[1,"x"], [1.0,"x"]]`, "items at 0 and 1 are equal"},
		{"a number and a string", `[1, "1"]`, ""},
		{"nearby numbers", `[1, 1.0000000000000000001, 0.1e1]`, "items at 0 and 2 are equal"},
		{"an object and an object with one more key", `[{"a":1}, {"a":1,"b":null}]`, ""},
		{"arrays in another order", `[[1,2], [2,1]]`, ""},
		{"strings that join alike", `[["ab","c"], ["a","bc"]]`, ""},
		{"zero and minus zero", `[0, -0.0]`, "items at 0 and 1 are equal"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := agenttypes.ValidateArgs(t.Context(), json.RawMessage(uniqueParams), json.RawMessage(`{"xs":`+tt.xs+`}`))
			if tt.msg == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestNumbersWithHugeExponentsAreCheckedWithoutBuildingThem(t *testing.T) {
	const params = `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"integer","minimum":0}}}}`
	huge := jsonList(50, func(int) string { return "1e999999" })
	took, err := timeArgs(t, params, `{"xs":`+huge+`}`)
	assert.NoError(t, err, "1e999999 is an integer above 0")
	assert.Less(t, took, checkGuard)

	negative := jsonList(50, func(int) string { return "-1e999999" })
	took, err = timeArgs(t, params, `{"xs":`+negative+`}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "at /xs/0: minimum: got -1e999999, want 0")
	assert.Less(t, took, checkGuard)

	tiny := jsonList(50, func(int) string { return "1e-999999" })
	took, err = timeArgs(t, params, `{"xs":`+tiny+`}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "at /xs/0: got number, want integer")
	assert.Less(t, took, checkGuard)
}

func TestALongStringAgainstALargePatternIsRefusedBeforeItIsMatched(t *testing.T) {
	const params = `{"type":"object","properties":{"xs":{"type":"array","items":{"pattern":"\\p{L}{1000}x"}}}}`
	long := strings.Repeat("a", 50_000)
	took, err := timeArgs(t, params, `{"xs":["`+long+`","`+long+`","`+long+`"]}`)
	stoppedOrRefused(t, err)
	assert.Less(t, len(err.Error()), 1000, "no 50,000-character value is quoted back")
	assert.Less(t, took, checkGuard)

	err = agenttypes.ValidateArgs(t.Context(), json.RawMessage(params), json.RawMessage(`{"xs":["`+strings.Repeat("a", 1000)+`x"]}`))
	assert.NoError(t, err, "a short value is matched as usual")
}

func TestAPatternThatCompilesTooLargeIsRefusedAtLoad(t *testing.T) {
	pattern := strings.Repeat(`\\p{L}{1000}`, 6)
	for _, schema := range []string{
		`{"type":"object","properties":{"s":{"pattern":"` + pattern + `"}}}`,
		`{"type":"object","patternProperties":{"` + pattern + `":{}}}`,
	} {
		err := agenttypes.ValidateArgs(t.Context(), json.RawMessage(schema), json.RawMessage(`{"s":"a"}`))
		require.Error(t, err, schema)
		assert.Contains(t, err.Error(), "the tool's parameters are not a usable schema")
		assert.Contains(t, err.Error(), "instructions, over the limit of 5,000; use a simpler pattern")
	}
}

// An enum of many large values: each item is looked up, not compared with
// every member in turn.
func TestEnumOfManyLargeValuesTakesTimeLinearInTheValue(t *testing.T) {
	zeros := strings.Repeat("0,", 40)
	members := jsonList(2000, func(i int) string { return "[" + zeros + fmt.Sprint(i) + "]" })
	params := compiled(t, `{"type":"object","properties":{"xs":{"type":"array","items":{"enum":`+members+`}}}}`)
	items := jsonList(1000, func(i int) string { return "[" + zeros + fmt.Sprint(1999-i) + "]" })
	took, err := timeArgs(t, params, `{"xs":`+items+`}`)
	assert.NoError(t, err)
	assert.Less(t, took, checkGuard)

	items = jsonList(1000, func(i int) string { return "[" + zeros + "-1]" })
	took, err = timeArgs(t, params, `{"xs":`+items+`}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "at /xs/0: 'enum' failed")
	assert.Less(t, took, checkGuard)
}

// Sorting an object's keys, which every subschema with keywords about
// properties does, costs work in proportion to the object's size.
func TestTheKeysOfALargeObjectAreMeteredPerSubschema(t *testing.T) {
	branches := jsonList(300, func(int) string { return `{"properties":{"a":{}}}` })
	params := compiled(t, `{"type":"object","properties":{"o":{"allOf":`+branches+`}}}`)
	keys := make([]string, 100_000)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"k%d":0`, i)
	}
	// The work budget stops it, not a deadline: with none near, a sort
	// that escaped the meter would run on for seconds and be stopped by
	// this one instead, and fail.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := agenttypes.ValidateArgs(ctx, json.RawMessage(params), json.RawMessage(`{"o":{`+strings.Join(keys, ",")+`}}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the arguments took too long to check against the tool's parameters")
}

// What unevaluatedProperties needs to know (which properties were looked
// at) is handed up a long chain of in-place subschemas without copying it
// at every level.
func TestEvaluatedPropertiesPassUpAChainOfSubschemasInTimeLinearInTheValue(t *testing.T) {
	const depth = 2000
	var defs strings.Builder
	for i := range depth {
		fmt.Fprintf(&defs, `"d%d":{"allOf":[{"$ref":"#/$defs/d%d"}]},`, i, i+1)
	}
	fmt.Fprintf(&defs, `"d%d":{"patternProperties":{"":true}}`, depth)
	params := compiled(t, `{"type":"object","properties":{"o":{"$ref":"#/$defs/d0","unevaluatedProperties":false}},"$defs":{`+defs.String()+`}}`)
	keys := make([]string, 5_000)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"k%d":0`, i)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	took, err := timeArgs(t, params, `{"o":{`+strings.Join(keys, ",")+`}}`)
	runtime.ReadMemStats(&after)
	assert.NoError(t, err)
	assert.Less(t, took, checkGuard)
	// Copied at each of the 2,000 levels, the 5,000 names would take
	// hundreds of MB; handed up, a few.
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "bytes allocated by the check")
}
