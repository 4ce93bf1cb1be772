"""app.web.state.settle_heap, in a process of its own (it freezes whatever the process holds)."""

import json
import subprocess
import sys

from app.web.state import GC_THRESHOLDS
from tests.support.appserver import ROOT

PROBE = """
import gc, json
import app.main  # what the real server has imported by the time it settles
from app.web.state import settle_heap
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
