#!/usr/bin/env python3
"""Interrupted builds clean up after themselves (run by ./test.sh).

`stratavec build --profile starling` over a previous index at the same
target is held at each stage by the test hook STRATAVEC_TEST_PAUSE_AT
(crates/core/src/index/interrupt.rs) and stopped there by SIGINT, SIGTERM
and SIGKILL. Checked each time: the exit status (130, 143, killed), the
one-line message, no staging directory left (after SIGKILL: the next build
of the same target removes the one it left), and the previous index still
verifies (`stratavec info IDX --verify`) with its manifest unchanged. Then a
Python `stratavec.build_index` held the same way must stop within 2 s of
SIGINT with KeyboardInterrupt (skipped when `import stratavec` fails).

    tests/interrupts.py [--bin target/debug/stratavec]
"""

import argparse
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

STAGES = ["prepare", "pq", "graph", "write", "shuffle"]
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]
PAUSE_ENV = "STRATAVEC_TEST_PAUSE_AT"
failures = []
cases = {"passed": 0, "failed": 0}


def case_done(failures_before):
    """Counts a case as passed when it added no failure."""
    cases["passed" if len(failures) == failures_before else "failed"] += 1


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"FAIL: {what}", flush=True)


def staging(work):
    return sorted(p.name for p in work.iterdir() if p.name.startswith(".idx.building-"))


def lines_of(stream):
    """A queue of the stream's lines, read on a thread (pipes have no timeout)."""
    q = queue.Queue()

    def pump():
        for line in stream:
            q.put(line)
        q.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return q


def wait_for_pause(q, stage, seen, timeout=30.0):
    """Reads lines until the hook's pause line; False on EOF or timeout."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            line = q.get(timeout=max(0.01, end - time.monotonic()))
        except queue.Empty:
            break
        if line is None:
            return False
        seen.append(line)
        if f"test pause at {stage}" in line:
            return True
    return False


def start_paused(cmd, stage, case, before):
    """Starts `cmd` held at `stage` by the test hook. Returns (process, its
    stderr lines queue), or None (the case failed and is closed) when it
    never paused."""
    env = dict(os.environ, **{PAUSE_ENV: stage})
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    q = lines_of(p.stderr)
    seen = []
    if wait_for_pause(q, stage, seen):
        return p, q
    p.kill()
    p.wait()
    check(False, f"{case}: the build never paused: {''.join(seen)}{drain(q)}")
    case_done(before)
    return None


def drain(q):
    out = []
    while True:
        try:
            line = q.get(timeout=5)
        except queue.Empty:
            break
        if line is None:
            break
        out.append(line)
    return "".join(out)


def verifies(bin_, idx):
    r = subprocess.run([bin_, "info", str(idx), "--verify"], capture_output=True, text=True)
    return r.returncode == 0 and "verified" in r.stdout


def cli_cases(bin_, work, data, idx):
    manifest = (idx / "manifest.json").read_bytes()
    stale = []  # what the last SIGKILL left, for the next build to remove
    for stage in STAGES:
        for sig in SIGNALS:
            case = f"{stage}/{sig.name}"
            before = len(failures)
            started = start_paused([bin_, "build", str(data), str(idx), "--profile", "starling", "--threads", "2"],
                                   stage, case, before)
            if started is None:
                continue
            p, q = started
            mine = [s for s in staging(work) if s.split("-")[-2] == str(p.pid)]
            check(len(mine) == 1, f"{case}: its staging directory exists while paused: {mine}")
            if stale:
                check(
                    not set(stale) & set(staging(work)),
                    f"{case}: the next build removed the staging SIGKILL left ({stale})",
                )
                stale = []
            if stage == "write" and mine:
                check((work / mine[0] / "pages.bin").exists(), f"{case}: pages.bin is being written")
            t = time.monotonic()
            p.send_signal(sig)
            try:
                rc = p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = p.wait()
                check(False, f"{case}: still running 10 s after the signal")
            took = time.monotonic() - t
            err = drain(q)
            left = staging(work)
            if sig == signal.SIGKILL:
                check(rc == -9, f"{case}: killed, status {rc}")
                check(left == mine, f"{case}: SIGKILL leaves its staging directory: {left}")
                stale = left
            else:
                want = 128 + sig.value
                check(rc == want, f"{case}: exit status {rc}, expected {want}; stderr: {err}")
                check(left == [], f"{case}: staging directory left: {left}")
                msg = [l for l in err.splitlines() if "build stopped by" in l]
                check(
                    len(msg) == 1 and sig.name in msg[0] and str(idx) in msg[0],
                    f"{case}: one line naming the signal and the index, got: {err!r}",
                )
                check(took < 2.0, f"{case}: stopped {took:.2f} s after the signal")
            check((idx / "manifest.json").read_bytes() == manifest, f"{case}: manifest changed")
            check(verifies(bin_, idx), f"{case}: the previous index no longer verifies")
            print(f"  {case}: exit {rc} after {took:.2f} s, staging left: {left or 'none'}", flush=True)
            case_done(before)
    # The last SIGKILL's staging directory goes with the next (complete) build.
    before = len(failures)
    r = subprocess.run(
        [bin_, "build", str(data), str(idx), "--profile", "starling"], capture_output=True, text=True
    )
    check(r.returncode == 0, f"final build failed: {r.stderr}")
    check(staging(work) == [], f"after a complete build, staging left: {staging(work)}")
    check(verifies(bin_, idx), "the index of the final build does not verify")
    case_done(before)


PY_CHILD = """
import sys, stratavec
stratavec.build_index(sys.argv[1], sys.argv[2], profile="starling")
"""


def python_case(bin_, work, data, idx):
    probe = subprocess.run([sys.executable, "-c", "import stratavec"], capture_output=True)
    if probe.returncode != 0:
        print("  python: skipped (import stratavec failed; ./test.sh installs it into its venv)")
        return
    manifest = (idx / "manifest.json").read_bytes()
    for stage in ["graph", "write"]:
        before = len(failures)
        started = start_paused([sys.executable, "-c", PY_CHILD, str(data), str(idx)], stage, f"python/{stage}", before)
        if started is None:
            continue
        p, q = started
        t = time.monotonic()
        p.send_signal(signal.SIGINT)
        try:
            rc = p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        took = time.monotonic() - t
        err = drain(q)
        check(took < 2.0, f"python/{stage}: build_index stopped {took:.2f} s after SIGINT")
        check(rc != 0 and "KeyboardInterrupt" in err, f"python/{stage}: no KeyboardInterrupt: {err}")
        check(staging(work) == [], f"python/{stage}: staging left: {staging(work)}")
        check((idx / "manifest.json").read_bytes() == manifest, f"python/{stage}: manifest changed")
        check(verifies(bin_, idx), f"python/{stage}: the previous index no longer verifies")
        print(f"  python/{stage}: KeyboardInterrupt {took:.2f} s after SIGINT", flush=True)
        case_done(before)


def main():
    # A job a shell without job control starts in the background inherits
    # SIGINT ignored and passes that on to every child it starts: the CLI
    # would not stop at a SIGINT and Python would raise no
    # KeyboardInterrupt (every SIGINT case failed so). A handler, unlike
    # "ignored", is reset to the default in each child.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="target/debug/stratavec")
    a = ap.parse_args()
    bin_ = str(Path(a.bin).resolve())
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="stratavec-interrupts-") as tmp:
        work = Path(tmp)
        subprocess.run([bin_, "synth", str(work / "d"), "--n", "3000", "--dim", "32"],
                       check=True, stdout=subprocess.DEVNULL)
        data, idx = work / "d" / "base.fbin", work / "idx"
        subprocess.run([bin_, "build", str(data), str(idx), "--profile", "starling"],
                       check=True, stdout=subprocess.DEVNULL)
        cli_cases(bin_, work, data, idx)
        python_case(bin_, work, data, idx)
    print(f"interrupted builds took {time.monotonic() - t0:.1f} s")
    # The closing line in the plain form test logs are read by.
    print(f"interrupts: {cases['passed']} passed, {cases['failed']} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
