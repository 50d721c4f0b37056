package process

import "path/filepath"

// executable returns path, or path with one of the extensions Windows
// runs, when it names a file that can run.
func executable(path string) (string, bool) {
	if filepath.Ext(path) != "" && isExecutableFile(path) {
		return path, true
	}
	for _, ext := range []string{".com", ".exe", ".bat", ".cmd"} {
		if isExecutableFile(path + ext) {
			return path + ext, true
		}
	}
	return "", false
}
