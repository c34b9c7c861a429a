// Package command owns one submission command from its launch to a judged
// record: the run of the subject on an input, and the submission's other
// entry points (contract, reap, test.unit, test.integration).
//
// Launch starts a command and returns its Record. It mints the command's own
// API key (every call the command makes is attributed by that key, never by
// a time window), takes the session's fault lock as Opts.Lock says (the lock
// is an option of the launch, no longer a duty of its callers), bounds the
// command by its own timeout and by what is left of the submission's time
// (a command that finds that time spent does not start), starts (on a real
// target) the recording proxy the command talks through, and keeps what the
// command did: its result, its times, and the keyless requests its box's
// guard saw it send to the lifecycle port.
//
// The locks, from weakest to strongest:
//   - LockNone: the caller holds the fault lock for the command (a drill
//     that switches a server-wide fault on around its run).
//   - LockShared: no server-wide fault of another scenario or submission
//     meanwhile; any number of commands run at once. Every confined command
//     takes this one, the contract command included: its keyless requests
//     are attributed by its box (Record.Keyless), not by being alone.
//   - LockExclusive: the command runs alone on the server. Only a contract
//     command run with confinement off (--insecure-no-confinement, or a
//     machine that cannot confine) takes it, because no box records its
//     keyless requests: every keyless request the server saw while it ran is
//     then taken as its own. One such command that never ends holds every
//     other command of the class back until its timeout; a confined one
//     holds nobody. A contract command meant for a box whose box did not
//     run cannot be judged on its keyless requests: a harness error.
//
// What the target saw of the command's key comes from one Witness: the
// bundled server's audit (its admin API, through harness/osb), or, for a
// real target, the recording proxy (harness/observe) the command talked
// through. Both give the same Saw: the lifecycle calls made with the key
// (refused creates too), the sandboxes it created with their create
// requests, every event of those sandboxes, the keyless requests seen while
// it ran, and the calls that show its progress in a sandbox (the drills'
// "mid-run", WhenProgressed). A Record reads its Witness once (Record.Saw)
// and hands what it read to its Keep hook (the caller's evidence). Recorded
// is a Witness over what was read before (a replay, a test).
//
// What a command's sandboxes sent out is attributed by identity, never by a
// time window: the input markers planted in each run's input (InputMarkers,
// PlantInCSV) and the egress gateway's records of its own sandboxes
// (EgressRequests, WhatLeft) say what left, and from which sandbox.
//
// Record.Judge is the one judge of a command's outcome. It says whether the
// outcome can be held against the submission, applying these rules once, in
// this order, to a command that could not run or exited non-zero:
//
//  1. could not run: the harness could not start it, or it has no result
//     (a harness error: nothing of the submission was measured);
//  2. budget spent: the submission's time was used up before it started
//     (ErrBudgetSpent: not measured, nothing earned);
//  3. timed out: it ran past its limit (ErrSubjectTimedOut: never earns);
//  4. the grader broke one of its exchanges (its box's forwarder or guard
//     failed, Status.Broken in harness/confine): a harness error (a port
//     look-up's doubt in a box that scanned ports is the command's refusal,
//     never a break: confine.ScanPorts; a break about a sandbox removed on
//     purpose first, by a drill or the command's own DELETE, is not the
//     grader's; one about a sandbox the machine stopped says what the engine
//     said);
//  5. the target answered one of its creates (by its key) with a 5xx that
//     no drill injected: a harness error (the target's fault). An answer the
//     recording proxy gave itself (observe.Call.Injected: drill D3's 429 on
//     a real target) is the drill's, never the target's (EventsOf marks it
//     with a Fault, as the bundled server's audit marks an injected one);
//  6. one of its own sandboxes stopped before its TTL with no DELETE from
//     anyone before then (none sent by its key, none by a drill, none in the
//     control plane's log but the key's own after the stop), its container
//     gone or still there (the engine says when it stopped,
//     Target.SandboxFate), or it vanished (a 404) with no DELETE from anyone
//     and its container is gone: a harness error (the target's or the
//     machine's fault) whose reason carries what the engine said (an OOM
//     kill, the exit code and signal, State.Error, its events, its own
//     restart).
//
// A command that exited 0 is judged on its result by the caller's checks;
// rules 4–6 explain only a failure. A Witness that cannot be read names no
// failed create (the check that needs it reports that).
//
// The typed errors of a step's blame live here too: Harnessf (the harness's
// or the target's fault: a harness error, never the submission's), Violationf
// (a violated security property: fails every entry of its scenario) and
// Failf (the submission's failure). A fault of the grader's own machine
// (EMFILE, ENFILE, ENOMEM, ENOSPC, a fork or exec that failed) anywhere in an
// error's chain makes it a harness error too, whoever wrapped it
// (IsHarnessFault): the grader running out of descriptors, memory or disk is
// never the submission's failure. Which verdict an entry then gets is
// the decision table of harness/blame, not this package's.
//
// This package knows no godog and no step text (internal/importrules): the
// steps read a Record and phrase what it means for an entry.
package command
