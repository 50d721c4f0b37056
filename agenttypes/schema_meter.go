package agenttypes

import (
	"context"
	"errors"

	"github.com/troupe-dev/troupe/agenttypes/internal/jsonschema"
)

// maxSchemaWork bounds the work of one validation. Each subschema
// evaluated costs 1 plus the depth of the value it is evaluated at, since
// the validator copies the value's location into every failure it records
// and keeps them all until it returns: a step at depth 1,000 costs a
// thousand times one at the top, in time and in memory. Work within a
// step that grows with the value's size is charged besides, before it is
// done (see jsonschema.Meter): matching a pattern costs the text's length
// times the size of the pattern's program, over 4; uniqueItems, enum and
// const cost a unit per 64 bytes of the items' canonical forms; going
// through an object's properties costs for sorting them.
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

// Step counts one subschema evaluated at the given depth of the value.
func (m *meter) Step(depth int) { m.Work(1 + depth) }

// Work counts units of work about to be done: within a step, in
// proportion to the size of the value (matching a pattern, comparing
// items, reading a long string or number). A charge that would pass the
// budget stops the check before the work is done.
func (m *meter) Work(units int) {
	over := units > maxSchemaWork-m.work
	if !over {
		m.work += units
	}
	if over || m.work >= m.nextCheck {
		m.nextCheck = m.work + meterEvery
		if err := m.ctx.Err(); err != nil {
			panic(meterStop{err}) // a run out of time is told as such, even when its work ran out too
		}
	}
	if over {
		panic(meterStop{errSchemaWork})
	}
}

// validateMetered checks v against sch within ctx and the work budget.
// stop is the context's error or errSchemaWork when the check was cut
// short; err is the validation's verdict otherwise. Every subschema the
// validator evaluates, wherever (under not, if and oneOf too), counts.
func validateMetered(ctx context.Context, sch *jsonschema.Schema, v any) (err, stop error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := &meter{}
	m.reset(ctx)
	defer func() {
		if r := recover(); r != nil {
			s, ok := r.(meterStop)
			if !ok {
				panic(r)
			}
			err, stop = nil, s.err
		}
	}()
	return sch.Validate(v, m), nil
}
