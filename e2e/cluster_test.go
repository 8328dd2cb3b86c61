package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/api/adminservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/devserver"
	"github.com/a2adelegate/delegate/internal/testutil"
)

// The cluster test's sizes.
const (
	clusterShards     = 8
	clusterLost       = 150 // lost-parcel delegations waiting for an answer from the start
	clusterSlow       = 50  // slow ones, canceled in batches
	clusterInstant    = 40  // instant ones at the start
	clusterWave       = 10  // instant ones started as each fault begins
	clusterAfter      = 5   // instant ones started once a killed process is back
	clusterAnswers    = 20  // lost-parcel delegations answered as each fault begins
	clusterCancels    = 6   // slow ones canceled as each fault begins (not while the agent is down)
	clusterHang       = 2   // "hang" ones whose sends the agent holds as it stops
	clusterCutFor     = 30 * time.Second
	clusterAgentDown  = 60 * time.Second
	clusterWaveBudget = 4 * time.Minute
)

// dlg is one delegation of the cluster test and what became of it.
type dlg struct {
	id, scenario string
	mu           sync.Mutex
	ended        time.Time
	outcome      contracts.Outcome
	err          error
	done         chan struct{}
}

func (d *dlg) endedAt() (time.Time, bool) {
	select {
	case <-d.done:
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.ended, true
	default:
		return time.Time{}, false
	}
}

// clusterRun is the state of TestCluster.
type clusterRun struct {
	t        *testing.T
	ctx      context.Context
	c        client.Client
	agentURL string
	agentDir string
	mu       sync.Mutex
	all      []*dlg
	byScen   map[string][]*dlg
	next     map[string]int // next unanswered lost-parcel / uncanceled slow
	// resolved: the delegations an operator (the test) resolved, found
	// waiting in unknown-outcome, and the fault that left them there.
	resolved map[string]string
}

// TestCluster runs delegate on a Temporal cluster of separate processes on
// loopback (make test-cluster): two frontends, two history hosts sharing
// 8 shards, a matching host and the worker service, each its own process
// (`delegate cluster-service`) with its own gRPC and membership ports, on
// PostgreSQL; two `delegate worker` processes, each through its own TCP
// load balancer that prefers one frontend and falls over to the other; the
// claims agent as its own process with its tasks in a state directory.
// While about 200 delegations wait (lost-parcel ones for an answer, slow
// ones for a cancel) and waves of instant ones run, one fault after
// another: a history host SIGKILLed and started again, a frontend
// SIGKILLed and started again, matching restarted, PostgreSQL restarted
// (fast shutdown), one worker cut from Temporal for 30 s, the agent down
// for 60 s. Every delegation must end once with its scenario's outcome,
// the agent must hold one task per delegation, none may be left running.
func TestCluster(t *testing.T) {
	if os.Getenv("DELEGATE_CLUSTER") != "1" {
		testutil.SkipGroup(t, testutil.GroupCluster, "the Temporal cluster test: make test-cluster runs it")
	}
	pgURL, pgData := os.Getenv("DELEGATE_POSTGRES_URL"), os.Getenv("DELEGATE_POSTGRES_DATA")
	if pgURL == "" || pgData == "" {
		t.Fatal("DELEGATE_POSTGRES_URL and DELEGATE_POSTGRES_DATA are not set (make test-cluster runs this through scripts/with-postgres.sh)")
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 17*time.Minute)
	defer cancel()
	dir := t.TempDir()
	logDir := dir
	if d := os.Getenv("DELEGATE_CLUSTER_LOGS"); d != "" { // keep the processes' logs
		logDir = d
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	bin, agentBin := filepath.Join(dir, "delegate"), filepath.Join(dir, "claims-agent")
	for _, b := range []struct{ out, pkg string }{{bin, "./cmd/delegate"}, {agentBin, "./cmd/claims-agent"}} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.out, "github.com/a2adelegate/delegate/"+strings.TrimPrefix(b.pkg, "./"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	url := strings.TrimSuffix(pgURL, "/temporal") + fmt.Sprintf("/cluster_%d", time.Now().UnixNano())
	if err := devserver.PrepareCluster(url, "default", contracts.SearchAttributeNames); err != nil {
		t.Fatal(err)
	}

	// The cluster: each service its own process, its own ports.
	port := func() int {
		p, err := devserver.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	type svc struct {
		name, service string
	}
	layout := []svc{{"frontend-1", "frontend"}, {"frontend-2", "frontend"}, {"history-1", "history"}, {"history-2", "history"},
		{"matching", "matching"}, {"worker-service", "worker"}}
	cfgs := map[string]devserver.ClusterService{}
	for _, s := range layout {
		cfgs[s.name] = devserver.ClusterService{Service: s.service, Postgres: url, Shards: clusterShards, GRPCPort: port(), MembershipPort: port(),
			DynamicConfig: devserver.ClusterDynamicConfig}
	}
	httpPorts := map[string]int{"frontend-1": port(), "frontend-2": port()}
	others := map[string]devserver.ClusterPorts{}
	for _, s := range []string{"frontend-1", "history-1", "matching", "worker-service"} {
		cs := cfgs[s]
		others[cs.Service] = devserver.ClusterPorts{GRPC: cs.GRPCPort, Membership: cs.MembershipPort, HTTP: httpPorts[s]}
	}
	front1, front2 := devserver.ClusterAddr(cfgs["frontend-1"].GRPCPort), devserver.ClusterAddr(cfgs["frontend-2"].GRPCPort)
	procs := map[string]*proc{}
	for _, s := range layout {
		cs := cfgs[s.name]
		cs.Frontend, cs.Others, cs.HTTPPort = front1, others, httpPorts[s.name]
		b, _ := json.Marshal(cs)
		file := filepath.Join(dir, s.name+".json")
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		procs[s.name] = newProc(t, logDir, s.name, bin, "cluster-service", "--config", file)
	}
	// The first process writes the cluster's metadata to the new store;
	// the others, started together with it, raced it ("failed to
	// initialize current cluster metadata") and exited.
	procs["frontend-1"].start()
	waitFor(t, "frontend-1 listening", 2*time.Minute, func() (bool, string) {
		return tcpUp(front1), "not yet"
	})
	for _, s := range layout[1:] {
		procs[s.name].start()
	}

	// The load balancers: worker A prefers frontend 1, worker B frontend
	// 2, the test's own client frontend 1.
	lbA, lbB, lbT := newLBProxy(t, front1, front2), newLBProxy(t, front2, front1), newLBProxy(t, front1, front2)
	var c client.Client
	waitFor(t, "the cluster's frontends answer", 2*time.Minute, func() (bool, string) {
		var err error
		if c == nil {
			dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
			c, err = client.DialContext(dctx, client.Options{HostPort: lbT.addr(), Namespace: "default", Logger: quiet{}, ConnectionOptions: devserver.LoopbackConnection()})
			dcancel()
			if err != nil {
				c = nil
				return false, err.Error()
			}
		}
		for _, ns := range []string{"default"} {
			if _, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns}); err != nil {
				return false, err.Error()
			}
		}
		return true, ""
	})
	defer c.Close()
	for _, addr := range []string{front1, front2} {
		waitFor(t, "frontend "+addr+" serves namespace default", 2*time.Minute, func() (bool, string) {
			dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
			defer dcancel()
			fc, err := client.DialContext(dctx, client.Options{HostPort: addr, Namespace: "default", Logger: quiet{}})
			if err != nil {
				return false, err.Error()
			}
			defer fc.Close()
			_, err = fc.WorkflowService().DescribeNamespace(dctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
			return err == nil, fmt.Sprint(err)
		})
	}

	agentPort := port()
	agentURL := "http://" + devserver.ClusterAddr(agentPort)
	agentDir := filepath.Join(dir, "agent-state")
	agent := newProc(t, logDir, "claims-agent", agentBin, "--addr", devserver.ClusterAddr(agentPort), "--work-delay", "200ms", "--state-dir", agentDir)
	agent.start()
	workerA := newProc(t, logDir, "worker-a", bin, "worker", "--address", lbA.addr(), "--namespace", "default", "--poll-initial", "200ms", "--poll-max", "5s")
	workerB := newProc(t, logDir, "worker-b", bin, "worker", "--address", lbB.addr(), "--namespace", "default", "--poll-initial", "200ms", "--poll-max", "5s")
	empty := testutil.EmptyFile(t)
	for _, w := range []*proc{workerA, workerB} {
		w.env = []string{"TEMPORAL_CONFIG_FILE=" + empty}
		w.start()
	}

	for _, w := range []*proc{workerA, workerB} {
		waitFor(t, w.name+" polling task queue delegate", 2*time.Minute, func() (bool, string) {
			return pollerSeen(ctx, c, w.pid(), time.Time{}), "not yet"
		})
	}

	r := &clusterRun{t: t, ctx: ctx, c: c, agentURL: agentURL, agentDir: agentDir, byScen: map[string][]*dlg{}, next: map[string]int{}, resolved: map[string]string{}}
	probe := r.launch("cluster-probe", "instant")
	r.waitEnded("the first delegation (cluster up)", 3*time.Minute, probe)
	t.Logf("cluster up in %s", time.Since(began).Round(time.Second))

	// The load: waiting lost-parcel and slow delegations, instant ones.
	var startWave []*dlg
	for i := range clusterLost {
		r.launch(fmt.Sprintf("cl-lost-%d", i), "lost-parcel")
	}
	for i := range clusterSlow {
		r.launch(fmt.Sprintf("cl-slow-%d", i), "slow")
	}
	for i := range clusterInstant {
		startWave = append(startWave, r.launch(fmt.Sprintf("cl-instant-%d", i), "instant"))
	}
	r.waitEnded("the first instant delegations", 3*time.Minute, startWave...)
	waitFor(t, "every lost-parcel delegation waiting for its answer", 4*time.Minute, func() (bool, string) {
		n, err := r.count(`A2AState = "input-required"`)
		return err == nil && n == clusterLost, fmt.Sprintf("%d waiting, %v", n, err)
	})
	inFlight := r.running()
	t.Logf("load: %d delegations in flight (%d waiting for an answer, %d slow); %d tasks at the agent", inFlight, clusterLost, clusterSlow, agentTasks(t, agentDir))

	cpu0 := map[string]time.Duration{}
	for n, p := range procs {
		cpu0[n] = p.cpu()
	}
	cpu0["worker-a"], cpu0["worker-b"] = workerA.cpu(), workerB.cpu()
	n0, window := len(r.all), time.Now()

	// The faults, one after another.
	var faults []faultResult
	var killedAt time.Time
	kill := func(name string, whileDown func()) faultResult {
		p := procs[name]
		f := r.fault("SIGKILL "+name, func() { killedAt = time.Now(); p.stop(syscall.SIGKILL, 10*time.Second) }, 0, true)
		if whileDown != nil {
			whileDown()
		}
		t0 := time.Now()
		p.start()
		f.after = r.afterWave("after "+name+" restart", t0)
		return f
	}
	faults = append(faults, kill("history-1", nil))
	faults = append(faults, kill("frontend-1", func() {
		// Worker A's frontend is gone: a poll of it after the kill came
		// through the other.
		waitFor(t, "worker-a polling through frontend-2", time.Minute, func() (bool, string) {
			return pollerSeen(ctx, c, workerA.pid(), killedAt), "not yet"
		})
	}))
	faults = append(faults, func() faultResult {
		p := procs["matching"]
		f := r.fault("restart matching", func() { p.stop(syscall.SIGTERM, 30*time.Second); p.start() }, 0, true)
		return f
	}())
	faults = append(faults, r.fault("restart PostgreSQL (fast)", func() { restartPostgres(t, pgData) }, 0, true))
	var backAfterCut time.Duration
	faults = append(faults, r.faultWithRestore("cut worker-b for 30 s", func() { lbB.cut(clusterCutFor) }, clusterCutFor, func() {
		tr := time.Now()
		waitFor(t, "worker-b polling again after the cut", 2*time.Minute, func() (bool, string) {
			return pollerSeen(ctx, c, workerB.pid(), tr), "not yet"
		})
		backAfterCut = time.Since(tr)
		t.Logf("worker-b polls again %.1f s after the cut ended", backAfterCut.Seconds())
	}, true, 0))
	faults = append(faults, func() faultResult {
		// Before the agent goes: nothing of it mid-execution but the slow
		// tasks (every wave ended; the unanswered lost-parcel ones wait in
		// INPUT_REQUIRED): an execution running at a stop is not resumed.
		// Two sends held by the agent as it stops are cut: their
		// outcome is unknown, and the task they made can only be
		// looked for once the agent is back.
		f := r.faultWithRestore("stop the claims agent for 60 s", func() { agent.stop(syscall.SIGTERM, 30*time.Second) }, clusterAgentDown, agent.start, false, clusterHang)
		return f
	}())

	// The rest: every lost-parcel answered, every slow one canceled.
	var rest []*dlg
	rest = append(rest, r.answer(clusterLost)...)
	rest = append(rest, r.cancelSlow(clusterSlow)...)
	stopOperator := r.operate("the end")
	r.waitEnded("the remaining delegations answered or canceled", clusterWaveBudget, rest...)
	stopOperator()
	r.waitEnded("every delegation", time.Minute, r.all...)

	cpu1 := map[string]time.Duration{}
	for n, p := range procs {
		cpu1[n] = p.cpu()
	}
	cpu1["worker-a"], cpu1["worker-b"] = workerA.cpu(), workerB.cpu()
	windowLen := time.Since(window)

	// What must hold.
	r.checkOutcomes()
	n := len(r.all)
	waitFor(t, "visibility: every delegation closed, once", 2*time.Minute, func() (bool, string) {
		running, err := r.count(`ExecutionStatus = "Running"`)
		if err != nil {
			return false, err.Error()
		}
		total, err := r.count(``)
		if err != nil {
			return false, err.Error()
		}
		return running == 0 && total == n, fmt.Sprintf("%d running, %d executions, want 0 and %d", running, total, n)
	})
	tasks := agentTasks(t, agentDir)
	if tasks != n {
		t.Errorf("the agent holds %d tasks, want %d (one per delegation)", tasks, n)
	}
	// And each is the task of one delegation: the remote task ids of the
	// Outcomes are the agent's, each once.
	ids, own := agentTaskIDs(t, agentDir), map[string]string{}
	for _, d := range r.all {
		id := d.outcome.RemoteTaskID
		if other, dup := own[id]; dup {
			t.Errorf("%s and %s both report remote task %q", d.id, other, id)
		}
		own[id] = d.id
		if !ids[id] {
			t.Errorf("%s reports remote task %q, which the agent does not hold", d.id, id)
		}
	}

	// What the faults did, from the histories.
	workers := map[int]string{workerA.pid(): "worker-a", workerB.pid(): "worker-b"}
	waiting := append(append([]*dlg{}, r.byScen["lost-parcel"]...), r.byScen["slow"]...)
	ws := r.histories(waiting, workers)
	fmt.Printf("the %d delegations that waited through every fault: %s\n", len(waiting), ws.faultsSeen())
	for _, f := range faults {
		fmt.Printf("fault %-32s its wave of %d: %s\n", f.name+":", f.waveSize, r.histories(f.wave, workers).faultsSeen())
	}
	everyone := r.histories(r.all, workers)
	for _, w := range []string{"worker-a", "worker-b"} {
		d := cpu1[w] - cpu0[w]
		fmt.Printf("%s ran %d workflow tasks and %d activities, of %d delegations: %.1f core-ms per delegation it ran a task of, %.2f per task\n",
			w, everyone.wfTasks[w], everyone.actTasks[w], everyone.touched[w],
			float64(d.Microseconds())/1000/float64(max(everyone.touched[w], 1)), float64(d.Microseconds())/1000/float64(max(everyone.wfTasks[w]+everyone.actTasks[w], 1)))
	}
	for _, w := range []string{"worker-a", "worker-b"} {
		if everyone.touched[w] == 0 {
			t.Errorf("%s ran no task of any delegation", w)
		}
	}
	for name, p := range procs {
		if !p.alive() {
			t.Errorf("%s is not running at the end", name)
		}
	}
	for _, p := range []*proc{workerA, workerB, agent} {
		if !p.alive() {
			t.Errorf("%s is not running at the end", p.name)
		}
	}
	for k, v := range everyone.wfTasks {
		if !strings.HasPrefix(k, "worker-") && k != "no identity" {
			t.Errorf("%d workflow tasks ran on %s, not one of the two workers", v, k)
		}
	}
	hostNames := map[string]string{}
	for _, h := range []string{"history-1", "history-2"} {
		hostNames[devserver.ClusterAddr(cfgs[h].GRPCPort)] = h
	}
	for addr, k := range r.historyHosts(front2, r.all) {
		h := hostNames[addr]
		d := cpu1[h] - cpu0[h]
		fmt.Printf("%s (%s) holds the shards of %d delegations at the end: %.1f core-ms per delegation it holds\n", h, addr, k, float64(d.Microseconds())/1000/float64(k))
	}

	// The figures.
	longest := time.Duration(0)
	for _, f := range faults {
		line := fmt.Sprintf("fault %-32s first progress %5.1f s, wave of %d ended in %5.1f s", f.name+":", f.first.Seconds(), f.waveSize, f.all.Seconds())
		if f.restoredAfter > 0 {
			line += fmt.Sprintf(" (restored after %.0f s; ", f.restoredAfter.Seconds())
			if f.firstAfterRestore >= 0 {
				line += fmt.Sprintf("first progress after restore %.1f s)", f.firstAfterRestore.Seconds())
			} else {
				line += "every one ended during the outage)"
			}
		}
		if len(f.resolved) > 0 {
			line += fmt.Sprintf("; %d waited in unknown-outcome for an operator's resend: %v", len(f.resolved), f.resolved)
		}
		if f.after.waveSize > 0 {
			line += fmt.Sprintf("; after restart: first %.1f s, all %d in %.1f s", f.after.first.Seconds(), f.after.waveSize, f.after.all.Seconds())
		}
		fmt.Println(line)
		rec := f.first
		if f.restoredAfter > 0 {
			rec = max(f.firstAfterRestore, 0)
		}
		longest = max(longest, rec, f.after.first)
	}
	carried := n - n0 + inFlight // delegations that ran in the measured window
	for _, name := range []string{"history-1", "history-2", "frontend-1", "frontend-2", "matching", "worker-service", "worker-a", "worker-b"} {
		d := cpu1[name] - cpu0[name]
		fmt.Printf("cpu %-15s %7.1f core-s over the faults, %6.1f core-ms per delegation (%d delegations ran in the %.0f s window)\n",
			name, d.Seconds(), float64(d.Milliseconds())/float64(carried), carried, windowLen.Seconds())
	}
	fmt.Printf("worker-a polled through frontend-2 while frontend-1 was down; worker-b polled again %.1f s after its 30 s cut ended\n", backAfterCut.Seconds())
	fmt.Printf("%d delegations waited in unknown-outcome for an operator (resolved: resend)\n", len(r.resolved))
	fmt.Printf("test ran %s\n", time.Since(began).Round(time.Second))
	fmt.Printf("cluster: %d delegations, %d history hosts, %d faults; each ended once, %d tasks at the agent, longest recovery %.1f s\n",
		n, 2, len(faults), tasks, longest.Seconds())
}

// faultResult is what one fault did to the delegations started or moved
// as it began.
type faultResult struct {
	name              string
	waveSize          int
	first, all        time.Duration // from the fault's start to the first and the last of its wave ending
	restoredAfter     time.Duration // for an outage: how long it lasted
	firstAfterRestore time.Duration // for an outage: from its end to the first of its wave ending
	after             waveResult    // the instant ones started once a killed process was back
	wave              []*dlg
	resolved          []string // delegations an operator resolved (resend) while its wave ran
}

type waveResult struct {
	waveSize   int
	first, all time.Duration
}

// fault injects a fault and, as it begins, starts a wave of instant
// delegations, answers some lost-parcel ones and (withCancels) cancels some
// slow ones; it returns once every one of them ended, with the times.
func (r *clusterRun) fault(name string, inject func(), outage time.Duration, withCancels bool) faultResult {
	return r.faultWithRestore(name, inject, outage, nil, withCancels, 0)
}

// faultWithRestore is fault with a restore at the end of an outage, and
// hang delegations of scenario "hang" (the agent makes the task, then holds
// its reply 40 s) started before the fault and held by the agent as it
// strikes: a fault that cuts their sends leaves their outcome unknown, and
// the look for their tasks (FindTask, asking again while the agent is
// away) must adopt them without an operator (operate stays the fallback).
func (r *clusterRun) faultWithRestore(name string, inject func(), outage time.Duration, restore func(), withCancels bool, hang int) faultResult {
	r.t.Helper()
	// Half the wave is started before the fault, which is injected once
	// the agent has a task of it: those are mid-send, or just sent, as it
	// strikes. The other half starts as it begins.
	var wave []*dlg
	var mu sync.Mutex
	var wg sync.WaitGroup
	launch := func(i int) {
		wg.Go(func() {
			d := r.launch(fmt.Sprintf("cl-wave-%s-%d", slug(name), i), "instant")
			mu.Lock()
			wave = append(wave, d)
			mu.Unlock()
		})
	}
	before := agentTasks(r.t, r.agentDir)
	var hangs []*dlg
	for i := range hang {
		hangs = append(hangs, r.launch(fmt.Sprintf("cl-hang-%s-%d", slug(name), i), "hang"))
	}
	if hang > 0 {
		waitFor(r.t, name+": the hang delegations' tasks at the agent (their replies held)", time.Minute, func() (bool, string) {
			n := agentTasks(r.t, r.agentDir)
			return n >= before+hang, fmt.Sprintf("%d tasks", n)
		})
		before += hang
	}
	for i := range clusterWave / 2 {
		launch(i)
	}
	waitFor(r.t, name+": a task of the wave at the agent", time.Minute, func() (bool, string) {
		n := agentTasks(r.t, r.agentDir)
		return n > before, fmt.Sprintf("%d tasks", n)
	})
	t0 := time.Now()
	inject()
	r.t.Logf("fault: %s (injected in %.1f s)", name, time.Since(t0).Seconds())
	for i := clusterWave / 2; i < clusterWave; i++ {
		launch(i)
	}
	answered := r.answer(clusterAnswers)
	var canceled []*dlg
	if withCancels {
		canceled = r.cancelSlow(clusterCancels)
	}
	wg.Wait()
	wave = append(append(append(wave, answered...), canceled...), hangs...)
	res := faultResult{name: name, waveSize: len(wave), wave: wave}
	var tr time.Time
	if outage > 0 {
		time.Sleep(time.Until(t0.Add(outage))) // the outage itself
		tr = time.Now()
		res.restoredAfter = tr.Sub(t0)
		if restore != nil {
			restore()
		}
	}
	stop := r.operate(name)
	r.waitEnded(name+": its wave", clusterWaveBudget, wave...)
	res.resolved = stop()
	// A hang delegation's send was cut with the agent's stop (outcome
	// unknown); the look for its task asks again until the agent is back,
	// and adopts the task it made: no operator, no second task.
	for _, d := range hangs {
		if slices.Contains(res.resolved, d.id) {
			r.t.Errorf("%s: %s waited for an operator; the look for its task should have found it once the agent was back", name, d.id)
			continue
		}
		if st, err := dclient.Get(r.c, d.id).State(r.ctx); err != nil || !slices.ContainsFunc(st.Sends, func(s contracts.SendRecord) bool { return s.Result == "adopted: found by ListTasks" }) {
			r.t.Errorf("%s: %s's sends %+v (%v), want its task adopted: found by ListTasks", name, d.id, st.Sends, err)
		}
	}
	res.first, res.all = sinceFirstLast(wave, t0)
	if !tr.IsZero() {
		res.firstAfterRestore = -1
		if _, l := sinceFirstLast(wave, tr); l >= 0 {
			res.firstAfterRestore, _ = sinceFirstLast(wave, tr)
		}
	}
	r.t.Logf("fault: %s: first progress %.1f s, %d ended in %.1f s", name, res.first.Seconds(), len(wave), res.all.Seconds())
	return res
}

// sinceFirstLast: from t0 to the first of ds that ended at or after t0,
// and to the last of ds to end.
func sinceFirstLast(ds []*dlg, t0 time.Time) (first, last time.Duration) {
	var f, l time.Time
	for _, d := range ds {
		e, _ := d.endedAt()
		if !e.Before(t0) && (f.IsZero() || e.Before(f)) {
			f = e
		}
		if e.After(l) {
			l = e
		}
	}
	if !f.IsZero() {
		first = f.Sub(t0)
	}
	return first, l.Sub(t0)
}

// operate is the operator of a delegation whose send's outcome is unknown
// (a contract's on_unknown_outcome, default ask_operator): until the
// returned stop is called, it finds the delegations waiting in
// unknown-outcome (visibility) and resolves each with a resend (package
// client's Resolve; the same messageId, so a task the agent made is not
// made twice). stop returns those it resolved.
func (r *clusterRun) operate(fault string) (stop func() []string) {
	done, finished := make(chan struct{}), make(chan struct{})
	var mine []string
	go func() {
		defer close(finished)
		for {
			resp, err := r.c.ListWorkflow(r.ctx, listRequest("default", `A2AState = "unknown-outcome" AND ExecutionStatus = "Running"`))
			if err == nil {
				for _, ex := range resp.GetExecutions() {
					id := ex.GetExecution().GetWorkflowId()
					r.mu.Lock()
					_, seen := r.resolved[id]
					r.mu.Unlock()
					if seen {
						continue
					}
					if _, err := dclient.Get(r.c, id).Resolve(r.ctx, contracts.Resolution{Action: contracts.ActionResend, ResolvedBy: "cluster-test"}); err == nil {
						r.mu.Lock()
						r.resolved[id] = fault
						r.mu.Unlock()
						mine = append(mine, id)
						r.t.Logf("%s: %s waited in unknown-outcome; resolved: resend", fault, id)
					}
				}
			}
			select {
			case <-done:
				return
			case <-r.ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return func() []string {
		close(done)
		<-finished
		return mine
	}
}

// afterWave starts instant delegations once a killed process is back and
// waits for them: what its return did (a history host takes its shards
// back).
func (r *clusterRun) afterWave(name string, t0 time.Time) waveResult {
	var wave []*dlg
	for i := range clusterAfter {
		wave = append(wave, r.launch(fmt.Sprintf("cl-after-%s-%d", slug(name), i), "instant"))
	}
	r.waitEnded(name, clusterWaveBudget, wave...)
	first, last := sinceFirstLast(wave, t0)
	return waveResult{waveSize: len(wave), first: first, all: last}
}

func slug(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// launch starts a delegation of scenario (instant, lost-parcel, slow),
// retrying through a fault (a start that did start is not started twice:
// the workflow id is the delegation's), and watches for its end.
func (r *clusterRun) launch(id, scenario string) *dlg {
	d := lostParcel(id, r.agentURL)
	d.Deadline = time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	d.Message.Data = json.RawMessage(fmt.Sprintf(`{"order_id":"A-1001","scenario":%q}`, scenario))
	x := &dlg{id: id, scenario: scenario, done: make(chan struct{})}
	for {
		_, err := dclient.Start(r.ctx, r.c, d)
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if err == nil || errors.As(err, &started) {
			break
		}
		if r.ctx.Err() != nil {
			r.t.Errorf("start %s: %v", id, err) // (not Fatal: a wave starts from goroutines)
			close(x.done)
			return x
		}
		time.Sleep(500 * time.Millisecond)
	}
	r.mu.Lock()
	r.all = append(r.all, x)
	r.byScen[scenario] = append(r.byScen[scenario], x)
	r.mu.Unlock()
	go func() {
		h := dclient.Get(r.c, id)
		for {
			out, err := h.Outcome(r.ctx)
			if err == nil || r.ctx.Err() != nil {
				x.mu.Lock()
				x.ended, x.outcome, x.err = time.Now(), out, err
				x.mu.Unlock()
				close(x.done)
				return
			}
			time.Sleep(200 * time.Millisecond) // a call cut by a fault: ask again
		}
	}()
	return x
}

// answer answers the next n lost-parcel delegations (package client's
// Answer, an Update), each retried through a fault until the workflow took
// it; it returns at once, with the delegations.
func (r *clusterRun) answer(n int) []*dlg {
	ds := r.take("lost-parcel", n)
	for _, d := range ds {
		go func() {
			h := dclient.Get(r.c, d.id)
			for r.ctx.Err() == nil {
				_, err := h.Answer(r.ctx, contracts.Answer{Text: "photo attached", AnsweredBy: "cluster-test"})
				if err == nil {
					return
				}
				// The workflow's refusals once an earlier try was taken and
				// its reply lost to the fault (workflows/input.go): the
				// Outcome (one input round) says whether it was.
				if msg := err.Error(); strings.Contains(msg, "no question is pending") || strings.Contains(msg, "already given") {
					return
				}
				select {
				case <-d.done:
					return
				case <-time.After(500 * time.Millisecond):
				}
			}
		}()
	}
	return ds
}

// cancelSlow cancels the next n slow delegations, retried through a fault.
func (r *clusterRun) cancelSlow(n int) []*dlg {
	ds := r.take("slow", n)
	for _, d := range ds {
		go func() {
			h := dclient.Get(r.c, d.id)
			for r.ctx.Err() == nil {
				if err := h.Cancel(r.ctx, "cluster test"); err == nil {
					return
				}
				select {
				case <-d.done:
					return
				case <-time.After(500 * time.Millisecond):
				}
			}
		}()
	}
	return ds
}

func (r *clusterRun) take(scenario string, n int) []*dlg {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := r.byScen[scenario]
	i := r.next[scenario]
	j := min(i+n, len(all))
	r.next[scenario] = j
	return all[i:j]
}

// waitEnded waits until every one of ds ended.
func (r *clusterRun) waitEnded(what string, d time.Duration, ds ...*dlg) {
	r.t.Helper()
	deadline := time.After(d)
	for _, x := range ds {
		select {
		case <-x.done:
		case <-deadline:
			left := 0
			for _, y := range ds {
				if _, ok := y.endedAt(); !ok {
					left++
				}
			}
			r.t.Fatalf("%s: %d of %d delegations not ended after %s (e.g. %s)", what, left, len(ds), d, x.id)
		case <-r.ctx.Done():
			r.t.Fatalf("%s: %v", what, r.ctx.Err())
		}
	}
}

func (r *clusterRun) running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, d := range r.all {
		if _, ok := d.endedAt(); !ok {
			n++
		}
	}
	return n
}

// count is the number of executions in namespace default matching query
// (visibility, PostgreSQL).
func (r *clusterRun) count(query string) (int, error) {
	resp, err := r.c.CountWorkflow(r.ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: "default", Query: query})
	if err != nil {
		return 0, err
	}
	return int(resp.GetCount()), nil
}

// checkOutcomes: each delegation ended with its scenario's outcome.
func (r *clusterRun) checkOutcomes() {
	r.t.Helper()
	bad := map[string][]string{}
	for _, d := range r.all {
		d.mu.Lock()
		o, err := d.outcome, d.err
		d.mu.Unlock()
		want, rounds := contracts.StatusCompleted, 0
		switch d.scenario {
		case "lost-parcel":
			rounds = 1
		case "slow":
			want = contracts.StatusCanceled
		}
		if err != nil || o.Status != want || o.InputRounds != rounds {
			got := fmt.Sprintf("%s/%d rounds (%v)", o.Status, o.InputRounds, err)
			bad[got] = append(bad[got], d.id)
		}
	}
	keys := make([]string, 0, len(bad))
	for k := range bad {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r.t.Errorf("%d delegations ended %s, not as their scenario expects: %v", len(bad[k]), k, bad[k][:min(len(bad[k]), 10)])
	}
}

// agentTasks counts the tasks in the claims agent's task store (one file
// per task under its state directory).
func agentTasks(t *testing.T, dir string) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "tasks", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return len(files)
}

// restartPostgres restarts the test's PostgreSQL with a fast shutdown
// (pg_ctl restart -m fast: sessions are ended, the server comes back with
// the options it ran with).
func restartPostgres(t *testing.T, data string) {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		t.Fatal("pg_ctl not found")
	}
	sort.Strings(bins)
	args := []string{bins[len(bins)-1], "-D", data, "-m", "fast", "-w", "-t", "60", "-l", filepath.Join(filepath.Dir(data), "server.log"), "restart"}
	if os.Getuid() == 0 {
		args = append([]string{"runuser", "-u", "postgres", "--"}, args...)
	}
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl restart: %v\n%s", err, out)
	}
}

// pollerSeen reports whether the worker of process pid polled task queue
// delegate (workflow tasks) after since.
func pollerSeen(ctx context.Context, c client.Client, pid int, since time.Time) bool {
	resp, err := c.DescribeTaskQueue(ctx, contracts.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return false
	}
	for _, p := range resp.GetPollers() {
		if strings.HasPrefix(p.GetIdentity(), fmt.Sprintf("%d@", pid)) && p.GetLastAccessTime().AsTime().After(since) {
			return true
		}
	}
	return false
}

func tcpUp(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// quiet drops the SDK client's log lines.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}

// histStats is what the histories of some delegations say of the faults:
// tasks that timed out or failed and were retried, and which worker ran
// which task.
type histStats struct {
	delegations                    int
	wfTaskTimeouts, wfTaskFailures int
	actTimeouts, actFailures       int
	actRetries                     int            // attempts after the first, of the activities that completed
	wfTasks, actTasks              map[string]int // by worker
	causes                         map[string]int // failures and timeouts by kind
	touched                        map[string]int // delegations a worker ran a task of
}

func (h histStats) faultsSeen() string {
	s := fmt.Sprintf("%d workflow-task timeouts, %d workflow-task failures, %d activity timeouts, %d activity failures, %d activity retries",
		h.wfTaskTimeouts, h.wfTaskFailures, h.actTimeouts, h.actFailures, h.actRetries)
	keys := make([]string, 0, len(h.causes))
	for k := range h.causes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s += fmt.Sprintf("\n    %4d × %s", h.causes[k], k)
	}
	return s
}

// histories reads the histories of ds; workers maps a worker's process id
// to its name (a task's identity is PID@host@).
func (r *clusterRun) histories(ds []*dlg, workers map[int]string) histStats {
	r.t.Helper()
	st := histStats{wfTasks: map[string]int{}, actTasks: map[string]int{}, touched: map[string]int{}, causes: map[string]int{}}
	who := func(identity string) string {
		if identity == "" {
			// A WorkflowTaskStarted event without a poller's identity:
			// seen once in this test, in a run with a workflow task that
			// timed out StartToClose (not looked into further).
			return "no identity"
		}
		pid, _, _ := strings.Cut(identity, "@")
		for p, name := range workers {
			if fmt.Sprint(p) == pid {
				return name
			}
		}
		return "other (" + identity + ")"
	}
	for _, d := range ds {
		st.delegations++
		seen := map[string]bool{}
		activity := map[int64]string{} // scheduled event id → activity type
		it := r.c.GetWorkflowHistory(r.ctx, d.id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				r.t.Fatalf("history of %s: %v", d.id, err)
			}
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				activity[ev.GetEventId()] = ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				w := who(ev.GetWorkflowTaskStartedEventAttributes().GetIdentity())
				st.wfTasks[w]++
				seen[w] = true
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				a := ev.GetActivityTaskStartedEventAttributes()
				w := who(a.GetIdentity())
				st.actTasks[w]++
				seen[w] = true
				st.actRetries += int(max(a.GetAttempt()-1, 0))
				if a.GetAttempt() > 1 {
					st.causes[fmt.Sprintf("%s completed after retries", activity[a.GetScheduledEventId()])]++
				}
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
				st.wfTaskTimeouts++
				st.causes["workflow task timed out: "+ev.GetWorkflowTaskTimedOutEventAttributes().GetTimeoutType().String()]++
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
				st.wfTaskFailures++
				st.causes["workflow task failed: "+ev.GetWorkflowTaskFailedEventAttributes().GetCause().String()]++
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
				st.actTimeouts++
				at := ev.GetActivityTaskTimedOutEventAttributes()
				st.causes[fmt.Sprintf("%s timed out: %s", activity[at.GetScheduledEventId()], at.GetFailure().GetTimeoutFailureInfo().GetTimeoutType())]++
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
				st.actFailures++
				at := ev.GetActivityTaskFailedEventAttributes()
				msg := at.GetFailure().GetMessage()
				if i := strings.IndexAny(msg, ":("); i > 0 {
					msg = msg[:i]
				}
				st.causes[fmt.Sprintf("%s failed: %s", activity[at.GetScheduledEventId()], strings.TrimSpace(msg))]++
			}
		}
		for w := range seen {
			st.touched[w]++
		}
	}
	return st
}

// historyHosts asks the cluster (admin DescribeMutableState) which
// history host holds each delegation's shard now: host address → count.
func (r *clusterRun) historyHosts(frontend string, ds []*dlg) map[string]int {
	r.t.Helper()
	conn, err := grpc.NewClient(frontend, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		r.t.Fatal(err)
	}
	defer conn.Close()
	admin := adminservice.NewAdminServiceClient(conn)
	hosts := map[string]int{}
	for _, d := range ds {
		resp, err := admin.DescribeMutableState(r.ctx, &adminservice.DescribeMutableStateRequest{Namespace: "default",
			Execution: &commonpb.WorkflowExecution{WorkflowId: d.id}})
		if err != nil {
			r.t.Errorf("DescribeMutableState %s: %v", d.id, err)
			continue
		}
		hosts[resp.GetHistoryAddr()]++
	}
	return hosts
}

// agentTaskIDs are the ids of the tasks in the claims agent's store.
func agentTaskIDs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "tasks", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var task struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(b, &task); err != nil || task.ID == "" {
			t.Fatalf("agent task %s: %v", f, err)
		}
		ids[task.ID] = true
	}
	return ids
}
