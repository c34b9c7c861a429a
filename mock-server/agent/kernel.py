# The bundled agent's Python kernel: one per execd code context. It keeps the
# context's namespace between runs, as a Jupyter kernel keeps its own. It reads
# one JSON request per line on stdin ({"code": "..."}) and writes one JSON
# event per line on fd 3: stream, result, error, and done after each run. What
# user code prints through sys.stdout and sys.stderr comes back as stream
# events; what child processes write to the kernel's own descriptors goes to
# the sandbox's container log.
import ast
import json
import os
import signal
import sys
import threading
import traceback

_ctl = os.fdopen(3, "w", buffering=1, encoding="utf-8", errors="replace", closefd=True)
_requests = os.fdopen(0, "r", encoding="utf-8", errors="replace", closefd=False)
sys.stdin = open(os.devnull, "r")
_lock = threading.Lock()
_running = False


def _emit(ev):
    line = json.dumps(ev, ensure_ascii=False, default=str)
    with _lock:
        _ctl.write(line + "\n")
        _ctl.flush()


class _Stream:
    encoding = "utf-8"
    errors = "replace"

    def __init__(self, name):
        self.name = name
        self.buf = ""

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not " + type(s).__name__)
        self.buf += s
        cut = self.buf.rfind("\n") + 1
        if len(self.buf) > 65536:
            cut = len(self.buf)
        if cut:
            text, self.buf = self.buf[:cut], self.buf[cut:]
            _emit({"t": "stream", "name": self.name, "text": text})
        return len(s)

    def flush(self):
        if self.buf:
            text, self.buf = self.buf, ""
            _emit({"t": "stream", "name": self.name, "text": text})

    def isatty(self):
        return False

    def writable(self):
        return True

    def readable(self):
        return False


_out, _err = _Stream("stdout"), _Stream("stderr")
sys.stdout, sys.stderr = _out, _err


def _interrupt(signum, frame):
    if _running:
        raise KeyboardInterrupt()


signal.signal(signal.SIGINT, _interrupt)
_ns = {"__name__": "__main__", "__builtins__": __builtins__}
_count = 0


def _data(value):
    data = {"text/plain": repr(value)}
    html = getattr(value, "_repr_html_", None)
    if callable(html):
        try:
            h = html()
            if isinstance(h, str):
                data["text/html"] = h
        except Exception:
            pass
    return data


def _run(code):
    global _running
    tree = ast.parse(code, "<cell>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    _running = True
    try:
        exec(compile(tree, "<cell>", "exec"), _ns)
        if last is not None:
            value = eval(compile(last, "<cell>", "eval"), _ns)
            if value is not None:
                _ns["_"] = value
                _out.flush()
                _err.flush()
                _emit({"t": "result", "data": _data(value), "count": _count})
    finally:
        _running = False


def _error(e):
    tb = e.__traceback__
    # Drop the kernel's own frames: the user's cell starts the traceback.
    while tb is not None and tb.tb_frame.f_code.co_filename != "<cell>":
        tb = tb.tb_next
    if isinstance(e, SyntaxError) or tb is None:
        lines = traceback.format_exception_only(type(e), e)
    else:
        lines = traceback.format_exception(type(e), e, tb)
    return {"t": "error", "ename": type(e).__name__, "evalue": str(e),
            "traceback": [l.rstrip("\n") for l in "".join(lines).splitlines()]}


while True:
    try:
        line = _requests.readline()
    except KeyboardInterrupt:
        continue
    if not line:
        break
    try:
        code = json.loads(line).get("code", "")
    except Exception:
        continue
    _count += 1
    try:
        _run(code)
    except BaseException as e:  # SystemExit and KeyboardInterrupt are a cell's error too
        try:
            _out.flush()
            _err.flush()
            _emit(_error(e))
        except BaseException:
            pass
    finally:
        try:
            _out.flush()
            _err.flush()
        except BaseException:
            pass
        _emit({"t": "done", "count": _count})
