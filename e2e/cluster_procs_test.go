package e2e

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is a process of the cluster test that may be killed and started
// again (a Temporal service, a delegate worker, the claims agent); its CPU
// time is summed over its lives.
type proc struct {
	t    *testing.T
	name string
	bin  string
	args []string
	env  []string
	logf *os.File

	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{}
	spent time.Duration // CPU of the lives that ended
	lives int
}

func newProc(t *testing.T, dir, name, bin string, args ...string) *proc {
	logf, err := os.Create(dir + "/" + name + ".log")
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, name: name, bin: bin, args: args, logf: logf}
	t.Cleanup(func() {
		p.stop(syscall.SIGTERM, 30*time.Second)
		_ = logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("--- %s log (tail) ---\n%s", name, tail(string(b), 2500))
		}
	})
	return p
}

// start starts a new life of the process.
func (p *proc) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = p.logf, p.logf
	// A test binary that dies (a timeout's panic) takes its processes
	// with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(p.logf, "=== start %s (life %d) at %s\n", p.name, p.lives+1, time.Now().Format(time.TimeOnly))
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("%s: %v", p.name, err)
	}
	p.cmd, p.lives = cmd, p.lives+1
	done := make(chan struct{})
	p.done = done
	go func() {
		_ = cmd.Wait()
		p.mu.Lock()
		if st := cmd.ProcessState; st != nil {
			p.spent += st.UserTime() + st.SystemTime()
		}
		p.mu.Unlock()
		close(done)
	}()
}

// stop sends sig and waits (at most wait, then SIGKILL) for the process to
// end; a process not running is left alone.
func (p *proc) stop(sig syscall.Signal, wait time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-done
	}
}

// pid is the current life's process id.
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// alive reports whether the current life has not ended.
func (p *proc) alive() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// cpu is the CPU time (user + system) of every life so far: the ended
// ones from their rusage, the running one from /proc/PID/stat (utime +
// stime, clock ticks of 10 ms).
func (p *proc) cpu() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	total := p.spent
	if p.cmd != nil && p.cmd.ProcessState == nil {
		total += procCPU(p.cmd.Process.Pid)
	}
	return total
}

func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	// Fields after the command name (which may hold spaces) in parentheses.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64) // field 14
	st, _ := strconv.ParseInt(f[12], 10, 64) // field 15
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// lbProxy is a TCP load balancer in front of the frontends, as deployments
// put one (an L4 balancer, or a DNS name over every frontend): a new
// connection goes to the first backend that accepts it. cut drops every
// connection and refuses new ones for a while (a worker cut off from
// Temporal).
type lbProxy struct {
	ln       net.Listener
	backends []string

	mu       sync.Mutex
	conns    map[net.Conn]bool
	cutUntil time.Time
}

func newLBProxy(t *testing.T, backends ...string) *lbProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lbProxy{ln: ln, backends: backends, conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() { _ = ln.Close(); p.dropAll() })
	return p
}

func (p *lbProxy) addr() string { return p.ln.Addr().String() }

func (p *lbProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := time.Now().Before(p.cutUntil)
		p.mu.Unlock()
		if cut {
			_ = c.Close()
			continue
		}
		go p.handle(c)
	}
}

func (p *lbProxy) handle(c net.Conn) {
	var up net.Conn
	for _, b := range p.backends {
		var err error
		if up, err = net.DialTimeout("tcp", b, time.Second); err == nil {
			break
		}
	}
	if up == nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if time.Now().Before(p.cutUntil) {
		p.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	var once sync.Once
	end := func() {
		once.Do(func() {
			_ = c.Close()
			_ = up.Close()
			p.mu.Lock()
			delete(p.conns, c)
			delete(p.conns, up)
			p.mu.Unlock()
		})
	}
	go func() { _, _ = io.Copy(up, c); end() }()
	go func() { _, _ = io.Copy(c, up); end() }()
}

// cut drops every connection and refuses new ones for d.
func (p *lbProxy) cut(d time.Duration) {
	p.mu.Lock()
	p.cutUntil = time.Now().Add(d)
	p.mu.Unlock()
	p.dropAll()
}

func (p *lbProxy) dropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}
