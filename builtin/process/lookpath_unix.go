//go:build !windows

package process

// executable returns path when it names a file that can run.
func executable(path string) (string, bool) {
	return path, isExecutableFile(path)
}
