package main

// flipScript runs the real contract check the first time and fails the
// second: an intermittent submission, planted.
const flipScript = `#!/bin/sh
if [ -e .flipped ]; then
  rm -f .flipped
  echo "intermittent: failing this time on purpose" >&2
  exit 1
fi
touch .flipped
exec python3 contract.py "$@"
`
