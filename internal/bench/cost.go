package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat:
// 100 on every Linux architecture Go builds for (the kernel exports it
// as 100 whatever its HZ).
const clockTicks = 100

// procs are the processes whose CPU a measurement counts (0: none).
type procs struct{ bench, worker, agent int }

// cpuTicks reads utime + stime of pid from /proc/PID/stat, in clock
// ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields after the last ')' start with field 3 (state); utime and
	// stime are fields 14 and 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	u, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, err
	}
	s, err := strconv.ParseInt(f[12], 10, 64)
	return u + s, err
}

// cpuSample is the CPU of each process at one time (-1: unread).
type cpuSample struct{ bench, worker, agent int64 }

func (p procs) cpu() cpuSample {
	read := func(pid int) int64 {
		if pid == 0 {
			return -1
		}
		t, err := cpuTicks(pid)
		if err != nil {
			return -1
		}
		return t
	}
	return cpuSample{read(p.bench), read(p.worker), read(p.agent)}
}

// perOp is the CPU each process spent since before, per operation, in
// core-ms; nil when the bench process's could not be read (no /proc).
func (p procs) perOp(before cpuSample, ops int) *CPU {
	after := p.cpu()
	if ops <= 0 || before.bench < 0 || after.bench < 0 {
		return nil
	}
	ms := func(b, a int64) float64 {
		if b < 0 || a < 0 {
			return 0
		}
		return round2(float64(a-b) * 1000 / clockTicks / float64(ops))
	}
	c := &CPU{Bench: ms(before.bench, after.bench), Worker: ms(before.worker, after.worker), Agent: ms(before.agent, after.agent)}
	c.Total = round2(c.Bench + c.Worker + c.Agent)
	return c
}

// cpuProfile starts CPU profiles of secs seconds: of the bench process
// into DIR/<prefix>server.pprof, and of the worker process (its
// /debug/pprof on workerDebug, "" for none) into DIR/<prefix>worker.pprof,
// both over the secs seconds from now. The function it returns waits until
// both ended and records them in p.
func cpuProfile(ctx context.Context, p *CPUProfile, prefix, workerDebug string, secs int) func() {
	if prefix == "" {
		p.Seconds = secs
	} else {
		p.TrivialSeconds = secs
	}
	var errs []string
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		p.Error = err.Error()
		return func() {}
	}
	server, err := os.Create(filepath.Join(p.Dir, prefix+"server.pprof"))
	if err == nil {
		if err = pprof.StartCPUProfile(server); err != nil {
			server.Close()
			server = nil
		}
	} else {
		server = nil
	}
	if err != nil {
		errs = append(errs, prefix+"server.pprof: "+err.Error())
	}
	workerDone := make(chan error, 1)
	if workerDebug == "" {
		workerDone <- nil
	} else {
		go func() {
			workerDone <- fetchProfile(ctx, workerDebug, secs, filepath.Join(p.Dir, prefix+"worker.pprof"))
		}()
	}
	// The bench process's profile ends after secs too, measurement over
	// or not, so that both cover the same window.
	serverDone := make(chan error, 1)
	if server == nil {
		serverDone <- nil
	} else {
		time.AfterFunc(time.Duration(secs)*time.Second, func() {
			pprof.StopCPUProfile()
			serverDone <- server.Close()
		})
	}
	return func() {
		var serverErr error
		select {
		case serverErr = <-serverDone:
		case <-ctx.Done():
			// Interrupted: the timer still stops the profile.
			serverErr = ctx.Err()
		}
		if server != nil {
			if serverErr != nil {
				errs = append(errs, prefix+"server.pprof: "+serverErr.Error())
			} else {
				p.Files = append(p.Files, prefix+"server.pprof")
			}
		}
		if workerDebug == "" {
			errs = append(errs, prefix+"worker.pprof: the worker ran in the bench process ("+prefix+"server.pprof has it)")
		} else if err := <-workerDone; err != nil {
			errs = append(errs, prefix+"worker.pprof: "+err.Error())
		} else {
			p.Files = append(p.Files, prefix+"worker.pprof")
		}
		if len(errs) > 0 {
			p.Error = strings.TrimPrefix(p.Error+"; "+strings.Join(errs, "; "), "; ")
		}
	}
}

// fetchProfile writes the worker's CPU profile over secs seconds to file.
func fetchProfile(ctx context.Context, addr string, secs int, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
