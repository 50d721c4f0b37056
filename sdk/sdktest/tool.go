package sdktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/troupe-dev/troupe/sdk"
)

// Case is one call of the tool under test.
type Case struct {
	// Name names the case in reports; "" names it by its Args.
	Name string
	// Args are the arguments, as the model would send them.
	Args string
	// Agent is the calling agent. A tool that reads files needs its Dir.
	// The suite's own calls (bad arguments and the like) are made as the
	// Agent of the first case.
	Agent sdk.Agent
	// Want are substrings the answer must hold: the text, or with WantErr
	// the error's message.
	Want []string
	// WantErr says the call must fail, for arguments the tool refuses.
	WantErr bool
	// Slow marks a call that takes time, such as one that waits for
	// something: the suite does not run it to the end but starts it,
	// cancels its context after 50ms, and wants an error soon after. The
	// call must still be running when it is cancelled.
	Slow bool
	// Deterministic says the call gives the same answer every time, so the
	// calls made at once must give the answer of the first call.
	Deterministic bool
}

func (c Case) name() string {
	if c.Name != "" {
		return c.Name
	}
	return "case " + abbrev(c.Args)
}

// How long the suite waits. Variables so that the package's own tests of
// broken tools run quickly.
var (
	// callTimeout is the deadline of each call's context; a call that
	// outlives it by cancelGrace has hung.
	callTimeout = 10 * time.Second
	// cancelGrace is how soon a call must return once its context is done.
	cancelGrace = time.Second
	// slowStart is how long a Slow call runs before it is cancelled.
	slowStart = 50 * time.Millisecond
)

// concurrency is how many goroutines call the tool at once.
const concurrency = 8

// hugeLen is the length of the huge string arguments.
const hugeLen = 1 << 20

// TestTool runs CheckTool in a test and reports each problem with
// t.Error.
func TestTool(t testing.TB, tool sdk.Tool, cases ...Case) {
	t.Helper()
	report(t, CheckTool(tool, cases...))
}

// CheckTool checks tool as the package documentation describes, running
// cases as examples of calls, and returns nil or an error that lists
// every problem found (errors.Join of one error each).
func CheckTool(tool sdk.Tool, cases ...Case) error {
	c := &toolCheck{tool: tool, cases: cases}
	c.run()
	return errors.Join(c.errs...)
}

type toolCheck struct {
	tool  sdk.Tool
	cases []Case
	name  string
	spec  sdk.ToolSpec
	props map[string]map[string]any
	req   []string
	// strict is true when the schema refuses unknown properties.
	strict bool
	schema *jsonschema.Schema

	mu   sync.Mutex
	errs []error
}

func (c *toolCheck) errorf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, fmt.Errorf("sdktest: tool %s: "+format, append([]any{c.name}, args...)...))
}

func (c *toolCheck) run() {
	if c.tool == nil {
		c.name = "<nil>"
		c.errorf("the tool is nil")
		return
	}
	spec, err := specOf(c.tool)
	if err != nil {
		c.name = fmt.Sprintf("%T", c.tool)
		c.errorf("%v", err)
		return
	}
	c.spec, c.name = spec, strconvQuote(spec.Name)
	c.checkSpec()
	c.checkCases()
	c.checkArgs()
	c.checkCancel()
	c.checkConcurrent()
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }

// specOf calls Spec, turning a panic into an error.
func specOf(tool sdk.Tool) (spec sdk.ToolSpec, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the tool's Spec panicked: %v", p)
		}
	}()
	return tool.Spec(), nil
}

var toolName = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

func (c *toolCheck) checkSpec() {
	s := c.spec
	switch {
	case s.Name == "":
		c.errorf("spec: the name is empty")
	case len(s.Name) > 64:
		c.errorf("spec: the name is %d bytes; models take at most 64", len(s.Name))
	case !toolName.MatchString(s.Name):
		c.errorf("spec: the name must be lower case letters, digits, '_' or '-', starting with a letter, with no spaces")
	}
	if strings.TrimSpace(s.Description) == "" {
		c.errorf("spec: the description is empty; say when the model should use the tool")
	}
	for range 3 {
		again, err := specOf(c.tool)
		if err != nil {
			c.errorf("%v", err)
			break
		}
		if !reflect.DeepEqual(s, again) {
			c.errorf("spec: Spec returned a different value on another call; it must return the same value every time")
			break
		}
	}
	c.checkParameters()
}

func (c *toolCheck) checkParameters() {
	raw := c.spec.Parameters
	if len(bytes.TrimSpace(raw)) == 0 {
		c.errorf(`spec: the parameters are empty; give a JSON schema such as {"type":"object","properties":{},"additionalProperties":false}`)
		return
	}
	if !json.Valid(raw) {
		c.errorf("spec: the parameters are not valid JSON")
		return
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		c.errorf("spec: the parameters must be a JSON schema object, not %s", jsonKindOf(raw))
		return
	}
	if schema["type"] != "object" {
		c.errorf(`spec: the parameters schema must have "type": "object"`)
	}
	props, ok := schema["properties"].(map[string]any)
	if !ok {
		c.errorf(`spec: the parameters schema must have "properties", an object (it may be empty)`)
	}
	c.props = map[string]map[string]any{}
	for name, p := range props {
		ps, ok := p.(map[string]any)
		if !ok {
			c.errorf("spec: the schema of parameter %q must be an object", name)
			continue
		}
		c.props[name] = ps
	}
	if r, ok := schema["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			c.errorf(`spec: "required" must be an array of parameter names`)
		}
		for _, v := range list {
			name, ok := v.(string)
			if _, known := c.props[name]; !ok || !known {
				c.errorf("spec: required parameter %v is not in properties", v)
				continue
			}
			c.req = append(c.req, name)
		}
	}
	switch ap := schema["additionalProperties"].(type) {
	case nil:
	case bool:
		c.strict = !ap
	case map[string]any:
	default:
		c.errorf(`spec: "additionalProperties" must be a boolean or a schema`)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		c.errorf("spec: the parameters are not valid JSON: %v", err)
		return
	}
	comp := jsonschema.NewCompiler()
	comp.UseLoader(noLoader{})
	comp.DefaultDraft(jsonschema.Draft2020)
	const url = "parameters.json"
	if err := comp.AddResource(url, doc); err != nil {
		c.errorf("spec: the parameters are not a JSON schema: %s", oneLine(err.Error()))
		return
	}
	sch, err := comp.Compile(url)
	if err != nil {
		c.errorf("spec: the parameters are not a JSON schema: %s", oneLine(err.Error()))
		return
	}
	c.schema = sch
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: the parameters schema may not refer to other documents", url)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// result is how one call went.
type result struct {
	text     string
	err      error
	panicked any
	nilResp  bool
	// hung is true when the call did not return in time.
	hung    bool
	elapsed time.Duration
}

// callTool calls tool in a goroutine and waits up to wait for it. A call
// that does not return in time is left running and reported as hung.
func callTool(ctx context.Context, tool sdk.Tool, agent sdk.Agent, args string, wait time.Duration) result {
	ch := make(chan result, 1)
	start := time.Now()
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{panicked: p}
			}
			r.elapsed = time.Since(start)
			ch <- r
		}()
		resp, err := tool.Call(ctx, sdk.CallRequest{Args: json.RawMessage(args), Agent: agent})
		r.err = err
		switch {
		case err != nil:
		case resp == nil:
			r.nilResp = true
		default:
			r.text = resp.Text
		}
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r
	case <-timer.C:
		return result{hung: true, elapsed: wait}
	}
}

// call makes one ordinary call under callTimeout.
func (c *toolCheck) call(agent sdk.Agent, args string) result {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return callTool(ctx, c.tool, agent, args, callTimeout+cancelGrace)
}

// sane reports a panic, a hang or a nil answer and says whether the call
// returned properly.
func (c *toolCheck) sane(what, args string, r result) bool {
	switch {
	case r.panicked != nil:
		c.errorf("%s: Call panicked with %v; return an error instead (args %s)", what, r.panicked, abbrev(args))
	case r.hung:
		c.errorf("%s: Call did not return within %v (args %s)", what, r.elapsed, abbrev(args))
	case r.nilResp:
		c.errorf("%s: Call returned a nil *CallResponse and a nil error; return a response or an error (args %s)", what, abbrev(args))
	default:
		return true
	}
	return false
}

func (c *toolCheck) agent() sdk.Agent {
	if len(c.cases) > 0 {
		return c.cases[0].Agent
	}
	return sdk.Agent{}
}

// quick are the cases the suite runs to the end.
func (c *toolCheck) quick() []Case {
	var q []Case
	for _, cs := range c.cases {
		if !cs.Slow {
			q = append(q, cs)
		}
	}
	return q
}

func (c *toolCheck) checkCases() {
	for _, cs := range c.cases {
		if !cs.WantErr && c.schema != nil {
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(cs.Args))
			if err != nil {
				c.errorf("%s: the args are not valid JSON: %v", cs.name(), err)
			} else if err := c.schema.Validate(v); err != nil {
				c.errorf("%s: the args do not match the tool's parameters schema, so the schema misleads the model: %s", cs.name(), oneLine(err.Error()))
			}
		}
		if cs.Slow {
			continue
		}
		r := c.call(cs.Agent, cs.Args)
		if !c.sane(cs.name(), cs.Args, r) {
			continue
		}
		got := r.text
		switch {
		case cs.WantErr && r.err == nil:
			c.errorf("%s: want an error, got none (text %s)", cs.name(), abbrev(r.text))
			continue
		case !cs.WantErr && r.err != nil:
			c.errorf("%s: want no error, got %v", cs.name(), r.err)
			continue
		case cs.WantErr:
			got = r.err.Error()
		}
		for _, w := range cs.Want {
			if !strings.Contains(got, w) {
				c.errorf("%s: want %q in %s", cs.name(), w, abbrev(got))
			}
		}
	}
}

// checkArgs sends arguments the tool must refuse, and arguments it may
// take or refuse but must not panic or hang on.
func (c *toolCheck) checkArgs() {
	agent := c.agent()
	base := c.baseArgs()
	probes := append(c.shapeProbes(base), c.propertyProbes(base)...)
	for _, p := range probes {
		r := c.call(agent, p.args)
		if !c.sane(p.what, p.args, r) {
			continue
		}
		if p.refuse && r.err == nil {
			c.errorf("%s: want an error, got none (args %s, text %s)", p.what, abbrev(p.args), abbrev(r.text))
		}
	}
}

// argProbe is one set of arguments checkArgs sends: what it is, and
// whether the tool must refuse it.
type argProbe struct {
	what, args string
	refuse     bool
}

// baseArgs are the arguments of the first quick case the tool should
// take, as an object: a probe changes one of them, so that it tests that
// argument alone. Empty when no such case is an object.
func (c *toolCheck) baseArgs() map[string]json.RawMessage {
	for _, cs := range c.quick() {
		if cs.WantErr {
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(cs.Args), &m) == nil && m != nil {
			return m
		}
	}
	return map[string]json.RawMessage{}
}

// withArg is base with the argument name set to v, as JSON.
func withArg(base map[string]json.RawMessage, name string, v json.RawMessage) string {
	m := make(map[string]json.RawMessage, len(base)+1)
	for k, x := range base {
		m[k] = x
	}
	m[name] = v
	b, _ := json.Marshal(m)
	return string(b)
}

// shapeProbes are arguments wrong as a whole: not JSON, not an object,
// empty (which only a tool with required arguments must refuse), and, for
// a strict schema, an argument it does not name.
func (c *toolCheck) shapeProbes(base map[string]json.RawMessage) []argProbe {
	baseJSON, _ := json.Marshal(base)
	probes := []argProbe{
		{"malformed JSON", `{`, true},
		{"malformed JSON", `{"`, true},
		{"malformed JSON", `not json`, true},
		{"malformed JSON", `{} {}`, true},
		{"malformed JSON", string(baseJSON) + ` trailing`, true},
		{"malformed JSON", string(baseJSON) + ` {}`, true},
		{"malformed JSON", string(baseJSON) + `}`, true},
		{"JSON that is not an object", `[]`, true},
		{"JSON that is not an object", `"sdktest"`, true},
		{"JSON that is not an object", `42`, true},
		{"JSON that is not an object", `true`, true},
		{"empty arguments", ``, len(c.req) > 0},
		{"an empty object", `{}`, len(c.req) > 0},
		{"null", `null`, len(c.req) > 0},
	}
	if c.strict {
		probes = append(probes, argProbe{"an unknown argument", withArg(base, "sdktest_unknown", json.RawMessage(`1`)), true})
	}
	return probes
}

// propertyProbes change one argument of base at a time, property by
// property in name order: to a value of a type the schema does not allow,
// which the tool must refuse, and to extremes of the types it does (huge
// strings and arrays, numbers at the edges), which it may take. A huge
// string goes in an unknown argument when no property is a string.
func (c *toolCheck) propertyProbes(base map[string]json.RawMessage) []argProbe {
	var probes []argProbe
	names := make([]string, 0, len(c.props))
	for name := range c.props {
		names = append(names, name)
	}
	slices.Sort(names)
	huge, _ := json.Marshal(strings.Repeat("x", hugeLen))
	hugeUsed := false
	for _, name := range names {
		types := schemaTypes(c.props[name])
		if len(types) == 0 {
			continue
		}
		if wrong := wrongValue(types); wrong != "" {
			probes = append(probes, argProbe{fmt.Sprintf("argument %q of the wrong type", name), withArg(base, name, json.RawMessage(wrong)), true})
		}
		if slices.Contains(types, "string") {
			probes = append(probes, argProbe{fmt.Sprintf("a huge argument %q", name), withArg(base, name, huge), false})
			hugeUsed = true
		}
		if slices.Contains(types, "integer") || slices.Contains(types, "number") {
			for _, n := range []string{"-1", "0", "9223372036854775807", "-9223372036854775808", "1e300"} {
				probes = append(probes, argProbe{fmt.Sprintf("argument %q = %s", name, n), withArg(base, name, json.RawMessage(n)), false})
			}
		}
		if slices.Contains(types, "array") {
			probes = append(probes, argProbe{fmt.Sprintf("a huge array %q", name), withArg(base, name, json.RawMessage("["+strings.Repeat(`"x",`, 100_000)+`"x"]`)), false})
		}
	}
	if !hugeUsed {
		probes = append(probes, argProbe{"a huge argument", withArg(base, "sdktest_huge", huge), c.strict})
	}
	return probes
}

// schemaTypes returns the JSON types a property's schema allows.
func schemaTypes(p map[string]any) []string {
	switch t := p["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// wrongValue returns JSON of a type that types does not allow, or "".
func wrongValue(types []string) string {
	for _, v := range []struct{ json, types string }{
		{`"sdktest"`, "string"},
		{`12345`, "integer number"},
		{`true`, "boolean"},
		{`{"sdktest":1}`, "object"},
		{`[1]`, "array"},
	} {
		allowed := false
		for _, t := range strings.Fields(v.types) {
			allowed = allowed || slices.Contains(types, t)
		}
		if !allowed {
			return v.json
		}
	}
	return ""
}

func (c *toolCheck) checkCancel() {
	for _, cs := range c.cases {
		if cs.Slow {
			c.checkSlow(cs)
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := callTool(ctx, c.tool, cs.Agent, cs.Args, cancelGrace)
		if r.hung {
			c.errorf("%s: with a cancelled context, Call did not return within %v", cs.name(), cancelGrace)
			continue
		}
		c.sane(cs.name()+" with a cancelled context", cs.Args, r)
	}
}

func (c *toolCheck) checkSlow(cs Case) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan result, 1)
	go func() { ch <- callTool(ctx, c.tool, cs.Agent, cs.Args, callTimeout) }()
	select {
	case r := <-ch:
		if c.sane(cs.name(), cs.Args, r) {
			c.errorf("%s: the case is Slow but Call returned within %v (error %v), before it could be cancelled; give it arguments that keep it busy, or unmark it", cs.name(), slowStart, r.err)
		}
		return
	case <-time.After(slowStart):
	}
	cancel()
	cancelled := time.Now()
	select {
	case r := <-ch:
		if !c.sane(cs.name(), cs.Args, r) {
			return
		}
		if r.err == nil {
			c.errorf("%s: cancelled while running, Call returned no error; return ctx.Err() or an error wrapping it", cs.name())
		}
		if d := time.Since(cancelled); d > cancelGrace {
			c.errorf("%s: Call returned %v after its context was cancelled; it must return within %v", cs.name(), d.Round(time.Millisecond), cancelGrace)
		}
	case <-time.After(cancelGrace):
		c.errorf("%s: Call did not return within %v of its context being cancelled; it must honour ctx", cs.name(), cancelGrace)
	}
}

// checkConcurrent calls the quick cases from several goroutines at once
// and compares the answers with a serial run.
func (c *toolCheck) checkConcurrent() {
	cases := c.quick()
	if len(cases) == 0 {
		return
	}
	first := make([]result, len(cases))
	for i, cs := range cases {
		first[i] = c.call(cs.Agent, cs.Args)
		if first[i].panicked != nil || first[i].hung || first[i].nilResp {
			return // reported already
		}
	}
	var wg sync.WaitGroup
	var once sync.Map // one report per case
	for g := range concurrency {
		wg.Go(func() {
			for k := range cases {
				i := (k + g) % len(cases)
				cs := cases[i]
				_, _ = specOf(c.tool)
				r := c.call(cs.Agent, cs.Args)
				var problem string
				switch {
				case r.panicked != nil:
					problem = fmt.Sprintf("Call panicked with %v", r.panicked)
				case r.hung:
					problem = fmt.Sprintf("Call did not return within %v", r.elapsed)
				case r.nilResp:
					problem = "Call returned a nil *CallResponse and a nil error"
				case (r.err == nil) != (first[i].err == nil):
					problem = fmt.Sprintf("the error was %v, and %v when called alone", r.err, first[i].err)
				case cs.Deterministic && r.err == nil && r.text != first[i].text:
					problem = fmt.Sprintf("the text differs from that of a call alone: %s, not %s", abbrev(r.text), abbrev(first[i].text))
				}
				if problem != "" {
					if _, dup := once.LoadOrStore(i, true); !dup {
						c.errorf("%s: called from %d goroutines at once: %s", cs.name(), concurrency, problem)
					}
				}
			}
		})
	}
	wg.Wait()
}

// abbrev quotes s, cut to 80 bytes.
func abbrev(s string) string {
	const max = 80
	if len(s) <= max {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:max], len(s))
}

func jsonKindOf(raw []byte) string {
	switch b := bytes.TrimSpace(raw); {
	case len(b) == 0:
		return "nothing"
	case b[0] == '[':
		return "an array"
	case b[0] == '"':
		return "a string"
	case b[0] == 't' || b[0] == 'f':
		return "a boolean"
	case b[0] == 'n':
		return "null"
	}
	return "a number"
}

// report hands each problem in err to t.Error.
func report(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			t.Error(e)
		}
		return
	}
	t.Error(err)
}
