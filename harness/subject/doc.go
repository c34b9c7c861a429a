// Package subject runs a graded subject: either the bundled reference pipeline
// ("reference", i.e. the harness's own binary invoked as
// `acceptance reference --csv … --question … --out …`) or a student's command
// template such as `python3 run.py --csv {csv} --url {csv_url} --q {question} --out {out}`.
//
// Placeholders {csv}, {csv_url}, {question}, {out} and {acceptance} are replaced by values
// that are shell-quoted with POSIX single quotes, and the expanded string runs
// under `/bin/sh -c`, so a hostile question or path is always one argument and
// is never interpreted by the shell.
//
// The subject gets a clean environment: exactly OPEN_SANDBOX_DOMAIN,
// OPEN_SANDBOX_API_KEY, CAPSTONE_DATA_API_URL, CAPSTONE_DATA_API_TOKEN,
// CAPSTONE_RUN_ID, plus PATH, HOME (a fresh directory) and LANG (and, for a
// submission with a model in the loop, OPENAI_BASE_URL and OPENAI_API_KEY). It runs in
// its own process group with a wall-clock limit; on timeout the whole group is
// sent SIGTERM, then SIGKILL after a grace period, and the result says
// TimedOut (a timeout is a failure, never a pass). Whatever is left in the
// group after the subject exits is terminated the same way and reported, and
// so is a descendant that left the group with setsid(2): it is found by the
// run's own HOME in its environment (Result.Escaped). Then every entry of
// {out} that no reader may open (a FIFO, socket or device, a link to no
// regular file) is removed and listed in Result.Defused.
// Stdout and stderr stream to files with a size cap; nothing is held whole in
// memory.
//
// With Spec.Confine the command runs in a box of its own instead
// (harness/confine, confined.go): its own uid and namespaces, the host
// read-only, fixed paths inside ({csv} /input/data.csv, {out} /out, HOME
// /home/student, {acceptance} /capstone/bin/acceptance), a cgroup killed
// whole at the end, a network reaching only the ports Spec.Confine.Allow
// (or Check) names, and {out} copied out (regular files only, capped) afterwards.
// Result.Confinement says what was enforced; without a box it says "off"
// and why (Spec.Unconfined).
package subject
