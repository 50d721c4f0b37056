// Package stdsyms holds the symbols of the standard packages scripts may
// import, as yaegi's extract tool writes them: these twelve packages only,
// so that neither the program nor a script host carries the symbol tables
// of the whole standard library (os/exec and net among them) that yaegi's
// own stdlib package would bring.
package stdsyms

import "reflect"

//go:generate go run github.com/traefik/yaegi/cmd/yaegi@v0.16.1 extract -name stdsyms bytes encoding/json errors fmt math regexp sort strconv strings time unicode unicode/utf8

// Symbols maps "path/name" to the package's exported symbols.
var Symbols = map[string]map[string]reflect.Value{}
