package node

// EnvRole marks a re-executed test binary as a node process.
const EnvRole = "MIGRANET_VP_NODE"

// Request is one command to a node.
type Request struct {
	Op      string         `json:"op"`
	Key     string         `json:"key,omitempty"`
	Bind    string         `json:"bind,omitempty"`
	Addr    string         `json:"addr,omitempty"`
	Dir     string         `json:"dir,omitempty"`
	Sockets []string       `json:"sockets,omitempty"`
	Ports   map[string]int `json:"ports,omitempty"`
	PKI     []byte         `json:"pki,omitempty"`
	// Root is the "launcher's" mount root that a "start-target" request's
	// Sockets are inside (kvproxy.StartTarget); empty: the first socket's directory.
	Root string `json:"root,omitempty"`
	// Stranger is the client a "tlsdial" plays (kvproxy.Strangers).
	Stranger string `json:"stranger,omitempty"`
	// Network ("tcp" or "unix") and Size of a "sink" or "send" stream.
	Network string `json:"network,omitempty"`
	Size    int64  `json:"size,omitempty"`
	// Kernel makes a "sink" or "send" stream a near-free one: spliced in the
	// kernel from a vmspliced buffer, or into /dev/null (kernel.go).
	Kernel bool `json:"kernel,omitempty"`
	// Procs is what "procs" sets GOMAXPROCS to; 0 restores the runtime's default.
	Procs int `json:"procs,omitempty"`
	// Path is where "pprof-start" writes the node's CPU profile.
	Path string `json:"path,omitempty"`
}

// Response is a node's answer.
type Response struct {
	Err        string         `json:"err,omitempty"`
	Ports      map[string]int `json:"ports,omitempty"`
	Files      []string       `json:"files,omitempty"`
	FDs        int            `json:"fds,omitempty"`
	Goroutines int            `json:"goroutines,omitempty"`
	// ProxyGoroutines are the goroutines running the migration proxy's code.
	ProxyGoroutines int `json:"proxyGoroutines,omitempty"`
	// Refusals is how many inbound connections the proxy of Key refused
	// ("refusals"); Refused how the server turned a "tlsdial" away.
	Refusals int                `json:"refusals,omitempty"`
	Refused  string             `json:"refused,omitempty"`
	Bytes    map[string]float64 `json:"bytes,omitempty"`
	// Stream results: wall-clock start (send) or end (sink) in Unix nanoseconds,
	// bytes seen, whether the sink has finished.
	Start    int64 `json:"start,omitempty"`
	End      int64 `json:"end,omitempty"`
	Received int64 `json:"received,omitempty"`
	Done     bool  `json:"done,omitempty"`
	// "cpu": the node process's CPU time so far (user + system, getrusage) in
	// nanoseconds, and its pid.
	CPU int64 `json:"cpu,omitempty"`
	PID int   `json:"pid,omitempty"`
	// Switches is the node process's context switches so far (voluntary and
	// involuntary, all threads).
	Switches int64 `json:"switches,omitempty"`
	// Procs is the node's GOMAXPROCS ("cpu", "procs").
	Procs int `json:"procs,omitempty"`
	// UserBytes ("io") is what the node process has moved through read- and
	// write-type system calls so far (rchar + wchar of /proc/self/io): bytes
	// spliced from socket to socket are not in it.
	UserBytes int64 `json:"userBytes,omitempty"`
}
