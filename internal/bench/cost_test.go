package bench

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// cpuTicks reads the process's own utime + stime, which grows with the
// CPU it spends; perOp divides by the operations and leaves out the
// processes it has no pid for.
func TestCPUTicks(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc: Linux only")
	}
	p := procs{bench: os.Getpid()}
	before := p.cpu()
	if before.bench < 0 || before.worker != -1 || before.agent != -1 {
		t.Fatalf("before: %+v", before)
	}
	// Spin about 100 ms of CPU (10 clock ticks).
	x := 0
	for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
		for i := range 1000 {
			x += i
		}
	}
	_ = x
	c := p.perOp(before, 2)
	if c == nil || c.Bench < 20 || c.Bench > 500 || c.Worker != 0 || c.Agent != 0 || c.Total != c.Bench {
		t.Errorf("per op over 2 operations after ~100 ms of CPU: %+v, want bench about 50 core-ms", c)
	}
	if c := p.perOp(cpuSample{bench: -1}, 2); c != nil {
		t.Errorf("without a reading before: %+v, want nil", c)
	}
}
