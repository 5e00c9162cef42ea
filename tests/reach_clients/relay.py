"""A command hook for the hook recorder (tests only): POST stdin to the URL in argv[1], print the
answer. Stands in for `console-hook` where a test pins a client's wire format without the
console."""

import sys
import urllib.request

request = urllib.request.Request(
    sys.argv[1],
    data=sys.stdin.buffer.read(),
    headers={"Content-Type": "application/json"},
    method="POST",
)
with urllib.request.urlopen(request, timeout=30) as answer:
    body = answer.read()
if body.strip() not in (b"", b"{}"):
    sys.stdout.buffer.write(body)
