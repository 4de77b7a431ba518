"""How much disk a path occupies (what ``bosun gc`` reports as freed)."""

from __future__ import annotations

import os
from pathlib import Path


def disk_usage(path: Path) -> int:
    """Bytes a file or directory tree occupies on disk; symbolic links are not followed."""
    try:
        st = path.lstat()
    except OSError:
        return 0
    total = st.st_blocks * 512
    if not path.is_dir() or path.is_symlink():
        return total
    for dirpath, dirs, files in os.walk(path):
        for name in (*dirs, *files):
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                pass
    return total
