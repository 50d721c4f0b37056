//go:build !unix

package fsroot

import "os"

// openNonBlocking: systems without O_NONBLOCK have no named pipes to block
// on in the same way; the check after opening still refuses them.
const openNonBlocking = os.O_RDONLY
