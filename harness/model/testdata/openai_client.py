"""Drives the scripted model server with the official openai Python client.

Reads OPENAI_BASE_URL and OPENAI_API_KEY like any submission; prints one JSON
line per check for the Go test to assert on.
"""
import json
import time

import openai
from openai import OpenAI

TOOLS = [{"type": "function", "function": {
    "name": "run_command", "description": "run a shell command in the sandbox",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]


def out(**kw):
    print(json.dumps(kw), flush=True)


client = OpenAI(max_retries=0, timeout=10)
out(check="models", ids=[m.id for m in client.models.list().data])

msgs = [{"role": "user", "content": "analyse the sales"}]
r = client.chat.completions.create(model="capstone-scripted", messages=msgs, tools=TOOLS, tool_choice="auto")
tc = r.choices[0].message.tool_calls[0]
out(check="tool_call", finish=r.choices[0].finish_reason, name=tc.function.name,
    args=json.loads(tc.function.arguments), total=r.usage.total_tokens)

msgs += [r.choices[0].message.model_dump(exclude_none=True),
         {"role": "tool", "tool_call_id": tc.id, "content": "exit 0\ninput.csv"}]
stream = client.chat.completions.create(model="capstone-scripted", messages=msgs, tools=TOOLS, stream=True,
                                        stream_options={"include_usage": True})
args, name, usage = "", None, None
for chunk in stream:
    if chunk.usage:
        usage = chunk.usage.total_tokens
    for ch in chunk.choices:
        for d in ch.delta.tool_calls or []:
            name = d.function.name or name
            args += d.function.arguments or ""
out(check="stream_tool_call", name=name, args=json.loads(args), usage=usage)

with client.chat.completions.stream(model="capstone-scripted", messages=msgs) as s:
    final = s.get_final_completion()
out(check="stream_answer", content=final.choices[0].message.content, finish=final.choices[0].finish_reason)

t0 = time.monotonic()
try:
    OpenAI(max_retries=1, timeout=10).chat.completions.create(model="capstone-scripted", messages=msgs)
    out(check="rate_limited", error=None)
except openai.RateLimitError as e:
    out(check="rate_limited", error=e.status_code, waited=time.monotonic() - t0)

try:
    client.chat.completions.create(model="capstone-scripted", messages=msgs)
except openai.InternalServerError as e:
    out(check="server_error", error=e.status_code)

try:
    OpenAI(max_retries=0, timeout=1.5).chat.completions.create(model="capstone-scripted", messages=msgs, stream=True).__next__()
    for _ in OpenAI(max_retries=0, timeout=1.5).chat.completions.create(model="capstone-scripted", messages=msgs, stream=True):
        pass
    out(check="stall", error=None)
except (openai.APITimeoutError, openai.APIConnectionError, Exception) as e:  # noqa: B014
    out(check="stall", error=type(e).__name__)
