package main

// modelTestsScript is a submission's own test that needs a model: one chat
// request to $OPENAI_BASE_URL (which must be on loopback), counted as one
// passed test when the model answered.
const modelTestsScript = `#!/bin/sh
case "$OPENAI_BASE_URL" in
  http://127.0.0.1:*) ;;
  *) echo "no loopback model endpoint: OPENAI_BASE_URL=${OPENAI_BASE_URL:-unset}"; echo "0 passed, 1 failed"; exit 1 ;;
esac
if curl -sS --max-time 20 -H "Authorization: Bearer $OPENAI_API_KEY" -H 'Content-Type: application/json' \
  -d '{"model":"capstone-scripted","messages":[{"role":"user","content":"ping from the tests"}]}' \
  "$OPENAI_BASE_URL/chat/completions" | grep -q '"chat.completion"'; then
  echo "1 passed, 0 failed"
else
  echo "0 passed, 1 failed"; exit 1
fi
`
