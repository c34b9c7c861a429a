package agent

import (
	"syscall"
	"time"
)

// changeTime is the inode change time (Linux has no portable birth time in Stat_t).
func changeTime(st *syscall.Stat_t) time.Time { return time.Unix(st.Ctim.Sec, st.Ctim.Nsec) }
