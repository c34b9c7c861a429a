// Package wire holds the bundled server's wire formats that both sides use:
// the audit event schema (GET /_mock/audit and audit.jsonl), the fingerprint
// and body redaction the audit applies, and small HTTP helpers (JSON replies, a
// status-recording ResponseWriter).
//
// It is the server's public Go API: the server (mock-server, mock-server/audit)
// and the harness (harness/osb, harness/stubs, harness/observe) import it, so
// each wire type has one definition. It imports only the standard library
// (TestImportsOnlyStdlib), never the server's internals, harness/ or steps/.
package wire
