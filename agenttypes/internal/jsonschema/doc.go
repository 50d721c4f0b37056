// Package jsonschema checks JSON values against JSON schemas (drafts
// 2020-12, 2019-09, 7, 6 and 4), with every subschema it evaluates
// reported to a meter the caller supplies, which may stop the check.
//
// It is troupe's own, so that nothing is compiled before it is needed: a
// general-purpose validator compiles the metaschemas of every draft when
// its package is initialised, at the start of every command. Schemas are
// checked against the rules of their draft keyword by keyword instead,
// and may refer only into the document itself. The root's $schema
// chooses the draft for the whole document; $vocabulary is not read. The
// "format" and content keywords are annotations, never assertions.
package jsonschema
