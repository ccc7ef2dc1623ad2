package sysmem

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTotalIsTheMachinesMemory compares Total with /proc/meminfo's
// MemTotal, read independently: it is that, or less where a cgroup caps
// the process.
func TestTotalIsTheMachinesMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("sysmem reads Linux's sysinfo")
	}
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Skip("no /proc/meminfo")
	}
	var kb int64
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	total := Total()
	assert.Positive(t, total)
	assert.LessOrEqual(t, total, kb<<10)
	if cgroupLimit() == 0 {
		assert.Equal(t, kb<<10, total)
	}
}
