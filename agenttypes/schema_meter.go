package agenttypes

import (
	"context"
	"errors"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// maxSchemaWork bounds the work of one validation. Each subschema
// evaluated costs 1 plus the depth of the value it is evaluated at, since
// the validator copies the value's location into every failure it records
// and keeps them all until it returns: a step at depth 1,000 costs a
// thousand times one at the top, in time and in memory.
//
// A unit of work takes 50 to 250 ns, so the budget is spent in a quarter
// of a second at most (see BenchmarkOutputParse). Checking an answer of a
// thousand findings of four fields against an ordinary schema costs about
// 19,000 units, in 5 ms; an answer as long as any model writes, checked
// against a schema with a few anyOf branches per item, stays well within
// the budget. Only a schema whose cost explodes with the answer's nesting
// gets near it.
const maxSchemaWork = 1_000_000

// meterEvery is how many units of work pass between looks at the context.
const meterEvery = 256

// errSchemaWork is why a validation that used up maxSchemaWork stopped.
var errSchemaWork = errors.New("too much work")

// A meter counts the work of one validation. It stops the validation, by
// panicking with a meterStop that the validation's caller recovers, when
// its context ends or its work runs out. Nothing in the validator between
// the panic and the recover holds a lock or recovers: each validation
// keeps its state on its own stack and in its own meter.
type meter struct {
	ctx       context.Context
	work      int
	nextCheck int
}

// meterStop is the panic value that ends a validation; err is the
// context's error or errSchemaWork.
type meterStop struct{ err error }

func (m *meter) reset(ctx context.Context) {
	m.ctx, m.work, m.nextCheck = ctx, 0, meterEvery
}

// step counts one subschema evaluated at the given depth of the value.
func (m *meter) step(depth int) {
	m.work += 1 + depth
	if m.work >= m.nextCheck {
		m.nextCheck = m.work + meterEvery
		if err := m.ctx.Err(); err != nil {
			panic(meterStop{err})
		}
	}
	if m.work > maxSchemaWork {
		panic(meterStop{errSchemaWork})
	}
}

// meterVocabURL names the meter's vocabulary, which has no keywords: it
// puts an extension on every schema object.
const meterVocabURL = "urn:troupe:meter"

// meterExt is the meter's extension on one compiled schema object. The
// validator runs an object's extensions after its other keywords, so every
// evaluation that goes on to subschemas counts one step once they are
// done; one that fails its first checks (type, const, enum, format) stops
// before any subschema, at a cost the step of its parent covers.
//
// There is one exception, which the extension closes. Where the validator
// needs only "valid or not" (under not and if, and in the oneOf branches
// after the first match), an object that has failed a keyword returns
// without running its extensions: a recursive schema under "not" could
// run there unmetered for ever. So the extension takes those three
// keywords over from the compiled schema and evaluates them itself, in the
// validator's ordinary mode, where every object reaches its extensions.
// What they mean does not change (the JSON Schema test suite passes the
// same); only the order of the messages does.
type meterExt struct {
	m              *meter
	not            *jsonschema.Schema
	ifs, then, els *jsonschema.Schema
	oneOf          []*jsonschema.Schema
}

func (e *meterExt) Validate(ctx *jsonschema.ValidatorContext, v any) {
	e.m.step(len(ctx.ValueLocation()))
	if e.not != nil && ctx.Validate(e.not, v, nil) == nil {
		ctx.AddError(&kind.Not{})
	}
	if len(e.oneOf) > 0 {
		matched := -1
		var errs []*jsonschema.ValidationError
		for i, sch := range e.oneOf {
			err := ctx.Validate(sch, v, nil)
			if err == nil && matched != -1 {
				ctx.AddError(&kind.OneOf{Subschemas: []int{matched, i}})
				break
			}
			if err == nil {
				matched = i
			} else if matched == -1 {
				errs = append(errs, err.(*jsonschema.ValidationError))
			}
		}
		if matched == -1 {
			ctx.AddErrors(errs, &kind.OneOf{})
		}
	}
	if e.ifs != nil {
		if ctx.Validate(e.ifs, v, nil) == nil {
			if e.then != nil {
				ctx.AddErr(ctx.Validate(e.then, v, nil))
			}
		} else if e.els != nil {
			ctx.AddErr(ctx.Validate(e.els, v, nil))
		}
	}
}

// A schemaInstance is one compilation of a schema with its own meter; one
// validation at a time uses it.
type schemaInstance struct {
	sch *jsonschema.Schema
	m   *meter
}

// compileInstance compiles doc, a schema decoded by jsonschema.UnmarshalJSON,
// with a meter on every schema object.
func compileInstance(doc any) (*schemaInstance, error) {
	in := &schemaInstance{m: &meter{}}
	type site struct {
		sch *jsonschema.Schema
		ext *meterExt
	}
	var sites []site
	comp := jsonschema.NewCompiler()
	comp.UseLoader(noLoader{})
	comp.DefaultDraft(jsonschema.Draft2020)
	comp.RegisterVocabulary(&jsonschema.Vocabulary{
		URL: meterVocabURL,
		Compile: func(cc *jsonschema.CompilerContext, _ map[string]any) (jsonschema.SchemaExt, error) {
			ext := &meterExt{m: in.m}
			sites = append(sites, site{cc.Enqueue(nil), ext}) // the schema object being compiled
			return ext, nil
		},
	})
	comp.AssertVocabs() // user vocabularies apply to drafts 2019-09 and 2020-12 only when asserted
	if err := comp.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	sch, err := comp.Compile(schemaURL)
	if err != nil {
		return nil, err
	}
	for _, s := range sites {
		if !slices.Contains(s.sch.Extensions, jsonschema.SchemaExt(s.ext)) {
			continue // not the object the extension was compiled for; leave it be
		}
		s.ext.not, s.sch.Not = s.sch.Not, nil
		s.ext.ifs, s.ext.then, s.ext.els = s.sch.If, s.sch.Then, s.sch.Else
		s.sch.If, s.sch.Then, s.sch.Else = nil, nil, nil
		s.ext.oneOf, s.sch.OneOf = s.sch.OneOf, nil
	}
	in.sch = sch
	return in, nil
}

// validate checks v against the schema within ctx and the step budget.
// stop is the context's error or errSchemaWork when the check was cut
// short; err is the validation's verdict otherwise.
func (in *schemaInstance) validate(ctx context.Context, v any) (err, stop error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	in.m.reset(ctx)
	defer func() {
		in.m.ctx = nil
		if r := recover(); r != nil {
			s, ok := r.(meterStop)
			if !ok {
				panic(r)
			}
			err, stop = nil, s.err
		}
	}()
	return in.sch.Validate(v), nil
}
