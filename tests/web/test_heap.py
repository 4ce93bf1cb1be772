"""app/web/heap.py, in processes of their own: settling freezes whatever the process holds, and a
trim hands back what the allocator keeps."""

import json
import subprocess
import sys

from app.web.heap import GC_THRESHOLDS
from tests.support.appserver import ROOT

PROBE = """
import gc, json
import app.main  # what the real server has imported by the time it settles
from app.web.heap import settle_heap
settle_heap()
print(json.dumps({"thresholds": gc.get_threshold(), "frozen": gc.get_freeze_count(), "oldest": len(gc.get_objects(generation=2))}))
"""


def test_settling_freezes_the_start_up_heap_and_raises_the_thresholds() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert tuple(report["thresholds"]) == GC_THRESHOLDS
    assert report["frozen"] > 10_000  # the modules' objects, out of every later collection
    assert report["oldest"] < 1_000  # a full collection has next to nothing left to walk


# A burst of messages of tens of KiB handled in a worker thread, one in ten of them still held: what
# the allocator keeps of the rest, Python cannot give back by itself.
FRAGMENTS = """
import asyncio, json, threading
from app.web import heap
trim = heap.HeapTrim(every_s=0)
kept = []
def burst():
    made = [bytes(64 * 1024).replace(b"\\0", b"x") for _ in range(3000)]
    kept.extend(made[::10])
asyncio.run(trim.look())  # nothing past start-up yet: nothing to do
quiet = heap.resident_bytes()
thread = threading.Thread(target=burst)
thread.start()
thread.join()
before = heap.resident_bytes()
asyncio.run(trim.look())
print(json.dumps({"baseline": trim.baseline, "quiet": quiet, "before": before, "after": heap.resident_bytes()}))
"""


def test_memory_the_allocator_keeps_after_a_burst_goes_back() -> None:
    done = subprocess.run(
        [sys.executable, "-c", FRAGMENTS], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["quiet"] - report["baseline"] < 8 << 20
    assert report["before"] - report["baseline"] > 150 << 20  # 190 MiB, freed by Python, kept by malloc
    assert report["after"] - report["baseline"] < 40 << 20  # handed back: what is held is a tenth of it
