// Package model is the scripted model server: a stand-in for the model in an
// agentic submission's loop, on loopback, speaking the OpenAI-compatible
// chat-completions API that agents and their libraries use:
//
//	POST /v1/chat/completions   (also /chat/completions)
//	GET  /v1/models, /v1/models/{id}
//
// Requests carry "Authorization: Bearer <OPENAI_API_KEY>" (else 401
// invalid_api_key). Answers are chat.completion objects (assistant content or
// tool_calls with finish_reason "stop" / "tool_calls", and usage), or, with
// "stream": true, server-sent chat.completion.chunk events ending in
// "data: [DONE]" (a usage chunk first when stream_options.include_usage).
// Errors use the API's {"error": {message, type, param, code}} body.
//
// What the model does is data: a Script (YAML or JSON, see Script and the
// bundled scripts/*.yaml), one Turn per request — a tool call, a final answer
// or a fault (an HTTP status with Retry-After, or a stall) — with repeat
// counts ("forever"), a final answer once the turns run out and a hard cap on
// requests (an agent that never stops is refused with 400 "turn_limit").
// Ids and "created" stamps derive from the script's seed and the request
// number, so the same script answers byte for byte the same.
//
// Every request is recorded (Exchange): the body (the model context) with
// each planted secret replaced by [REDACTED:label], the secrets found and
// where, the submission's environment variables present with their values (a
// full environment dump at EnvDumpThreshold), the tools offered, the tool
// results the agent reported back, and what the model answered. Dialogue
// renders that for people.
//
// The harness imports this package; the reference pipeline never does (it is
// a client, as any submission).
package model
