package script

import (
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/traefik/yaegi/interp"

	"github.com/troupe-dev/troupe/builtin/script/internal/stdsyms"
)

// Allowed lists the packages a script may import, besides "troupe".
var Allowed = []string{
	"bytes", "encoding/json", "errors", "fmt", "math", "regexp", "sort",
	"strconv", "strings", "time", "unicode", "unicode/utf8",
}

// HostPackage is the import path of the host API.
const HostPackage = "troupe"

// denied are the symbols of allowed packages that scripts do not get:
// those that reach the process's standard streams (in the script host
// they carry the protocol), the file system, or the clock's goroutines.
var denied = map[string][]string{
	"fmt": {"Print", "Printf", "Println", "Scan", "Scanf", "Scanln"},
	"time": {"Sleep", "After", "AfterFunc", "Tick", "NewTicker", "NewTimer",
		"LoadLocation", "LoadLocationFromTZData", "Local"},
}

var (
	symbolsOnce sync.Once
	symbols     interp.Exports
)

// allowedSymbols is the standard library's symbols (only Allowed are
// extracted, see stdsyms), without
// the denied symbols, and with every package variable given as a copy a
// script cannot assign to (time.Local, say, is the host's). Variables that
// point at shared data (unicode's range tables) are left out, since a copy
// of the pointer would still reach it.
func allowedSymbols() interp.Exports {
	symbolsOnce.Do(func() {
		symbols = interp.Exports{}
		for _, path := range Allowed {
			key := path + "/" + pathBase(path)
			src, ok := stdsyms.Load()[key]
			if !ok {
				panic("script: yaegi has no symbols for " + key)
			}
			out := make(map[string]reflect.Value, len(src))
			for name, v := range src {
				if slices.Contains(denied[path], name) {
					continue
				}
				if v.CanSet() {
					c, ok := readOnly(v)
					if !ok {
						continue
					}
					v = c
				}
				out[name] = v
			}
			symbols[key] = out
		}
	})
	return symbols
}

func pathBase(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// readOnly returns a copy of a package variable that cannot be assigned
// to, or false when the variable points at data a copy would share.
func readOnly(v reflect.Value) (reflect.Value, bool) {
	switch v.Kind() {
	case reflect.Interface:
		// An interface (an error value, say) is kept as its own type: a
		// field of a struct that is not addressable cannot be set.
		holder := reflect.New(reflect.StructOf([]reflect.StructField{{Name: "V", Type: v.Type()}})).Elem()
		holder.Field(0).Set(v)
		return reflect.ValueOf(holder.Interface()).Field(0), true
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return reflect.Value{}, false
	}
	return reflect.ValueOf(v.Interface()), true
}
