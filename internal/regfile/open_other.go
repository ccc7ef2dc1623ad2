//go:build !unix

package regfile

import "os"

// openFlags: where there is no O_NONBLOCK the check before opening stands
// alone.
const openFlags = os.O_RDONLY
