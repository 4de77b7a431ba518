"""A command worker that writes the files a test hands it: ``BOSUN_TEST_FILES`` names a JSON file of
``{path: text}`` (``null`` deletes the path), applied in the worktree (its working directory). It
prints one JSON event line, as a command worker may."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

edits = json.loads(Path(os.environ["BOSUN_TEST_FILES"]).read_text())
for rel, text in edits.items():
    target = Path(rel)
    if text is None:
        target.unlink(missing_ok=True)
        continue
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
sys.stdout.write(json.dumps({"type": "message", "text": f"wrote {len(edits)} file(s)"}) + "\n")
