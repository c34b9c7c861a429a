package runtime

import "time"

// AgentArg is os.Args[1] of a process started as the in-sandbox agent.
const AgentArg = "__osb_agent__"

// File descriptors handed to the agent (exec.Cmd.ExtraFiles order).
const (
	AgentFDListener = 3 // the execd unix listener created by the host
	AgentFDConfig   = 4 // read end of a pipe: AgentConfig JSON, then EOF = "go"
	AgentFDEvents   = 5 // write end of a pipe: one AgentEvent JSON per line
	// agentFDSeccomp is the compiled seccomp program bwrap reads (--seccomp);
	// bwrap closes it before starting the agent.
	agentFDSeccomp = 6
)

// dockerCaps is Docker's default capability set for a container's root.
var dockerCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW", "CAP_SETGID",
	"CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL",
	"CAP_AUDIT_WRITE",
}

// AgentConfig is what the host tells the agent. It travels over a pipe (fd 4),
// never through argv, so neither it nor the sandbox environment shows in any
// host-visible command line (bwrap only gets --setenv for PATH, HOME, LANG).
// DefaultMaxUploadBytes is the largest file one upload may carry by default.
const DefaultMaxUploadBytes = 2 << 30

type AgentConfig struct {
	ID         string   `json:"id"`
	Entrypoint []string `json:"entrypoint"`
	// Env is the complete sandbox environment (base + profile + request); the
	// agent replaces its own environment with it before starting anything.
	Env map[string]string `json:"env"`
	// Root is prepended to every path a client names: "/" inside a namespaced
	// sandbox; the sandbox directory in insecure mode.
	Root string `json:"root"`
	// Workspace is the in-sandbox path relative paths are resolved against.
	Workspace string `json:"workspace"`
	// GatewaySocket is the in-sandbox path of the egress gateway socket ("" = none).
	GatewaySocket string `json:"gateway_socket,omitempty"`
	// MaxUploadBytes caps one uploaded file (0 = DefaultMaxUploadBytes); a
	// larger one is refused with 413 and nothing of it is kept.
	MaxUploadBytes   int64 `json:"max_upload_bytes,omitempty"`
	MemoryLimitBytes int64 `json:"memory_limit_bytes,omitempty"`
	// CloseDelay is how long /command keeps the SSE stream open after the
	// terminal event (real execd: 1 s, ApiGracefulShutdownTimeout).
	CloseDelay time.Duration `json:"close_delay,omitempty"`
	// CodeContexts: the image is a code interpreter's (Profile.CodeInterpreter):
	// execd's /code contexts run Python in a kernel of the agent's own.
	CodeContexts bool `json:"code_contexts,omitempty"`
	// WorkspaceFD: insecure mode with the workspace link in place
	// (workspacelink_linux.go): every process the agent starts holds the
	// sandbox's workspace directory open at this descriptor (0: none).
	WorkspaceFD int `json:"workspace_fd,omitempty"`
}

// AgentEvent is reported by the agent on fd 5.
type AgentEvent struct {
	Kind     string    `json:"kind"` // "entrypoint_exit"
	ExitCode int       `json:"exit_code"`
	Error    string    `json:"error,omitempty"`
	Time     time.Time `json:"time"`
}
