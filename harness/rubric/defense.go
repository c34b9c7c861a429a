package rubric

// DefenseQuestion is one of the course's 15 defense questions (capstone
// stage 9, "Defense Questions"), with what a good answer covers in one line.
// They are answered to a reviewer as part of M5; harness/review walks a
// reviewer through them and report.ComputeFinal scores them.
type DefenseQuestion struct {
	N        int
	Question string
	Covers   string
}

// DefenseQuestions are the course's defense questions, in the course's order.
var DefenseQuestions = []DefenseQuestion{
	{1, "Why does creation return 202 instead of 200? What does this mean for the client?",
		"creation is asynchronous (Pending → Running); the client must poll or wait for Running and resolve the endpoint before executing"},
	{2, "Why is your TTL this value? If the analysis is going to take 40 minutes, how would you change it?",
		"TTL bounds a leaked sandbox's cost; sized from measured run time plus margin; renew during long runs rather than one huge TTL"},
	{3, "Why not use async with instead of finally: destroy()?",
		"both guarantee destroy on exceptions; the trade-off is explicit control, confirming 404 and logging the cleanup versus brevity"},
	{4, "Why should you trust the numbers in the report? Provide a chain from the numbers to the evidence.",
		"numbers trace to the command, its exit code, the input file hash and an independent host recomputation"},
	{5, "If PyPI is unreachable, how would you distinguish between 'network policy rejection' and 'package does not exist'?",
		"DNS/connect denial versus a 404 from the index, read from exit code and stderr, classified network_policy versus script/input error"},
	{6, "In which process does the Credential Vault reside? What is seen in the sandbox?",
		"outside the sandbox (egress sidecar/proxy side); the sandbox sees no real secret, only requests that get the credential injected"},
	{7, "After pausing/resuming, is your analysis state still there? Why?",
		"what survives depends on the runtime (memory and files kept on pause, not across re-creation); persist results to the host"},
	{8, "If you switch to a Kubernetes Pool, where would you need to change your code? What behaviors would change?",
		"create/endpoint resolution and capacity handling change (pool warm-up, 429/504 under pressure, different endpoint form); the rest stays"},
	{9, "What is the difference in handling between 429 and 503? Why can't they be retried in the same way?",
		"429 is capacity with Retry-After: bounded back-off honouring it; 503/5xx is the server unwell: fewer retries, report, do not hammer"},
	{10, "Which fields in your log can be used to trace a failure? How do you desensitize sensitive information?",
		"sandbox id, step, command summary, exit code, duration, truncation, request id; secrets redacted or fingerprinted, never logged"},
	{11, "If multi-tenancy support is required, what kinds of isolation and quotas would you add?",
		"per-tenant keys and namespaces, network policies, resource and concurrency quotas, separate vault bindings, audit per tenant"},
	{12, "What are the three main cost items of this system? Which one would you optimize first?",
		"sandbox lifetime (create + idle), execution time, data/model volume; optimise the largest measured one first with a reason"},
	{13, "Under what conditions will your solution fail? What will the user see when it fails?",
		"names concrete failure modes (policy, capacity, sandbox gone, timeout, bad input) and the classified error the user gets for each"},
	{14, "If the model insists on executing a command that is rejected by the policy, what will your system do?",
		"the denial is final: no retry loop, the step is classified network_policy, the budget stops it, the attempt is logged"},
	{15, "How do you prove that the sandbox has been destroyed, rather than that the client thinks it has been destroyed?",
		"GET by id returns 404 from the server (and the endpoint no longer answers); the list shows no residual sandbox"},
}
